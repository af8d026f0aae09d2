"""Prompt assembly under a full context budget, and the token estimator's error after calibration.

    python -m bench.prompt_budget [--json OUT] [--runs N] [--prompts N]

Assembly: the issue's full budget (longterm.md at its 8 KiB budget, 20 facts of ~150 characters,
10 recall hits of ~400, 20 history messages of ~600) budgeted with `agent.context_budget` and
rendered into chat messages with `agent.prompt`, in a 16k window (everything fits) and a 4k one
(cuts). Three cases, p50/p95 over ``--runs``: *cold* (the estimate cache emptied before every
run: every text estimated afresh), *turn* (a new message and new recall hits each run, longterm,
facts and history repeating, as from one turn to the next) and *warm* (the same prompt again).

Estimator error: ``--prompts`` chat prompts (seeded) mixing English and German prose, Python
code and Markdown (bench/prompt_budget_corpus.py); the reference count is a real tokenizer,
llama-3's and qwen3's BPE vocabularies from the ``quicktok-v1`` package (bench extra), plus the
chat template's tokens; without that package, the stand-in's heuristic. Prequential: each prompt
is estimated with the calibration learnt so far, then observed. Reported: the relative error
before any calibration and after the first 10 prompts (mean, p95, max), and per kind
(single-kind prompts after calibrating on mixed ones).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from agent.context_budget import HistoryMessage, PromptParts, budget_prompt
from agent.prompt import PERSONA
from agent.token_estimate import PromptEstimate, TokenEstimator, _raw_units
from bench._common import format_machine, machine_info, write_json
from bench.prompt_budget_corpus import ENGLISH, GERMAN, corpus

TARGET_P95_MS = 5.0
LONGTERM_BUDGET_BYTES = 8 * 1024
CALIBRATION_PROMPTS = 10
Counter = Callable[[list[dict[str, str]]], int]


def percentile(values: list[float], q: int) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[q - 1]


# ------------------------------------------------------------------------------ assembly


def _filled(text: str, size: int) -> str:
    """``text`` repeated and cut on a line to about ``size`` bytes."""
    out = ""
    while len(out.encode()) < size:
        out += text + "\n\n"
    return out.encode()[:size].decode(errors="ignore").rsplit("\n", 1)[0]


def full_parts(seed: int) -> PromptParts:
    """The full budget; ``seed`` varies the new message and the recall hits only."""
    rng = random.Random(seed)
    prose = ENGLISH.split("\n\n") + GERMAN.split("\n\n")
    longterm = _filled("## Notes\n" + ENGLISH + GERMAN, LONGTERM_BUDGET_BYTES)
    facts = tuple(f"- [fact] home.item{i} = {prose[i % len(prose)][:120]}" for i in range(20))
    recall = tuple(
        f"[#{seed * 10 + i} · user · 2026-05-01 · 0.7{i}]\n> {rng.choice(prose)[:380]} {seed}"
        for i in range(10)
    )
    history = tuple(
        HistoryMessage("user" if i % 2 == 0 else "assistant", _filled(prose[i % len(prose)], 600))
        for i in range(20)
    )
    return PromptParts(
        system=PERSONA,
        user=f"{rng.choice(prose)} ({seed})",
        rules=("- [rule] Answer in the user's language.",),
        longterm=longterm,
        facts=facts,
        recall=recall,
        recall_head="Memories from earlier conversations, most relevant first.",
        history=history,
    )


def assemble(parts: PromptParts, window: int, reserve: int) -> list[dict[str, str]]:
    result = budget_prompt(parts, window=window, reply_reserve=reserve, factor=1.1, margin=0.10)
    return result.kept.chat_messages()


def time_assembly(runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for window, reserve in ((16_384, 2048), (4096, 512)):
        cases: dict[str, Any] = {}
        for case in ("cold", "turn", "warm"):
            times: list[float] = []
            cpu: list[float] = []
            for run in range(runs):
                parts = full_parts(run if case != "warm" else 0)
                if case == "cold":
                    _raw_units.cache_clear()
                started, started_cpu = time.perf_counter(), time.thread_time()
                assemble(parts, window, reserve)
                cpu.append((time.thread_time() - started_cpu) * 1000)
                times.append((time.perf_counter() - started) * 1000)
            cases[case] = {
                "p50_ms": statistics.median(times),
                "p95_ms": percentile(times, 95),
                "max_ms": max(times),
                "cpu_p50_ms": statistics.median(cpu),
                "cpu_p95_ms": percentile(cpu, 95),
            }
        probe = budget_prompt(full_parts(0), window=window, reply_reserve=reserve, factor=1.1)
        out[str(window)] = {
            **cases,
            "prompt_tokens": probe.total,
            "cut": probe.cut,
            "notes": list(probe.notes),
        }
    return out


# ------------------------------------------------------------------------------ estimator


def reference_counters() -> dict[str, Counter]:
    """Real tokenizers when the bench extra is installed; the stand-in's heuristic always."""
    from tests.support.ollama_standin import prompt_tokens as standin_prompt_tokens

    counters: dict[str, Counter] = {"standin-heuristic": standin_prompt_tokens}
    try:
        import quicktok  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return counters
    llama3 = quicktok.get_encoding("llama3")
    qwen3 = quicktok.get_encoding("qwen3")

    def llama3_count(messages: list[dict[str, str]]) -> int:
        # <|begin_of_text|>, per message <|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>,
        # then the assistant header the reply starts from.
        return 1 + sum(4 + len(llama3.encode_ordinary(m["content"])) for m in messages) + 4

    def qwen3_count(messages: list[dict[str, str]]) -> int:
        # <|im_start|>role\n … <|im_end|>\n, then <|im_start|>assistant\n.
        return sum(5 + len(qwen3.encode_ordinary(m["content"])) for m in messages) + 3

    counters["llama3"] = llama3_count
    counters["qwen3"] = qwen3_count
    return counters


def mixed_prompts(count: int, seed: int = 13) -> list[list[dict[str, str]]]:
    """Chat prompts: a system message (persona + Markdown), 2-12 history messages of any kind,
    a user message of prose."""
    rng = random.Random(seed)
    chunks = corpus()
    prose = chunks["english"] + chunks["german"]
    prompts: list[list[dict[str, str]]] = []
    for _ in range(count):
        system = PERSONA + "\n\n## Long-term memory\n\n" + rng.choice(chunks["markdown"])
        messages = [{"role": "system", "content": system}]
        for turn in range(rng.randint(2, 12)):
            kind = rng.choice(("english", "german", "code", "markdown"))
            role = "user" if turn % 2 == 0 else "assistant"
            messages.append({"role": role, "content": rng.choice(chunks[kind])})
        messages.append({"role": "user", "content": rng.choice(prose)})
        prompts.append(messages)
    return prompts


def single_kind_prompts(kind: str, count: int, seed: int = 29) -> list[list[dict[str, str]]]:
    rng = random.Random(seed)
    chunks = corpus()[kind]
    return [
        [{"role": "user", "content": "\n\n".join(rng.sample(chunks, min(3, len(chunks))))}]
        for _ in range(count)
    ]


def _errors_summary(errors: list[float]) -> dict[str, float]:
    absolute = [abs(e) for e in errors]
    return {
        "n": len(errors),
        "mean_abs": statistics.mean(absolute),
        "p95_abs": percentile(absolute, 95),
        "max_abs": max(absolute),
        "mean_signed": statistics.mean(errors),
    }


def estimator_error(prompts: int) -> dict[str, Any]:
    mixed = mixed_prompts(prompts)
    results: dict[str, Any] = {}
    for name, count in reference_counters().items():
        estimator = TokenEstimator()
        before: list[float] = []
        after: list[float] = []
        for index, messages in enumerate(mixed):
            sent = PromptEstimate.of_messages(messages)
            actual = count(messages)
            error = (estimator.prompt_tokens(name, sent) - actual) / actual
            (before if index < CALIBRATION_PROMPTS else after).append(error)
            estimator.observe(name, sent, actual)
        per_kind: dict[str, Any] = {}
        for kind in ("english", "german", "code", "markdown"):
            errors = []
            for messages in single_kind_prompts(kind, 20):
                sent = PromptEstimate.of_messages(messages)
                actual = count(messages)
                errors.append((estimator.prompt_tokens(name, sent) - actual) / actual)
            per_kind[kind] = _errors_summary(errors)
        uncalibrated = [
            (PromptEstimate.of_messages(m).tokens(1.0) - count(m)) / count(m) for m in mixed
        ]
        results[name] = {
            "factor": estimator.factor(name),
            "uncalibrated": _errors_summary(uncalibrated),
            "first_prompts": _errors_summary(before),
            "calibrated": _errors_summary(after),
            "per_kind": per_kind,
        }
    return results


# ------------------------------------------------------------------------------ report


def rows_for(result: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(metric, value, target, met) rows for bench/run_all.py's table (met: None = no target)."""
    rows: list[tuple[str, str, str, bool | None]] = []
    for window, cases in result["assembly"].items():
        for case in ("cold", "turn", "warm"):
            stats = cases[case]
            rows.append(
                (
                    f"prompt assembly, full budget, {int(window) // 1024}k, {case}: p50 / p95",
                    f"{stats['p50_ms']:.2f} / {stats['p95_ms']:.2f} ms"
                    f" (CPU {stats['cpu_p50_ms']:.2f} / {stats['cpu_p95_ms']:.2f})",
                    f"p95 <= {TARGET_P95_MS:.0f} ms",
                    stats["p95_ms"] <= TARGET_P95_MS,
                )
            )
    for name, stats in result["estimator"].items():
        calibrated = stats["calibrated"]
        rows.append(
            (
                f"token estimate vs {name} after calibration: mean / p95 |error|",
                f"{calibrated['mean_abs']:.1%} / {calibrated['p95_abs']:.1%}",
                "",
                None,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=str, default=None)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--prompts", type=int, default=120)
    args = parser.parse_args(argv)
    info = machine_info()
    print(format_machine(info))
    result = {
        "loadavg": info["loadavg"],
        "target_p95_ms": TARGET_P95_MS,
        "assembly": time_assembly(args.runs),
        "estimator": estimator_error(args.prompts),
    }
    for metric, value, target, _ in rows_for(result):
        print(f"{metric:<76} {value:<36} {target}")
    for name, stats in result["estimator"].items():
        print(
            f"  {name}: factor {stats['factor']:.3f}; uncalibrated mean |error| "
            f"{stats['uncalibrated']['mean_abs']:.1%}; per kind after calibration: "
            + ", ".join(
                f"{kind} {kind_stats['mean_signed']:+.1%}"
                for kind, kind_stats in stats["per_kind"].items()
            )
        )
    if args.json:
        from pathlib import Path

        write_json(Path(args.json), result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
