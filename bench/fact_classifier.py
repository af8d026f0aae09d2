"""Success-event classifier: precision, recall and speed on a labelled table of sentences.

    python -m bench.fact_classifier [--json OUT] [--repeat N]

The table and its scoring live in `tests/data/fact_classifier_labelled.py` (the tests use the
same rows). Reported: every row with type and key exact, any proposal counting (event detection
without the key), the held-out batch on its own line, and the misclassified rows. Latency: every
sentence classified `--repeat` times, the median per sentence, then p50/p95 over the sentences
(µs); a typical turn (a user message and a reply with a list, a code block and a quotation)
and a long reply (~11 KB, one event sentence 200 times) through `classify_turn`, against
their targets (they were timed assertions in tests/test_success_classifier.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench._common import format_machine, machine_info, write_json
from memory.success_classifier import classify_turn
from tests.data.fact_classifier_labelled import (
    HELD_OUT_FROM,
    LABELLED,
    LONG_REPLY,
    TYPICAL_TURN,
    Prediction,
    Row,
    Score,
    predict,
    score,
)

TURN_TARGET_US = 1_000.0  # a typical turn, p50: well under a millisecond
LONG_REPLY_TARGET_US = 200_000.0  # the ~11 KB reply, p50: a long reply does not stall the turn


def evaluate(rows: list[Row]) -> tuple[Score, list[tuple[Row, Prediction]]]:
    """The confusion counts and the misclassified rows with what was predicted."""
    predictions = [predict(speaker, sentence) for speaker, sentence, _, _ in rows]
    wrong = [
        (row, got) for row, got in zip(rows, predictions, strict=True) if got != (row[2], row[3])
    ]
    return score(rows, predictions), wrong


def percentile(values: list[float], q: int) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[q - 1]


def sentence_latencies_us(rows: list[Row], repeat: int) -> list[float]:
    """Per sentence, the median of `repeat` timed calls, in µs."""
    result: list[float] = []
    for speaker, sentence, _, _ in rows:
        times: list[float] = []
        for _ in range(repeat):
            started = time.perf_counter()
            predict(speaker, sentence)
            times.append((time.perf_counter() - started) * 1e6)
        result.append(statistics.median(times))
    return result


def turn_latencies_us(repeat: int, user: str, reply: str) -> list[float]:
    times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        classify_turn(user, reply)
        times.append((time.perf_counter() - started) * 1e6)
    return times


def show(value: str | None) -> str:
    return value if value is not None else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--repeat", type=int, default=50, help="timed calls per sentence")
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)

    info = machine_info()
    print(format_machine(info))
    predictions = [predict(speaker, sentence) for speaker, sentence, _, _ in LABELLED]
    overall = score(LABELLED, predictions)
    held_out = score(LABELLED[HELD_OUT_FROM:], predictions[HELD_OUT_FROM:])
    events = score(LABELLED, predictions, exact=False)
    latencies = sentence_latencies_us(LABELLED, repeat)
    turn = turn_latencies_us(repeat * 4, *TYPICAL_TURN)
    long_reply = turn_latencies_us(max(3, repeat // 5), "ok", LONG_REPLY)
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    turn_p50, turn_p95 = percentile(turn, 50), percentile(turn, 95)
    long_p50 = percentile(long_reply, 50)

    positives = sum(1 for row in LABELLED if row[2] is not None)
    print(
        f"\n{len(LABELLED)} labelled sentences ({positives} positive, "
        f"{len(LABELLED) - positives} negative)"
    )
    held_out_label = f"held-out batch only ({len(LABELLED) - HELD_OUT_FROM} rows, exact):"
    print(f"  {'all rows, type and key must match:':<40} {overall.line()}")
    print(f"  {'all rows, any proposal counts:':<40} {events.line()}")
    print(f"  {held_out_label:<40} {held_out.line()}")
    print(
        f"  latency per sentence: p50 {p50:.1f} µs, p95 {p95:.1f} µs, max {max(latencies):.1f} µs"
    )
    print(
        f"  latency per typical turn ({len(TYPICAL_TURN[0]) + len(TYPICAL_TURN[1])} chars,"
        f" classify_turn): p50 {turn_p50:.1f} µs, p95 {turn_p95:.1f} µs"
        f" (target p50 <= {TURN_TARGET_US:.0f} µs)"
    )
    print(
        f"  latency of a long reply ({len(LONG_REPLY)} chars, classify_turn):"
        f" p50 {long_p50 / 1000:.1f} ms (target <= {LONG_REPLY_TARGET_US / 1000:.0f} ms)"
    )
    wrong = [
        (row, got)
        for row, got in zip(LABELLED, predictions, strict=True)
        if got != (row[2], row[3])
    ]
    if wrong:
        print(f"\nmisclassified ({len(wrong)}):")
        print(f"  {'speaker':<9} {'expected':<40} {'got':<40} sentence")
        for (speaker, sentence, want_type, want_key), (got_type, got_key) in wrong:
            expected = f"{show(want_type)} {show(want_key)}"
            got = f"{show(got_type)} {show(got_key)}"
            print(f"  {speaker:<9} {expected:<40} {got:<40} {sentence}")
    else:
        print("\nmisclassified: none")

    if args.json:
        result: dict[str, Any] = {
            "sentences": len(LABELLED),
            "precision": round(overall.precision, 4),
            "recall": round(overall.recall, 4),
            "tp": overall.tp,
            "fp": overall.fp,
            "fn": overall.fn,
            "tn": overall.tn,
            "p95_us": round(p95, 1),
            "p50_us": round(p50, 1),
            "turn_p50_us": round(turn_p50, 1),
            "turn_p95_us": round(turn_p95, 1),
            "long_reply_p50_us": round(long_p50, 1),
            "targets": {"turn_p50_us": TURN_TARGET_US, "long_reply_p50_us": LONG_REPLY_TARGET_US},
            "held_out": {
                "sentences": len(LABELLED) - HELD_OUT_FROM,
                "precision": round(held_out.precision, 4),
                "recall": round(held_out.recall, 4),
            },
            "machine": info,
        }
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
