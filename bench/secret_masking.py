"""Secret masking of a long paste: 100 KB of chat with secrets through `mask_secrets`.

    python -m bench.secret_masking [--json OUT] [--runs N]

The text is `tests/data/chat_with_secrets.py`'s (the test checks what it masks). Reported: the
best and the median of ``--runs`` calls, in ms, against the target (best <= 10 ms: masking
runs on every message before it is logged, so a long paste must not delay the turn). It was
a timed assertion in tests/test_secret_masking.py.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench._common import format_machine, machine_info, write_json
from memory.secret_masking import mask_secrets
from tests.data.chat_with_secrets import chat_with_secrets

TARGET_BEST_MS = 10.0


def timings_ms(text: str, runs: int) -> list[float]:
    """`runs` timed calls of `mask_secrets(text)`, after one untimed (patterns compiled)."""
    mask_secrets(text)
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        mask_secrets(text)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--runs", type=int, default=20, help="timed calls")
    args = parser.parse_args(argv)

    info = machine_info()
    print(format_machine(info))
    text = chat_with_secrets()
    times = timings_ms(text, max(1, args.runs))
    best, median = min(times), statistics.median(times)
    print(
        f"\nmask_secrets on {len(text):,} characters of chat: best {best:.1f} ms, "
        f"median {median:.1f} ms over {len(times)} runs (target best <= {TARGET_BEST_MS:.0f} ms)"
    )
    if args.json:
        write_json(
            args.json,
            {
                "chars": len(text),
                "runs": len(times),
                "best_ms": round(best, 2),
                "median_ms": round(median, 2),
                "target_best_ms": TARGET_BEST_MS,
                "machine": info,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
