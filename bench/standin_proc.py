"""Serve `OllamaStandIn` with scripted replies until stdin closes (used by the benchmarks).

    python -m bench.standin_proc SPEC.json

SPEC is `{"token_delay": 0.0, "replies": [{"text": ..., "tokens": [...]}, ...]}`. Prints
`READY 127.0.0.1:PORT` once listening.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.ollama_standin import OllamaStandIn


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m bench.standin_proc SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    server = OllamaStandIn(port=0, token_delay=float(spec.get("token_delay", 0.0)))
    for reply in spec.get("replies", []):
        server.script_reply(reply["text"], tokens=reply["tokens"])
    with server:
        print(f"READY {server.host}", flush=True)
        sys.stdin.read()  # until the parent closes our stdin
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
