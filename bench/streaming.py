"""Streaming throughput of a 4,000-token reply into the chat log, and that no text is dropped.

The real `StraylightApp` runs headless (`run_test(size=(120, 40))`) against an
`OllamaStandIn` (token_delay=0, one NDJSON chunk per token) served from a child process,
as Ollama would be. A message is typed into the ChatInput and sent with Enter. The clock
runs from the first token reaching the assistant `ChatMessage` to its `finish()` returning
(the final full Markdown render included); tokens/s = tokens / that time.

No dropped text: the message's text, the Markdown body's streamed source (before the final
render), the body's final source and the daily log's last assistant message must all equal
the scripted reply exactly.

For comparison, the same reply through the turn engine + gateway alone (no UI), and
through the gateway alone.

    python -m bench.streaming [--runs 3] [--tokens 4000] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._common import (
    JsonDict,
    StandInProcess,
    format_machine,
    machine_info,
    write_json,
)

TARGET_TOKENS_PER_SECOND = 1000.0
DEFAULT_TOKENS = 4000
PROMPT = "Walk me through how the streaming chat log renders a long Markdown reply."
RUN_TIMEOUT_SECONDS = 300.0


class StreamingError(RuntimeError):
    """A run could not be measured."""


# ---------------------------------------------------------------- the scripted reply

_WORD_TEXT = (
    "the stream renders each token into the chat log while the model is still thinking "
    "so a long reply should never stall typing or drop a single character of text and "
    "every block of Markdown is parsed again only from its last stable line onwards"
)
_WORDS = tuple(_WORD_TEXT.split())
_CODE_NAMES = ("render()", "append(fragment)", "MarkdownStream", "ChatMessage.finish", "--home")


def _tokens(text: str) -> list[str]:
    from tests.support.ollama_standin import split_tokens

    return split_tokens(text)


def _sentence(seed: int, words: int) -> str:
    picked = [_WORDS[(seed * 7 + i * 3) % len(_WORDS)] for i in range(words)]
    if seed % 3 == 0:
        picked[words // 2] = f"`{_CODE_NAMES[seed % len(_CODE_NAMES)]}`"
    if seed % 4 == 1:
        picked[1] = f"**{picked[1]}**"
    sentence = " ".join(picked)
    return sentence[0].upper() + sentence[1:] + "."


def _paragraph(seed: int) -> str:
    return " ".join(_sentence(seed + i, 9 + (seed + i) % 7) for i in range(5)) + "\n\n"


def _blocks(section: int) -> list[str]:
    code = (
        "```python\n"
        f"async def stream_reply_{section}(chat_log, gateway, model):\n"
        "    reply = ChatMessage('assistant', model=model)\n"
        "    await chat_log.mount(reply)\n"
        "    async for delta in gateway.stream_chat(model, messages):\n"
        "        await reply.append(delta.text)  # one token at a time\n"
        "    await reply.finish(status='complete')\n"
        "```\n\n"
    )
    items = "".join(
        f"- {_sentence(section * 5 + i, 6 + i % 4)} See `{_CODE_NAMES[i % len(_CODE_NAMES)]}`.\n"
        for i in range(5)
    )
    return [
        f"## Part {section}: how the reply gets to the screen\n\n",
        _paragraph(section * 11),
        items + "\n",
        _paragraph(section * 11 + 5),
        code,
        _paragraph(section * 11 + 9),
    ]


def build_reply(token_count: int = DEFAULT_TOKENS) -> tuple[str, list[str]]:
    """A Markdown reply of exactly `token_count` word-sized tokens that join back to it:
    headings, paragraphs with inline code and bold, bullet lists, fenced code blocks."""
    tokens: list[str] = []
    section = 1
    while True:
        for block in _blocks(section):
            block_tokens = _tokens(block)
            if len(tokens) + len(block_tokens) > token_count - 1:
                break
            tokens += block_tokens
        else:
            section += 1
            continue
        break
    remaining = token_count - len(tokens)  # >= 1: a closing paragraph fills the rest
    tokens += [_WORDS[i % len(_WORDS)] + " " for i in range(remaining - 1)] + ["done."]
    if len(tokens) != token_count:
        raise StreamingError(f"could not build a {token_count}-token reply")
    return "".join(tokens), tokens


# ---------------------------------------------------------------- instrumentation


@dataclass
class Probe:
    """Times and counts recorded by the wrappers around ChatMessage and Markdown."""

    first_append: float | None = None
    last_append: float | None = None
    appends: int = 0
    append_times: list[float] = field(default_factory=list)
    finish_start: float | None = None
    finish_end: float | None = None
    renders: int = 0
    streamed_source: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.contextmanager
def instrumented(probe: Probe) -> Iterator[None]:
    """Wrap `ChatMessage.append/finish` and `Markdown.append` (class-wide, restored after).

    The `finish` wrapper stops the stream itself first, exactly as `finish` would, so the
    body's source can be read after streaming and before the final full render.
    """
    from textual.widgets import Markdown

    from tui.widgets.chat_message import ChatMessage

    original_append = ChatMessage.append
    original_finish = ChatMessage.finish
    original_markdown_append = Markdown.append

    async def append(self: ChatMessage, fragment: str) -> None:
        if self.role == "assistant":
            now = time.perf_counter()
            if probe.first_append is None:
                probe.first_append = now
            probe.last_append = now
            probe.appends += 1
        await original_append(self, fragment)
        if self.role == "assistant":
            probe.append_times.append(time.perf_counter())

    async def finish(self: ChatMessage, text: str | None = None, status: str = "complete") -> None:
        if self.role != "assistant":
            await original_finish(self, text, status)
            return
        probe.finish_start = time.perf_counter()
        await self.stop_stream()
        probe.streamed_source = self.body.source
        await original_finish(self, text, status)
        probe.finish_end = time.perf_counter()
        probe.done.set()

    def markdown_append(self: Markdown, markdown: str) -> Any:
        probe.renders += 1
        return original_markdown_append(self, markdown)

    ChatMessage.append = append  # type: ignore[method-assign]
    ChatMessage.finish = finish  # type: ignore[method-assign]
    Markdown.append = markdown_append  # type: ignore[method-assign]
    try:
        yield
    finally:
        ChatMessage.append = original_append  # type: ignore[method-assign]
        ChatMessage.finish = original_finish  # type: ignore[method-assign]
        Markdown.append = original_markdown_append  # type: ignore[method-assign]


# ---------------------------------------------------------------- runs


@dataclass
class UiRun:
    tokens: int
    appends: int
    renders: int
    stream_ms: float
    final_render_ms: float
    total_ms: float
    enter_to_first_token_ms: float
    tokens_per_second: float
    quarter_tokens_per_second: list[float]
    text_ok: bool
    streamed_ok: bool
    body_ok: bool
    log_ok: bool
    problems: list[str]

    @property
    def intact(self) -> bool:
        return self.text_ok and self.streamed_ok and self.body_ok and self.log_ok


@dataclass
class HeadlessRun:
    layer: str
    tokens: int
    deltas: int
    total_ms: float
    tokens_per_second: float
    text_ok: bool


def _settings(home: Path, host: str) -> Any:
    from agent.settings import load_settings

    flags = {"home": str(home), "ollama_host": host}
    # environ={} and a config path that does not exist: nothing of the user's leaks in.
    return load_settings(flags=flags, environ={}, config_path=home / "absent.toml").settings


def _last_logged_assistant(home: Path) -> Any:
    from store.daily_log import DailyLog

    daily_log = DailyLog(home / "conversation")
    messages = [m for day in daily_log.days() for m in daily_log.read_day(day)]
    assistant = [m for m in messages if m.role == "assistant"]
    return assistant[-1] if assistant else None


def _quarter_rates(probe: Probe) -> list[float]:
    """Tokens/s over each quarter of the stream (appends returned): does it slow down?"""
    times = [probe.first_append or 0.0, *probe.append_times]
    count = len(probe.append_times)
    rates: list[float] = []
    for quarter in range(4):
        start, end = count * quarter // 4, count * (quarter + 1) // 4
        span = times[end] - times[start]
        rates.append((end - start) / span if span > 0 else 0.0)
    return rates


def _diff(label: str, got: str | None, want: str) -> str | None:
    if got == want:
        return None
    if got is None:
        return f"{label}: missing"
    at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    at = min(len(got), len(want)) if at is None else at
    return f"{label}: {len(got)} chars vs {len(want)} expected, first difference at {at}"


async def ui_run(text: str, tokens: list[str], tmp: Path) -> UiRun:
    from tui.app import StraylightApp
    from tui.logging_setup import setup_file_logging
    from tui.widgets.chat_input import ChatInput
    from tui.widgets.chat_message import ChatMessage

    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    with StandInProcess([(text, tokens)], spec_dir=tmp) as standin:
        settings = _settings(home, standin.host)
        setup_file_logging(settings.log_file)  # as the real start does
        app = StraylightApp(settings)
        probe = Probe()
        with instrumented(probe):
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                chat_input = app.query_one("#input", ChatInput)
                chat_input.focus()
                chat_input.text = PROMPT
                await pilot.pause()
                entered = time.perf_counter()
                await pilot.press("enter")
                try:
                    await asyncio.wait_for(probe.done.wait(), RUN_TIMEOUT_SECONDS)
                except TimeoutError:
                    raise StreamingError(
                        f"the reply did not finish within {RUN_TIMEOUT_SECONDS:.0f} s"
                        f" ({probe.appends} tokens arrived)"
                    ) from None
                await pilot.pause()
                replies = [m for m in app.query(ChatMessage) if m.role == "assistant"]
                if not replies:
                    raise StreamingError("no assistant message in the chat log")
                reply = replies[-1]
                status, shown, body = reply.status, reply.text, reply.body.source
    logged = _last_logged_assistant(home)
    assert probe.first_append is not None and probe.finish_end is not None
    assert probe.last_append is not None and probe.finish_start is not None
    total = probe.finish_end - probe.first_append
    problems = [
        p
        for p in (
            None if status == "complete" else f"status is {status!r}, not 'complete'",
            _diff("ChatMessage.text", shown, text),
            _diff("streamed Markdown source", probe.streamed_source, text),
            _diff("final Markdown source", body, text),
            _diff("daily log", logged.content if logged else None, text),
            None
            if logged is None or logged.status == "complete"
            else f"daily log status {logged.status}",
        )
        if p
    ]
    return UiRun(
        tokens=len(tokens),
        appends=probe.appends,
        renders=probe.renders,
        stream_ms=(probe.finish_start - probe.first_append) * 1000,
        final_render_ms=(probe.finish_end - probe.finish_start) * 1000,
        total_ms=total * 1000,
        enter_to_first_token_ms=(probe.first_append - entered) * 1000,
        tokens_per_second=len(tokens) / total,
        quarter_tokens_per_second=_quarter_rates(probe),
        text_ok=shown == text and status == "complete",
        streamed_ok=probe.streamed_source == text,
        body_ok=body == text,
        log_ok=logged is not None and logged.content == text and logged.status == "complete",
        problems=problems,
    )


async def engine_run(text: str, tokens: list[str], tmp: Path) -> HeadlessRun:
    """Gateway + turn engine (user message and reply logged), no UI."""
    from agent.ollama_gateway import OllamaGateway
    from agent.turn import ReplyDelta, ReplyFailed, ReplyFinished, TurnEngine, new_conversation_id

    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    with StandInProcess([(text, tokens)], spec_dir=tmp) as standin:
        settings = _settings(home, standin.host)
        gateway = OllamaGateway(standin.host)
        engine = TurnEngine(settings, gateway)
        first: float | None = None
        end: float | None = None
        deltas = 0
        final = ""
        try:
            async for event in engine.run(
                PROMPT,
                conversation_id=new_conversation_id(settings.clock),
                model=settings.ollama.model,
            ):
                if isinstance(event, ReplyDelta):
                    if first is None:
                        first = time.perf_counter()
                    deltas += 1
                elif isinstance(event, ReplyFinished):
                    end = time.perf_counter()
                    final = event.text
                elif isinstance(event, ReplyFailed):
                    raise StreamingError(f"engine run failed: {event.error}")
        finally:
            await gateway.aclose()
    logged = _last_logged_assistant(home)
    intact = final == text and logged is not None and logged.content == text
    return _headless("engine + gateway", tokens, deltas, first, end, intact)


async def gateway_run(text: str, tokens: list[str], tmp: Path) -> HeadlessRun:
    """The gateway's stream alone: HTTP, NDJSON parsing, the ollama client."""
    from agent.gateway_values import ChatDelta
    from agent.ollama_gateway import OllamaGateway

    with StandInProcess([(text, tokens)], spec_dir=tmp) as standin:
        gateway = OllamaGateway(standin.host)
        first: float | None = None
        end: float | None = None
        parts: list[str] = []
        try:
            async for event in gateway.stream_chat(
                "llama3.2", [{"role": "user", "content": PROMPT}]
            ):
                if isinstance(event, ChatDelta):
                    if first is None:
                        first = time.perf_counter()
                    parts.append(event.text)
                else:
                    end = time.perf_counter()
        finally:
            await gateway.aclose()
    return _headless("gateway only", tokens, len(parts), first, end, "".join(parts) == text)


def _headless(
    layer: str, tokens: list[str], deltas: int, first: float | None, end: float | None, ok: bool
) -> HeadlessRun:
    if first is None or end is None:
        raise StreamingError(f"{layer}: the reply did not stream to the end")
    total = end - first
    return HeadlessRun(layer, len(tokens), deltas, total * 1000, len(tokens) / total, ok)


# ---------------------------------------------------------------- report


def _median_of(runs: list[Any], name: str) -> float:
    return statistics.median(getattr(run, name) for run in runs)


def run(runs: int, token_count: int) -> JsonDict:
    text, tokens = build_reply(token_count)
    with tempfile.TemporaryDirectory(prefix="straylight-bench-streaming-") as raw_tmp:
        tmp = Path(raw_tmp)
        ui = [asyncio.run(ui_run(text, tokens, tmp)) for _ in range(runs)]
        engine = [asyncio.run(engine_run(text, tokens, tmp)) for _ in range(runs)]
        gateway = [asyncio.run(gateway_run(text, tokens, tmp)) for _ in range(runs)]
    return {
        "benchmark": "streaming",
        "target_tokens_per_second": TARGET_TOKENS_PER_SECOND,
        "reply": {
            "tokens": len(tokens),
            "chars": len(text),
            "lines": text.count("\n") + 1,
            "headings": text.count("\n## ") + text.startswith("## "),
            "code_blocks": text.count("```") // 2,
        },
        "ui_runs": [asdict(r) | {"intact": r.intact} for r in ui],
        "ui_tokens_per_second_median": _median_of(ui, "tokens_per_second"),
        "ui_intact": all(r.intact for r in ui),
        "engine_runs": [asdict(r) for r in engine],
        "engine_tokens_per_second_median": _median_of(engine, "tokens_per_second"),
        "gateway_runs": [asdict(r) for r in gateway],
        "gateway_tokens_per_second_median": _median_of(gateway, "tokens_per_second"),
        "headless_intact": all(r.text_ok for r in engine + gateway),
    }


def print_report(result: JsonDict) -> None:
    reply = result["reply"]
    print(
        f"== streaming a {reply['tokens']}-token reply (target >= "
        f"{result['target_tokens_per_second']:.0f} tokens/s, no dropped text) =="
    )
    print(
        f"reply: {reply['chars']} chars, {reply['lines']} lines, {reply['headings']} headings,"
        f" {reply['code_blocks']} code blocks; stand-in token_delay=0, one chunk per token"
    )
    print("-- UI: StraylightApp.run_test(size=(120, 40)), first token -> finish() returned --")
    print("  run  tok/s   total ms  stream ms  final render ms  renders  enter->1st tok  intact")
    for index, run in enumerate(result["ui_runs"], 1):
        print(
            f"  {index:>3} {run['tokens_per_second']:6.0f} {run['total_ms']:10.0f}"
            f" {run['stream_ms']:10.0f} {run['final_render_ms']:16.0f} {run['renders']:8d}"
            f" {run['enter_to_first_token_ms']:15.0f}  {'yes' if run['intact'] else 'NO'}"
        )
        quarters = " / ".join(f"{rate:.0f}" for rate in run["quarter_tokens_per_second"])
        print(f"      tokens/s by quarter of the stream (before the final render): {quarters}")
        for problem in run["problems"]:
            print(f"      ! {problem}")
    print(f"  median: {result['ui_tokens_per_second_median']:.0f} tokens/s")
    for layer, key in (("engine + gateway (no UI)", "engine"), ("gateway only", "gateway")):
        runs = result[f"{key}_runs"]
        rates = ", ".join(f"{r['tokens_per_second']:.0f}" for r in runs)
        ok = all(r["text_ok"] for r in runs)
        print(
            f"-- {layer}: median {result[f'{key}_tokens_per_second_median']:.0f} tokens/s"
            f" (runs: {rates}); text intact: {'yes' if ok else 'NO'}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--tokens", type=int, default=DEFAULT_TOKENS, help="reply length")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    info = machine_info()
    print(format_machine(info))
    try:
        result = run(args.runs, args.tokens)
    except (StreamingError, OSError, RuntimeError) as error:
        print(f"streaming benchmark could not run: {error}", file=sys.stderr)
        return 1
    result["machine"] = info
    print_report(result)
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
