"""Heavy libraries stay off the path to the first frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("ollama", "httpx", "duckdb", "usearch", "numpy", "textual.widgets._markdown", "mcp")


def test_the_entry_and_the_app_do_not_import_heavy_libraries() -> None:
    probe = (
        "import sys, json; import tui.cli, tui.app; tui.cli.build_parser(); "
        "print(json.dumps(sorted(m for m in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert not [name for name in HEAVY if name in loaded]


FIRST_FRAME_PROBE = """
import asyncio, json, sys
from agent.settings import load_settings
from tui.app import StraylightApp

HEAVY = {heavy!r}
seen = {{}}

class Probe(StraylightApp):
    CSS_PATH = {css!r}

    def _after_first_frame(self) -> None:
        seen["loaded"] = [name for name in HEAVY if name in sys.modules]
        self.exit()

async def main() -> None:
    settings = load_settings(flags={{"home": {home!r}, "ollama_host": "127.0.0.1:9"}}).settings
    async with Probe(settings).run_test() as pilot:
        while "loaded" not in seen:
            await pilot.pause(0.01)

asyncio.run(main())
print(json.dumps(seen["loaded"]))
"""


def test_nothing_heavy_is_loaded_when_the_first_frame_is_painted(tmp_path: Path) -> None:
    css = str(ROOT / "tui" / "app.tcss")
    probe = FIRST_FRAME_PROBE.format(heavy=HEAVY, home=str(tmp_path / "home"), css=css)
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
