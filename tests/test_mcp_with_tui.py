"""`straylight mcp` beside the open chat (issue 14 §1–§3): the TUI, under the pilot, owns the
data dir; the MCP SDK's own client talks to a real `straylight mcp` process, whose tools run
inside the TUI through the owner's socket. Nothing is refused for the chat being open, and
what the agent saves, forgets or proposes shows up in the chat at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, Implementation

from agent.settings import Settings
from store.data_dir_lock import DataDirLock, DataDirLocked
from tests.support.cli import REPO_ROOT, cli_env
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, wait_until
from tests.test_owner_socket import client_process
from tests.test_owner_tui import SIZE, facts_line, memory_line
from tui.app import StraylightApp
from tui.owner_handover import ask_handover, lock_for_chat


@contextlib.asynccontextmanager
async def mcp_session(env: dict[str, str], cwd: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tui", "mcp"], env=env, cwd=cwd
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=Implementation(name="zed", version="1")) as s,
        ):
            await s.initialize()
            yield s


def agent_side(home: Path, tmp_path: Path, standin: OllamaStandIn) -> tuple[Path, dict[str, str]]:
    """The agent's working directory (a git root) and the environment its server runs in."""
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    env = cli_env(
        home,
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_WORKSPACE="demo",
        STRAYLIGHT_JOBS_ENABLED="false",
    )
    return workspace, env


def result_of(outcome: CallToolResult) -> Any:
    assert not outcome.is_error, outcome.content
    return outcome.structured_content


async def test_an_agent_uses_the_memory_while_the_chat_is_open(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    workspace, env = agent_side(home, tmp_path, standin)
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False, workspace="demo")
    with DataDirLock(settings.home):  # as `straylight` takes it before the app starts
        app = StraylightApp(settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
            async with mcp_session(env, workspace) as session:
                saved = result_of(
                    await session.call_tool(
                        "memory_save", {"text": "The night ferry leaves from pier four."}
                    )
                )
                await wait_until(
                    pilot, lambda: memory_line(app).startswith("1 point"), what="the save"
                )
                hits = result_of(await session.call_tool("memory_search", {"query": "ferry"}))
                assert [hit["id"] for hit in hits["hits"]] == [saved["id"]]
                status = result_of(await session.call_tool("memory_status", {}))
                assert status["points"]["total"] == 1
                proposed = result_of(
                    await session.call_tool(
                        "memory_write",
                        {"key": "ferry:pier", "type": "fact", "body": "The ferry uses pier 4."},
                    )
                )
                assert proposed["candidate"]["origin"] == "mcp:zed"
                await wait_until(pilot, lambda: "1 pending" in facts_line(app), what="pending")
                await wait_until(
                    pilot,
                    lambda: any("new fact candidate" in n for n in notices(app)),
                    what="the candidate notice",
                )
                result_of(await session.call_tool("memory_forget", {"id": saved["id"]}))
                await wait_until(
                    pilot, lambda: memory_line(app).startswith("0 points"), what="the forget"
                )


async def test_the_chat_starts_while_an_agents_server_holds_the_data_dir(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    """`straylight mcp` keeps the data dir after its first call; a TUI started then is not
    refused (exit 6): the server hands the dir over and forwards its tools to the chat."""
    workspace, env = agent_side(home, tmp_path, standin)
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False, workspace="demo")
    async with mcp_session(env, workspace) as session:
        first = result_of(
            await session.call_tool("memory_save", {"text": "The kiln runs at 1240 degrees."})
        )
        with pytest.raises(DataDirLocked):  # the server owns the data dir now
            DataDirLock(settings.home).acquire()
        lock = await asyncio.to_thread(lock_for_chat, settings.home)  # as `straylight` does
        try:
            app = StraylightApp(settings)
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
                hits = result_of(await session.call_tool("memory_search", {"query": "kiln"}))
                assert [hit["id"] for hit in hits["hits"]] == [first["id"]]
                result_of(await session.call_tool("memory_save", {"text": "The glaze is celadon."}))
                await wait_until(
                    pilot, lambda: memory_line(app).startswith("2 points"), what="the save"
                )
        finally:
            lock.release()


async def test_a_chat_starting_during_another_clients_call_waits_for_it_and_is_handed_the_dir(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    """Another client's command running in `straylight mcp` at that moment (a second agent's
    server forwards its calls to the first) is a moment, not a reason to refuse the chat
    (exit 6, "in use by PID n"): the starting TUI asks again until it has ended."""
    workspace, env = agent_side(home, tmp_path, standin)
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False, workspace="demo")
    async with mcp_session(env, workspace) as session:
        result_of(await session.call_tool("memory_save", {"text": "The kiln runs at 1240."}))
        standin.script_reply("one two three four five six seven eight nine ten")
        standin.token_delay = 0.1
        client = client_process(env, "ask", "How hot does the kiln run?")
        try:
            assert client.stdout is not None
            ready, _, _ = await asyncio.to_thread(select.select, [client.stdout], [], [], 30)
            assert ready, "the forwarded ask never started its reply"
            lock = await asyncio.to_thread(lock_for_chat, settings.home)  # as `straylight` does
            lock.release()
            out, err = await asyncio.to_thread(client.communicate, timeout=30)
            assert (client.returncode, err) == (0, "") and "ten" in out  # it ended whole
        finally:
            standin.token_delay = 0.0
            if client.poll() is None:
                client.kill()
                client.communicate()


async def test_a_chat_waiting_for_the_servers_long_call_says_so_then_gets_the_dir(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    """The server hands the data dir over once its own running call has ended (a long
    `memory_load_doc`: 15 s for 6,000 sections); the TUI, with nothing on the screen yet,
    says once that it waits (`on_wait`) instead of sitting blank."""
    workspace, env = agent_side(home, tmp_path, standin)
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False, workspace="demo")
    doc = workspace / "kiln.md"
    doc.write_text("# Kiln\n\n## Firing\n\nThe kiln fires at 1240 degrees.\n")

    def embeds() -> int:
        return len([r for r in standin.requests if r.path == "/api/embed"])

    async with mcp_session(env, workspace) as session:
        result_of(await session.call_tool("memory_save", {"text": "The glaze is celadon."}))
        before = embeds()
        standin.fail_next("delay", path="/api/embed", seconds=2.5)
        loading = asyncio.create_task(session.call_tool("memory_load_doc", {"path": str(doc)}))
        deadline = time.monotonic() + 10
        while embeds() == before and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert embeds() > before, "the load never asked for its embedding"
        waits: list[float] = []
        lock = await asyncio.to_thread(
            lock_for_chat, settings.home, lambda: waits.append(time.monotonic())
        )
        lock.release()
        assert len(waits) == 1
        assert result_of(await loading)["added"] == 1


async def test_a_chat_started_while_the_owner_still_opens_the_memory_waits_for_it(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path
) -> None:
    """`straylight mcp`'s first call holds the lock while it opens the memory (an old
    store's upgrade: 8 s at 100k points) and serves only then: nobody answers the chat's
    handover yet. The chat waits (saying so) instead of exit 6; here the owner ends."""
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path;"
            "from store.data_dir_lock import DataDirLock;"
            "lock = DataDirLock(Path(sys.argv[1])).acquire(); print('held', flush=True);"
            "time.sleep(1.5)",
            str(settings.home),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waits: list[float] = []
        lock = await asyncio.to_thread(
            lock_for_chat, settings.home, lambda: waits.append(time.monotonic())
        )
        lock.release()
        assert len(waits) == 1
    finally:
        holder.kill()
        holder.communicate()


async def test_a_chat_does_not_hand_its_data_dir_to_a_second_chat(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """Only an owner that may give the data dir up agrees: a chat says no (exit 6 stays)."""
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False)
    with DataDirLock(settings.home):
        app = StraylightApp(settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
            assert await asyncio.to_thread(ask_handover, settings.home) is False
            assert app.owner_server is not None  # still serving
