"""`straylight mcp` beside the open chat (issue 14 §1–§3): the TUI, under the pilot, owns the
data dir; the MCP SDK's own client talks to a real `straylight mcp` process, whose tools run
inside the TUI through the owner's socket. Nothing is refused for the chat being open, and
what the agent saves, forgets or proposes shows up in the chat at once."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, Implementation

from agent.settings import Settings
from store.data_dir_lock import DataDirLock
from tests.support.cli import cli_env
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tests.test_owner_tui import SIZE, facts_line, memory_line, notices
from tui.app import StraylightApp


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


def result_of(outcome: CallToolResult) -> Any:
    assert not outcome.is_error, outcome.content
    return outcome.structured_content


async def test_an_agent_uses_the_memory_while_the_chat_is_open(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    env = cli_env(
        home,
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_WORKSPACE="demo",
        STRAYLIGHT_JOBS_ENABLED="false",
    )
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
