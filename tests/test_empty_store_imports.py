"""An empty memory does not load usearch (issue 18: the empty store's RSS); its first
vector does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, sys
from pathlib import Path
from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock

seen = {{}}
with MemoryStore.open(Path({home!r}), MemoryConfig(), clock=Clock()) as store:
    store.status()
    seen["empty"] = "usearch" in sys.modules
    store.save("user", "the first point", vector=[0.1] * 8, use_filter=False)
    seen["first_vector"] = "usearch" in sys.modules
print(json.dumps(seen))
"""


def test_usearch_is_imported_by_the_first_vector_not_by_opening(tmp_path: Path) -> None:
    probe = PROBE.format(home=str(tmp_path / "home"))
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "empty": False,
        "first_vector": True,
    }
