"""Heavy libraries stay off the path to the first frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("ollama", "httpx", "duckdb", "usearch", "numpy", "textual.widgets._markdown")


def test_the_entry_and_the_app_do_not_import_heavy_libraries() -> None:
    probe = (
        "import sys, json; import tui.cli, tui.app; "
        "print(json.dumps(sorted(m for m in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert not [name for name in HEAVY if name in loaded]
