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


EMPTY_MEMORY_PROBE = """
import json, sys
from pathlib import Path
from memory.memory_store import MemoryConfig, MemoryStore
from memory.confidence import used_in_reply
from memory.reflection import proof_score
from store.clock import Clock

store = MemoryStore.open(Path({home!r}), MemoryConfig(), clock=Clock())
store.wait_until_ready()
store.status()
seen = {{"at_open": "rapidfuzz" in sys.modules}}
text = "We took the night train to Lisbon with my sister in March and it was late."
store.save("user", text, conversation_id="c")
again = store.save("user", text + "!", conversation_id="c")
seen["dedup"] = again.skipped
seen["used"] = used_in_reply("So: " + text, key=None, body=text)
seen["proof"] = proof_score(text, "user: " + text) > 90
store.close()
print(json.dumps(seen))
"""


def test_an_empty_memory_opens_without_rapidfuzz_and_its_first_use_imports_it(tmp_path: Path):
    """rapidfuzz (3 MB resident) is imported by the first save's dedup check, the first
    confidence check or reflection proof, not by opening the memory (issue 18)."""
    probe = EMPTY_MEMORY_PROBE.format(home=str(tmp_path / "home"))
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"at_open": False, "dedup": "dedup", "used": True, "proof": True}


IDLE_EMPTY_PROBE = """
import asyncio, json, sys
from pathlib import Path
from agent.settings import load_settings
from store.data_dir_lock import DataDirLock
from tui.app import StraylightApp
from tui.widgets.status_sidebar import StatusSidebar

MEMORY = ("duckdb", "usearch", "numpy")

def settled(app):
    # the memory line, the facts line and the Ollama check all shown
    state = app.query_one(StatusSidebar).state
    return (
        state is not None
        and state.memory_line.startswith("0 points")
        and state.facts_line != "opening…"
        and state.ollama != "checking"
    )

async def main() -> dict:
    settings = load_settings(flags={{"home": {home!r}, "ollama_host": "127.0.0.1:9"}}).settings
    app = StraylightApp(settings)
    app.CSS_PATH = {css!r}
    async with app.run_test() as pilot:
        while not settled(app) or app.owner_server is None:
            await pilot.pause(0.01)
        return {{
            "memory": type(app.engine.memory).__name__,
            "loaded": [name for name in MEMORY if name in sys.modules],
            "jobs": app.scheduler is not None,
        }}

with DataDirLock(Path({home!r})):  # as `straylight` does: the socket is served
    print(json.dumps(asyncio.run(main())))
"""


def test_an_idle_app_on_a_new_data_dir_imports_no_duckdb_numpy_or_usearch(tmp_path: Path):
    """Issue 18: a data dir with no database gets its memory at the first write; until then
    the sidebar reads a fresh store's answers and nothing of the store is imported."""
    home = tmp_path / "home"
    css = str(ROOT / "tui" / "app.tcss")
    probe = IDLE_EMPTY_PROBE.format(home=str(home), css=css)
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"memory": "DeferredMemory", "loaded": [], "jobs": False}
    assert not (home / "straylight.duckdb").exists()
