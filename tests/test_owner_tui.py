"""The TUI owns the data dir and serves the CLI (issue 14 §2, §3), under the pilot.

The app runs in this process holding the data-dir lock, as `straylight` does; the clients
are real `straylight` processes. Their output and exit codes are those of the same commands
with no owner; what they write shows up in the open chat at once (sidebar counts, a notice
naming new fact candidates); a bounded burst of clients and the chat's own saving, recalling
and forgetting loses nothing and agrees with the database afterwards.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from agent.settings import Settings
from memory.dream import CardDraft
from memory.hypotheses import Hypotheses
from store.daily_log import DailyLog
from store.data_dir_lock import DataDirLock
from store.database import database_path, open_database
from store.owner_socket import SOCKET_FILENAME
from tests.support.cli import CliResult, assert_ok, cli_env, run_cli_process, spawn_many
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, wait_until
from tests.test_conversations import CURRENT, KEYS, write_sample_logs
from tui.app import StraylightApp
from tui.command_runner import CommandRunner
from tui.widgets.status_sidebar import StatusSidebar

SIZE = (110, 32)
READS = [
    ["recall", "night ferry", "--json"],
    ["recall", "night ferry"],
    ["facts", "list", "--json"],
    ["facts", "get", "no:such"],
    ["forget", "999"],
    ["candidates", "list", "--json"],
]


def env_for(home: Path, tmp_path: Path, standin: OllamaStandIn) -> dict[str, str]:
    return cli_env(
        home,
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_WORKSPACE="demo",
        STRAYLIGHT_JOBS_ENABLED="false",
    )


def owner_settings(make_settings: Callable[..., Settings], standin: OllamaStandIn) -> Settings:
    return make_settings(ollama_host=standin.host, jobs_enabled=False)


def seen(result: CliResult) -> tuple[int, str, str]:
    return result.returncode, result.stdout, result.stderr


def memory_line(app: StraylightApp) -> str:
    state = app.query_one(StatusSidebar).state
    return state.memory_line if state is not None else ""


def facts_line(app: StraylightApp) -> str:
    state = app.query_one(StatusSidebar).state
    return state.facts_line if state is not None else ""


async def clients(env: dict[str, str], *commands: list[str]) -> list[CliResult]:
    """`straylight` processes side by side, off the app's event loop."""
    return await asyncio.to_thread(spawn_many, [(env, list(c), None) for c in commands])


def add_card(settings: Settings) -> int:
    with open_database(database_path(settings.home), clock=settings.clock) as db:
        draft = CardDraft(
            statement="The night ferry is late whenever the wind turns east.",
            source_ids=("point:1", "point:2"),
            prediction="At least 3 of the next 5 east-wind nights the ferry leaves late.",
            measurement="Count late departures in the harbour log over the next 14 days.",
        )
        return Hypotheses(db).create(draft, workspace="demo", reason="").id


async def test_cli_commands_while_the_tui_owns_the_dir_print_what_they_print_alone(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    assert_ok(run_cli_process(env, "facts", "set", "ferry:pier", "--type", "fact", "--body", "4"))
    card = add_card(owner_settings(make_settings, standin))
    longterm = home / "longterm.md"  # (the TUI would write its template: status shows it)
    longterm.write_text("# Long-term memory\n\nThe user takes the night ferry.\n")
    longterm.chmod(0o600)
    # one after another: side by side, `facts get` (a writer: it counts a use) holds the
    # lock without serving, and on a loaded machine `forget` waited out its 3 s (exit 6) —
    # the documented rule for a holder that does not serve, not what this test compares
    alone = [await asyncio.to_thread(run_cli_process, env, *argv) for argv in READS]
    alone_status = run_cli_process(env, "status", "--json")
    settings = owner_settings(make_settings, standin)
    with DataDirLock(settings.home):  # as `straylight` takes it before the app starts
        app = StraylightApp(settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
            await wait_until(pilot, lambda: memory_line(app).startswith("1 point"), what="count")
            assert (home / SOCKET_FILENAME).exists()
            owned_status = await asyncio.to_thread(run_cli_process, env, "status", "--json")
            assert json.loads(owned_status.stdout) == json.loads(alone_status.stdout)
            assert seen(owned_status) == seen(alone_status)
            owned = await clients(env, *READS)
            assert [seen(r) for r in owned] == [seen(r) for r in alone]
            # A CommandRunner (the MCP server's) in the owner's process runs them here.
            runner = CommandRunner(env=env, cwd=tmp_path)
            try:
                for argv, before in zip(READS, alone, strict=True):
                    outcome = await runner.run(argv)
                    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == seen(before)
                assert not runner._owned  # borrowed the TUI's memory, took nothing over
            finally:
                await runner.aclose()

            # Writes from other clients: the chat shows them at once.
            [saved] = await clients(env, ["remember", "The day ferry leaves from pier two."])
            assert (saved.returncode, saved.stdout, saved.stderr) == (0, "remembered #2\n", "")
            await wait_until(pilot, lambda: memory_line(app).startswith("2 points"), what="2")
            # (the data dir named before the command, as the README shows it: still seen)
            [forgot] = await clients(env, ["--home", str(home), "forget", "1"])
            assert seen(forgot) == (0, "forgot #1\n", "")
            await wait_until(pilot, lambda: memory_line(app).startswith("1 point"), what="1")
            [validated] = await clients(env, ["hypotheses", "validate", str(card)])
            assert_ok(validated)
            await wait_until(
                pilot,
                lambda: any("new fact candidate" in n for n in notices(app)),
                what="the candidate notice",
            )
            [notice] = [n for n in notices(app) if "new fact candidate" in n]
            assert "from hypothesis" in notice and "/candidates approve" in notice
            await wait_until(pilot, lambda: "1 pending" in facts_line(app), what="1 pending")
            # Reading again changes nothing on screen (no second notice).
            await clients(env, ["candidates", "list"])
            assert len([n for n in notices(app) if "new fact candidate" in n]) == 1
            # A second TUI is refused, naming this process.
            [tui] = await clients(env, [])
            assert tui.returncode == 6 and "is in use by PID" in tui.stderr
        assert not (home / SOCKET_FILENAME).exists()
    after = json.loads(run_cli_process(env, "status", "--json").stdout)
    assert after["points"]["total"] == 1
    assert after["facts"]["pending_candidates"] == 1


async def test_a_bounded_burst_of_clients_and_the_chat_loses_nothing(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    settings = owner_settings(make_settings, standin)
    with DataDirLock(settings.home):
        app = StraylightApp(settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                pilot,
                lambda: app.owner_server is not None and app.engine.memory is not None,
                what="serving, and the chat's memory open",
            )
            memory = app.engine.memory
            assert memory is not None
            burst = [["remember", f"Burst memory number {i} about harbour {i}."] for i in range(6)]
            burst += [["recall", "harbour", "--json"], ["status", "--json"], ["forget", "1"]]
            burst += [
                ["facts", "set", f"burst:{i}", "--type", "fact", "--body", "b"] for i in (1, 2)
            ]

            async def chat_side() -> list[int]:  # the TUI's own saving while clients run
                ids = []
                for i in range(4):
                    ids.append(await memory.remember(f"Chat side memory {i} about the quay."))
                    await asyncio.to_thread(memory.store.recall, "quay", vector=None)
                await asyncio.to_thread(memory.store.forget, ids[0])
                return ids

            results, ids = await asyncio.gather(clients(env, *burst), chat_side())
            for result in results:
                assert_ok(result)
            await wait_until(pilot, lambda: memory_line(app).startswith("9 points"), what="9")
            status = memory.store.status()
        # 1 seed + 6 burst + 4 chat − 1 forgotten by a client − 1 by the chat
    assert status["points"]["total"] == 9
    final = json.loads(run_cli_process(env, "status", "--json").stdout)
    assert final["points"]["total"] == 9
    assert final["index"] == {"state": "in_sync", "size": 9}
    found = run_cli_process(env, "recall", "Burst memory", "--json", "--k", "20")
    recalled = json.loads(found.stdout)
    contents = {h["content"] for h in recalled["hits"]}
    assert {f"Burst memory number {i} about harbour {i}." for i in range(6)} <= contents
    facts = json.loads(run_cli_process(env, "facts", "list", "--json").stdout)
    assert {f["key"] for f in facts} == {"burst:1", "burst:2"}
    assert ids[0] not in {h["id"] for h in recalled["hits"]}


async def beside_the_chat(
    make_settings: Callable[..., Settings],
    standin: OllamaStandIn,
    home: Path,
    tmp_path: Path,
    *commands: list[str],
) -> tuple[list[CliResult], DailyLog]:
    """`commands` from other terminals, side by side, while the chat serves its data dir
    with the sample logs and has `CURRENT` open; their results and the daily log after."""
    env = env_for(home, tmp_path, standin)
    settings = owner_settings(make_settings, standin)
    with DataDirLock(settings.home):
        app = StraylightApp(settings)
        write_sample_logs(app.engine.daily_log)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
            app.chat.conversation_id = CURRENT
            results = await clients(env, *commands)
    return results, app.engine.daily_log


async def test_a_client_cannot_delete_the_conversation_open_in_the_chat(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    """`conversations delete` forwarded into the TUI refuses the conversation the chat has
    open, as the conversations screen does (its messages would vanish under the chat, which
    goes on writing to that id); any other conversation is deleted as usual."""
    (refused, other), log = await beside_the_chat(
        make_settings,
        standin,
        home,
        tmp_path,
        ["conversations", "delete", CURRENT, "--yes"],
        ["conversations", "delete", KEYS, "--yes"],
    )
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"straylight: {CURRENT} is the conversation open in the chat: "
        "start a new one there (Ctrl+N) first\n"
    )
    assert_ok(other)
    kept = {message.conversation_id for day in log.days() for message in log.read_day(day)}
    assert CURRENT in kept and KEYS not in kept


async def test_a_client_ask_cannot_write_into_the_conversation_open_in_the_chat(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    """`ask --conversation ID` forwarded into the TUI, ID the chat's open conversation: its
    exchange went into the log under the chat, unseen there, and the chat's /retry then
    regenerated that one instead of the reply on screen. Refused like `conversations delete`
    (nothing logged); another conversation is continued as usual."""
    (refused, other), log = await beside_the_chat(
        make_settings,
        standin,
        home,
        tmp_path,
        ["ask", "--conversation", CURRENT, "From another terminal"],
        ["ask", "--conversation", KEYS, "From another terminal too"],
    )
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"straylight: {CURRENT} is the conversation open in the chat: write to it "
        "there, or continue another one\n"
    )
    assert_ok(other)
    texts = {
        (message.conversation_id, message.content)
        for day in log.days()
        for message in log.read_day(day)
    }
    assert (CURRENT, "From another terminal") not in texts
    assert (KEYS, "From another terminal too") in texts


async def test_quitting_the_chat_while_a_client_command_runs_gives_the_client_all_its_output(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    # Textual puts the real stdout back when its message loop ends, before `on_unmount`: a
    # forwarded command still running then printed the rest of its output on the chat's
    # terminal, and its client got a cut reply with exit 0 (an MCP tool: "printed no JSON").
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    reply = "A long story about the ferry, told slowly, chunk by chunk."
    standin.script_reply(reply)
    standin.token_delay = 0.1
    settings = owner_settings(make_settings, standin)
    with DataDirLock(settings.home):
        app = StraylightApp(settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
            server = app.owner_server
            assert server is not None
            asking = asyncio.create_task(
                asyncio.to_thread(run_cli_process, env, "ask", "Tell me about the ferry")
            )
            await wait_until(pilot, lambda: bool(server._runs), what="the ask running")
            await pilot.press("ctrl+q")
            answer = await asking
    assert seen(answer) == (0, reply + "\n", "")


def test_the_commands_that_refresh_the_chat_are_those_that_may_have_written() -> None:
    """A client's `conversations delete` forgets memory points, `rename` sets a title: the
    chat refreshes after them as after `forget`; listing and exporting wrote nothing."""
    from tui.owner_live import may_have_written

    wrote = [
        ["conversations", "delete", KEYS, "--yes"],
        ["conversations", "rename", KEYS, "Keys"],
        ["--home", "/data", "forget", "3"],
        ["--workspace", "demo", "facts", "set", "k", "--type", "fact", "--body", "b"],
    ]
    read = [
        ["conversations"],
        ["conversations", "--json"],
        ["conversations", "list"],
        ["conversations", "export", KEYS, "--format", "json"],
        ["--home", "/data", "facts", "list"],
        ["recall", "ferry"],
    ]
    assert [may_have_written(argv, 0) for argv in wrote] == [True] * len(wrote)
    assert [may_have_written(argv, 0) for argv in read] == [False] * len(read)
