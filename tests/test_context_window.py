"""The window Straylight asks for, the reply reserve, and overflow named with its fix."""

from __future__ import annotations

import json
from collections.abc import Iterator

import ollama
import pytest

from agent.context_window import (
    DEFAULT_WINDOW_CAP,
    FALLBACK_WINDOW,
    choose_window,
    detect_filled_window,
    detect_truncation,
    model_context_length,
    modelfile_num_ctx,
    parse_context_error,
    reply_reserve,
)
from tests.support.ollama_standin import ModelSpec, OllamaStandIn, context_error

MODEL = "llama3.2"


def show(context_length: int | None = None, parameters: str = "") -> dict[str, object]:
    info: dict[str, object] = {"general.architecture": "llama"}
    if context_length:
        info["llama.context_length"] = context_length
    return {"model_info": info, "parameters": parameters}


def test_the_setting_wins_but_never_beyond_the_models_maximum() -> None:
    assert choose_window(8192, show(131_072)).window == 8192
    assert choose_window(8192, show(131_072)).source == "setting"
    over = choose_window(65_536, show(32_768))
    assert (over.window, over.source) == (32_768, "model max")


def test_without_a_setting_the_models_maximum_is_capped() -> None:
    big = choose_window(None, show(131_072))
    assert (big.window, big.source, big.model_max) == (DEFAULT_WINDOW_CAP, "cap", 131_072)
    assert big.describe() == "16,384 tokens (capped; the model holds 131,072)"
    small = choose_window(None, show(8192))
    assert (small.window, small.source) == (8192, "model max")
    assert choose_window(0, None).window == FALLBACK_WINDOW


def test_a_modelfile_num_ctx_is_the_models_own_choice() -> None:
    answer = show(131_072, 'num_ctx                        65536\nstop "<|eot_id|>"')
    assert modelfile_num_ctx(answer) == 65_536
    assert choose_window(None, answer).window == 65_536
    assert choose_window(None, answer).source == "modelfile"
    assert modelfile_num_ctx(show(8192, "temperature 0.7")) is None


def test_reply_reserve_scales_with_the_window() -> None:
    assert reply_reserve(4096) == 512
    assert reply_reserve(16_384) == 2048
    assert reply_reserve(131_072) == 4096
    assert reply_reserve(1024) == 512
    assert reply_reserve(8192, num_predict=300) == 300
    assert reply_reserve(4096, num_predict=100_000) == 2048


def test_the_stand_ins_400_is_named_with_the_fix() -> None:
    # As Ollama passes llama-server's JSON through, and as an OpenAI-style client wraps it.
    raw = context_error(8889, 4096)
    nested = json.dumps({"error": {"message": raw, "type": "invalid_request_error"}})
    for text in (raw, nested, f"400 {raw}"):
        overflow = parse_context_error(text, model_max=131_072)
        assert overflow is not None, text
        assert (overflow.kind, overflow.prompt_tokens, overflow.window) == ("rejected", 8889, 4096)
        assert overflow.message == (
            "The prompt (8,889 tokens) is larger than the model's window (4,096): "
            "raise num_ctx (the model holds up to 131,072) or shorten longterm.md"
        )


def test_older_context_errors_are_named_too() -> None:
    old = (
        '{"error":{"code":500,"message":"the request exceeds the available context size. try '
        'increasing the context size or enable context shift","type":"exceed_context_size_error",'
        '"n_prompt_tokens":1407,"n_ctx":256}}'
    )
    overflow = parse_context_error(old)
    assert overflow is not None and (overflow.prompt_tokens, overflow.window) == (1407, 256)
    embed = parse_context_error("the input length exceeds the context length", window=2048)
    assert embed is not None and "(2,048 tokens)" in embed.message
    assert parse_context_error('model "x" not found, try pulling it first') is None


def test_truncation_is_told_apart_from_a_cache_hit() -> None:
    # Ollama cut: far fewer tokens than estimated, window nearly full.
    cut = detect_truncation(6000, 4000, 4096, model_max=131_072)
    assert cut is not None and cut.kind == "truncated"
    assert "raise num_ctx (the model holds up to 131,072)" in cut.message
    # Ollama drops the prompt's front: with a short history that is the instructions and the
    # recalled memory, so the line must not promise that only old messages went.
    assert "oldest messages" not in cut.message
    assert "instructions and recalled memory" in cut.message
    # The runner's last resort leaves about half the window.
    assert detect_truncation(9000, 2051, 4096) is not None
    # A KV-cache reuse: only the new suffix was evaluated, the window had room.
    assert detect_truncation(6000, 400, 16_384) is None
    # Within the estimator's error, or no count at all: nothing to say.
    assert detect_truncation(3000, 2800, 4096) is None
    assert detect_truncation(3000, None, 4096) is None


def test_a_count_far_above_the_estimate_that_fills_the_window_is_a_possible_cut() -> None:
    # nearly full and above the estimate: the budget never sends that much
    assert detect_filled_window(2400, 3899, 4096) is not None
    filled = detect_filled_window(2400, 3899, 4096)
    assert filled is not None and "may have cut" in filled.message and "3,899" in filled.message
    # far above but half the window: nothing said (a first turn has nothing to cut)
    assert detect_filled_window(1100, 2500, 4096) is None
    # what the budget sends, a count within its error, a small prompt: nothing to say
    assert detect_filled_window(3000, 3200, 4096) is None
    assert detect_filled_window(1100, 1900, 4096) is None
    assert detect_filled_window(3800, 3900, 4096) is None
    assert detect_filled_window(2400, None, 4096) is None


# ---------------------------------------------------------- /api/show of the stand-in


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    specs = {"tuned": ModelSpec(num_ctx=65_536)}
    with OllamaStandIn(models=(MODEL, "qwen3:8b", "tuned"), port=0, specs=specs) as server:
        yield server


@pytest.mark.asyncio
async def test_the_window_comes_from_the_real_clients_show_answer(
    client: ollama.AsyncClient,
) -> None:
    llama = await client.show(MODEL)
    assert model_context_length(llama) == 131_072
    assert choose_window(None, llama).window == DEFAULT_WINDOW_CAP
    qwen = await client.show("qwen3:8b")
    assert model_context_length(qwen) == 40_960
    tuned = await client.show("tuned")
    assert choose_window(None, tuned).window == 65_536
    assert choose_window(None, tuned).source == "modelfile"
