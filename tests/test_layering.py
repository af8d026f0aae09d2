"""The rooms' arrows point down only (docs/architecture.md): a package imports only the
packages below it, Textual stays in tui/, memory/ writes no SQL and imports no duckdb, and
tui/ and jobs/ reach the stores only through memory/ and agent/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["store", "memory", "agent", "jobs", "tui"]  # each may import only those before it
STORE_CLASSES = {"PointStore", "FactStore", "HypothesisStore", "JobRuns", "LexicalIndex"}
STORE_CLASSES |= {"ConversationStore", "open_database"}  # and the handle they are built on
# The modules that define them: imported whole (`from store import point_store`,
# `import store.database`), their names are reached as attributes.
STORE_MODULES = {
    "store.point_store",
    "store.fact_store",
    "store.hypothesis_store",
    "store.job_runs",
    "store.lexical_index",
    "store.conversation_store",
    "store.database",
}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every import in a file, including those inside functions."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
            found.extend((f"{node.module}.{alias.name}", []) for alias in node.names)
    return found


def _files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", LAYERS)
def test_a_package_imports_only_the_packages_below_it(package: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(package) + 1])
    upward = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _files(package)
        for module, _names in _imports(path)
        if module.split(".")[0] in set(LAYERS) - allowed
    ]
    assert upward == []


@pytest.mark.parametrize("package", ["store", "memory", "agent", "jobs"])
def test_textual_lives_in_tui_only(package: str) -> None:
    found = [
        str(path.relative_to(ROOT))
        for path in _files(package)
        for module, _names in _imports(path)
        if module.split(".")[0] in {"textual", "rich"}
    ]
    assert found == []


def test_memory_imports_no_duckdb_and_writes_no_sql() -> None:
    duckdb = [
        str(path.relative_to(ROOT))
        for path in _files("memory")
        for module, _names in _imports(path)
        if module.split(".")[0] == "duckdb"
    ]
    assert duckdb == []
    sql = [
        str(path.relative_to(ROOT))
        for path in _files("memory")
        if any(
            word in path.read_text(encoding="utf-8")
            for word in ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM")
        )
    ]
    assert sql == []


@pytest.mark.parametrize("package", ["tui", "jobs"])
def test_tui_and_jobs_do_not_build_stores_from_a_handle(package: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}: {sorted(set(names) & STORE_CLASSES)}"
        for path in _files(package)
        for module, names in _imports(path)
        if (module.startswith("store.") and set(names) & STORE_CLASSES)
        or (module in STORE_MODULES and not names)
    ]
    assert found == []


def test_tui_workers_post_messages_rather_than_call_the_app_from_their_thread() -> None:
    """The one rule for background work (docs/architecture.md): a thread worker posts a
    message and a handler updates widgets; `call_from_thread` would be a second way."""
    found = [
        str(path.relative_to(ROOT))
        for path in _files("tui")
        if "call_from_thread(" in path.read_text(encoding="utf-8")
    ]
    assert found == []
