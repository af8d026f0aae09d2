"""Issue 15 §1: links and odd files in the data dir, and a data dir others can write to.

Whoever can write to the data dir must not be able to make Straylight read or write a file
elsewhere: every case plants a link (or a folder where a file belongs) the way the issue's
reproduction does, runs the real command, and checks that it stopped with one line naming the
file (exit 2), that the target outside is byte-for-byte unchanged, and that nothing of it
reached the model. The unit cases below pin the `O_NOFOLLOW` guard itself: a link planted
after the up-front check is refused where the file is opened.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from agent.settings import Settings
from store.clock import Clock
from store.daily_log import DailyLog, LogMessage
from store.data_dir_lock import DataDirLock
from store.database import open_database
from store.longterm_file import LongtermFile
from store.private_files import SymlinkRefused, write_private_text
from store.vector_index import VectorIndex
from tests.reliability import fault_support
from tests.reliability.fault_support import (
    DAY,
    Workspace,
    assert_ok,
    assert_one_line,
    log_path,
    points,
)
from tests.support.ollama_standin import OllamaStandIn

seeded_template = fault_support.seeded_template
world = fault_support.world

SECRET = "root:x:0:0:the target of the link must never reach the model\n"


def victim(w: Workspace, name: str = "victim.txt", text: str = SECRET) -> Path:
    target = w.root / name
    target.write_text(text)
    return target


def test_a_linked_lock_file_is_refused_and_its_target_keeps_its_bytes(world: Workspace) -> None:
    target = victim(world)
    (world.home / "straylight.lock").symlink_to(target)
    for command in (("status",), ("ask", "hello"), ("remember", "a note")):
        line = assert_one_line(world.run(*command), 2, "straylight.lock", "symbolic link")
        assert "remove it" in line
    assert target.read_text() == SECRET


def test_a_linked_longterm_file_never_reaches_the_prompt(world: Workspace) -> None:
    target = victim(world)
    (world.home / "longterm.md").unlink()
    (world.home / "longterm.md").symlink_to(target)
    assert_one_line(world.run("ask", "hello"), 2, "longterm.md", "symbolic link")
    assert world.standin.chat_requests() == []
    assert target.read_text() == SECRET


def test_a_linked_daily_log_is_not_appended_to(world: Workspace) -> None:
    target = victim(world, "bashrc", "export PATH=/usr/bin\n")
    log = log_path(world.home)
    log.unlink()
    log.symlink_to(target)
    assert_one_line(world.run("ask", "hi"), 2, f"{DAY}.md", "symbolic link")
    assert_one_line(world.run("history"), 2, f"{DAY}.md")
    assert target.read_text() == "export PATH=/usr/bin\n"


def test_any_link_in_the_conversation_folder_is_refused(world: Workspace) -> None:
    """A rewrite's temp file (`.DAY.md.rewrite.tmp`) too: no link in Straylight's folder."""
    target = victim(world)
    (world.home / "conversation" / f".{DAY}.md.rewrite.tmp").symlink_to(target)
    assert_one_line(world.run("history"), 2, "rewrite.tmp", "symbolic link")
    assert target.read_text() == SECRET


@pytest.mark.parametrize("kind", ["fifo", "folder", "hard link"])
def test_a_rewrite_never_opens_what_is_planted_at_a_fixed_temp_name(
    world: Workspace, kind: str
) -> None:
    """A rewritten day file (`conversations delete`, `/retry`) went through the fixed name
    `.DAY.md.rewrite.tmp`: a FIFO there hung the delete after it had forgotten the points,
    a folder made it an "unexpected error", and a hard link's target outside the data dir
    received the rewritten log. The temp file now has a unique name (`mkstemp`)."""
    planted = world.home / "conversation" / f".{DAY}.md.rewrite.tmp"
    target = victim(world)
    if kind == "fifo":
        os.mkfifo(planted)
    elif kind == "folder":
        planted.mkdir()
    else:
        os.link(target, planted)
    world.standin.script_reply("The other answer.")
    assert_ok(world.run("ask", "--conversation", "other-one", "another question"))
    listed = world.run("conversations", "--json")
    assert_ok(listed)
    (seeded,) = [c["id"] for c in json.loads(listed.stdout) if c["id"] != "other-one"]
    assert_ok(world.run("conversations", "delete", seeded, "--yes"))  # the day file stays
    left = json.loads(world.run("conversations", "--json").stdout)
    assert [c["id"] for c in left] == ["other-one"]
    assert target.read_text() == SECRET
    assert planted.exists()  # left as it was found


def test_a_link_at_the_old_template_temp_name_is_left_unused(world: Workspace) -> None:
    """The template is written through a temp file of a unique name (`mkstemp`): a link
    planted at the name it once had (`.longterm.md.tmp`) is never opened, the ask runs,
    and the link's target keeps its bytes."""
    target = victim(world)
    (world.home / "longterm.md").unlink()
    planted = world.home / ".longterm.md.tmp"
    planted.symlink_to(target)
    assert_ok(world.run("ask", "hi"))
    assert target.read_text() == SECRET
    assert planted.is_symlink() and planted.readlink() == target
    written = world.home / "longterm.md"
    assert not written.is_symlink() and stat.S_IMODE(written.stat().st_mode) == 0o600
    assert sorted(p.name for p in world.home.glob(".longterm.md.*")) == [planted.name]


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_fifo_at_a_day_file_stops_every_command_with_one_line(
    world: Workspace, kind: str
) -> None:
    """A day file that is a folder or a FIFO: `ask` used to fail halfway ("unexpected
    error: IsADirectoryError") and `conversations` skipped the day without a word."""
    log = log_path(world.home)
    kept = world.root / "kept-day.md"
    log.rename(kept)
    if kind == "folder":
        log.mkdir()
    else:
        os.mkfifo(log)
    for command in (["ask", "hi"], ["conversations"], ["history"], ["status"]):
        assert_one_line(world.run(*command), 2, f"{DAY}.md", "not a regular file")
    assert world.standin.chat_requests() == []
    (log.rmdir if kind == "folder" else log.unlink)()
    kept.rename(log)
    assert_ok(world.run("conversations"))


def test_a_file_where_the_conversation_folder_belongs_is_named_as_such(world: Workspace) -> None:
    folder = world.home / "conversation"
    folder.rename(world.root / "kept-conversation")
    folder.write_text("not a folder")
    line = assert_one_line(world.run("history"), 2, "is not a folder", "daily logs")
    assert line.startswith(str(folder))
    assert folder.read_text() == "not a folder"


def test_a_linked_conversation_folder_is_neither_chmodded_nor_filled(world: Workspace) -> None:
    elsewhere = world.root / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o755)
    for entry in (world.home / "conversation").iterdir():
        entry.unlink()
    (world.home / "conversation").rmdir()
    (world.home / "conversation").symlink_to(elsewhere)
    assert_one_line(world.run("ask", "hi"), 2, "conversation", "symbolic link")
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("name", ["straylight.duckdb", "straylight.duckdb.wal", "straylight.log"])
def test_linked_database_wal_and_log_files_are_refused(world: Workspace, name: str) -> None:
    target = victim(world)
    path = world.home / name
    path.unlink(missing_ok=True)
    path.symlink_to(target)
    assert_one_line(world.run("status"), 2, name, "symbolic link")
    assert target.read_text() == SECRET


def test_a_data_dir_others_can_write_to_is_refused_with_the_fix(world: Workspace) -> None:
    os.chmod(world.home, 0o1777)
    before = points(world.home)
    line = assert_one_line(world.run("ask", "hi"), 2, "writable by other users")
    assert f"chmod go-w {world.home}" in line
    assert world.standin.chat_requests() == []
    os.chmod(world.home, 0o700)
    assert points(world.home) == before
    assert_ok(world.run("status"))


def test_a_longterm_md_others_can_write_to_is_refused_with_the_fix(world: Workspace) -> None:
    """`longterm.md` goes into every prompt: one made by hand under umask 000 (mode 666)
    let any local user write into the chat's system prompt, and it was used without a word.
    Group-writable stays allowed (a user-private group is the common setup)."""
    longterm = world.home / "longterm.md"
    os.chmod(longterm, 0o666)
    line = assert_one_line(world.run("ask", "hi"), 2, "longterm.md is writable by other users")
    assert f"chmod go-w {longterm}" in line
    assert world.standin.chat_requests() == []
    os.chmod(longterm, 0o664)
    assert_ok(world.run("status"))


def test_the_data_dir_itself_may_be_a_link(world: Workspace) -> None:
    """The user's own choice (`--home` naming a link): allowed."""
    link = world.root / "home-link"
    link.symlink_to(world.home)
    env = {**world.env, "STRAYLIGHT_HOME": str(link)}
    assert_ok(world.run("remember", "the data dir may be reached through a link", env=env))
    assert points(world.home)[-1][2] == "the data dir may be reached through a link"


def test_an_index_file_that_is_a_folder_is_named_and_nothing_is_lost(world: Workspace) -> None:
    index = world.home / "vectors.usearch"
    index.unlink()
    index.mkdir()
    assert_one_line(world.run("remember", "a note to keep"), 2, "vectors.usearch")
    index.rmdir()
    assert_ok(world.run("remember", "a note to keep"))
    assert points(world.home)[-1][2] == "a note to keep"


# ------------------------------------------------ the O_NOFOLLOW guard where files are opened


def test_open_calls_refuse_links_planted_after_the_check(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    target = tmp_path / "target"
    target.write_text(SECRET)

    (home / "straylight.lock").symlink_to(target)
    with pytest.raises(SymlinkRefused, match=r"straylight\.lock"):
        DataDirLock(home).acquire()

    (home / "longterm.md").symlink_to(target)
    state = LongtermFile(home / "longterm.md", 8192).load()
    assert state.text == ""
    assert state.warning is not None and "symbolic link" in state.warning
    assert not LongtermFile(home / "longterm.md", 8192).ensure_template()

    (home / ".notes.md.tmp").symlink_to(target)  # the old fixed temp name: unused now
    write_private_text(home / "notes.md", "x")
    assert (home / "notes.md").read_text() == "x" and not (home / "notes.md").is_symlink()
    assert (home / ".notes.md.tmp").readlink() == target
    (home / "notes.md").unlink()
    (home / "notes.md").symlink_to(target)
    with pytest.raises(SymlinkRefused):
        write_private_text(home / "notes.md", "y")
    assert sorted(p.name for p in home.glob(".notes.md.*")) == [".notes.md.tmp"]

    day_log = DailyLog(home / "conversation")
    day = date(2031, 2, 3)
    day_log.root.mkdir(mode=0o700)
    day_log.path_for(day).symlink_to(target)
    with pytest.raises(SymlinkRefused):
        day_log.append(LogMessage("user", "hi"), day)
    with pytest.raises(SymlinkRefused):
        day_log.read_day(day)

    (home / "straylight.duckdb").symlink_to(target)
    with pytest.raises(SymlinkRefused):
        open_database(home / "straylight.duckdb", clock=Clock())
    assert target.read_text() == SECRET


def test_a_linked_index_file_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "foreign.usearch"
    target.write_bytes(b"not an index")
    path = tmp_path / "vectors.usearch"
    path.symlink_to(target)
    index = VectorIndex(path, 4)
    assert index.open() == "stale"
    index.rebuild([1], [[1.0, 0.0, 0.0, 0.0]])
    assert not path.is_symlink()
    assert target.read_bytes() == b"not an index"


def test_an_index_path_taken_by_a_folder_loses_no_point_in_the_store(tmp_path: Path) -> None:
    """Behind the CLI's check (a folder appearing while the TUI runs): the index lives in
    memory, its saves fail logged, and every point and vector is in the database."""
    from memory.memory_store import MemoryConfig, MemoryStore

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "vectors.usearch").mkdir()
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    try:
        first = store.remember("the first note", vector=[1.0, 0.0, 0.0])
        second = store.remember("the second note", vector=[0.0, 1.0, 0.0])
        assert store.upkeep_index()["saved"] is False
        hits = store.vectors.search(np.array([1.0, 0.0, 0.0], dtype=np.float32), 1)
        assert hits[0][0] == first
    finally:
        store.close()
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    try:
        assert store.points.get(second) is not None
        assert store.points.get(second).embedding is not None  # type: ignore[union-attr]
    finally:
        store.close()


async def test_the_tui_names_a_link_planted_while_it_runs(
    settings: Settings, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """After the start-up check: the turn stops with a notice naming the link; nothing is
    written through it."""
    from tests.support.pilot_helpers import type_text, wait_until
    from tui.app import StraylightApp
    from tui.widgets.chat_message import ChatNotice

    target = tmp_path / "bashrc"
    target.write_text("export PATH=/usr/bin\n")
    standin.script_reply("hello")
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        log = app.engine.daily_log.path_for(settings.clock.now().astimezone().date())
        log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        log.symlink_to(target)
        await type_text(pilot, "hi there")
        await pilot.press("enter")

        def named() -> bool:
            return any("symbolic link" in str(n.render()) for n in app.query(ChatNotice))

        await wait_until(pilot, named, what="a notice naming the link")
    assert target.read_text() == "export PATH=/usr/bin\n"


@pytest.mark.parametrize("name", ["rows.dat", "rows.idx"])
@pytest.mark.parametrize("kind", ["link", "link to /dev/zero", "folder", "fifo"])
def test_odd_row_files_stop_every_command_with_one_line(
    world: Workspace, name: str, kind: str
) -> None:
    """`rows.dat` / `rows.idx` (store/row_file.py) as a link (its target keeps its bytes),
    a folder or a FIFO: one line naming it, exit 2, no point lost, nothing sent."""
    target = victim(world)
    path = world.home / name
    path.unlink(missing_ok=True)
    if kind == "link":
        path.symlink_to(target)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    before = points(world.home)
    for command in (("status",), ("recall", "ferry"), ("remember", "a note"), ("ask", "hi")):
        assert_one_line(world.run(*command), 2, name)
    assert world.standin.chat_requests() == []
    assert target.read_text() == SECRET and points(world.home) == before


def test_a_write_that_fails_keeps_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    """A full disk (RLIMIT_FSIZE in a child process: EFBIG, as ENOSPC) midway through
    `write_private_text`: the file keeps its old text and no `.NAME.*.tmp` stays behind."""
    import subprocess
    import sys

    path = tmp_path / "notes.md"
    path.write_text("the old notes\n")
    script = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from store.private_files import write_private_text\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        "    write_private_text(Path(sys.argv[1]), 'x' * 100_000)\n"
        "except OSError as error:\n"
        "    print(error.errno)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "27", done  # EFBIG, raised to the caller
    assert path.read_text() == "the old notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]
