"""`straylight mcp` through the SDK's own client (`stdio_client` + `ClientSession`) against the
real server process, which runs each tool as a `straylight … --json` command against a real
DuckDB file and the HTTP Ollama stand-in.

(With the TUI owning the data dir: tests/test_mcp_with_tui.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Implementation

from memory.point_writes import Role
from store.data_dir_lock import DataDirLock, DataDirLocked
from tests.support.cli import DAY, NOW, Env, cli_env, run_cli
from tests.support.ollama_standin import OllamaStandIn
from tui.command_runner import CommandRunner
from tui.mcp_tools import MIN_HIT_CHARS, cut_content

TOOLS = {
    "memory_search",
    "memory_save",
    "memory_forget",
    "memory_status",
    "memory_load_doc",
    "memory_read",
    "memory_write",
}
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "by-hand", "version": "1"},
}
SAVE_CALL = {"name": "memory_save", "arguments": {"text": "The moon rises at nine tonight."}}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The directory the server runs in: a git root, so it is the workspace doc root."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def env(tmp_path: Path, standin: OllamaStandIn) -> Env:
    return cli_env(
        tmp_path / "home",
        tmp_path,
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_NOW=NOW,
        STRAYLIGHT_WORKSPACE="demo",
    )


@contextlib.asynccontextmanager
async def mcp_session(
    env: Env, cwd: Path, client: str = "claude-code", options: tuple[str, ...] = ()
) -> AsyncIterator[Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tui", "mcp", *options], env=env, cwd=cwd
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=Implementation(name=client, version="1")) as s,
        ):
            await s.initialize()
            yield s


async def cli_json(env: Env, *args: str) -> Any:
    """`straylight ARGS --json` as a child process (the tests run inside an event loop)."""
    runner = CommandRunner(env)
    try:
        outcome = await runner.run([*args, "--json"])
    finally:
        await runner.aclose()
    assert outcome.exit_code == 0, outcome.stderr
    return json.loads(outcome.stdout)


def result_of(outcome: CallToolResult) -> Any:
    assert not outcome.is_error, outcome.content
    return outcome.structured_content


def error_of(outcome: CallToolResult) -> str:
    """A tool error: one line of text, no traceback."""
    assert outcome.is_error, outcome.structured_content
    text = outcome.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text, text
    return text


async def test_the_tools_have_schemas_annotations_and_descriptions(
    env: Env, workspace: Path
) -> None:
    async with mcp_session(env, workspace) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        resources = {str(r.uri) for r in (await session.list_resources()).resources}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 80, tool.name
        assert tool.annotations is not None and tool.annotations.title, tool.name
    for name in ("memory_search", "memory_status", "memory_read"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["memory_forget"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["memory_save"].annotations.destructive_hint is False  # type: ignore[union-attr]
    assert tools["memory_write"].annotations.destructive_hint is False  # type: ignore[union-attr]
    search = tools["memory_search"].input_schema
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {"query", "k", "role"}
    assert "doc" in json.dumps(search["properties"]["role"])
    write = tools["memory_write"].input_schema
    assert set(write["properties"]) == {"key", "type", "body", "scope", "proof"}  # no ctx
    assert set(write["required"]) == {"key", "type", "body"}
    assert write["properties"]["type"]["enum"] == [
        "capability",
        "decision",
        "rule",
        "procedure",
        "fact",
    ]
    assert tools["memory_forget"].input_schema["required"] == ["id"]
    assert search["properties"]["role"]["anyOf"][0]["enum"] == list(get_args(Role))
    assert resources == {"straylight://longterm", "straylight://facts"}
    # what each tool returns is named too (every output schema was an empty open object)
    outputs = {name: tool.output_schema or {} for name, tool in tools.items()}
    hit = outputs["memory_search"]["$defs"]["SearchHit"]
    assert set(hit["required"]) == {"id", "role", "date", "score", "pinned", "content"}
    assert (
        outputs["memory_save"]["required"] == ["id"]
        and "note" in outputs["memory_save"]["properties"]
    )
    assert set(outputs["memory_forget"]["required"]) == {"id", "forgotten"}
    load = set(outputs["memory_load_doc"]["required"])
    assert load == {"path", "added", "updated", "unchanged", "removed", "embed_requests"}
    assert "facts" in outputs["memory_read"]["required"]
    assert set(outputs["memory_write"]["required"]) == {"status", "candidate", "note"}
    assert {"points", "index", "ollama", "headroom"} <= set(outputs["memory_status"]["required"])


async def test_save_search_forget_and_their_errors(env: Env, workspace: Path) -> None:
    async with mcp_session(env, workspace) as session:
        saved = result_of(
            await session.call_tool(
                "memory_save", {"text": f"The blyck deploy key id is {AWS_ID}, rotate monthly"}
            )
        )
        hits = result_of(await session.call_tool("memory_search", {"query": "blyck deploy"}))[
            "hits"
        ]
        assert [hit["id"] for hit in hits] == [saved["id"]]
        assert set(hits[0]) == {"id", "role", "date", "score", "pinned", "content"}
        assert (hits[0]["role"], hits[0]["date"], hits[0]["pinned"]) == ("user", DAY, True)
        assert AWS_ID not in hits[0]["content"] and "rotate monthly" in hits[0]["content"]
        as_doc = {"query": "blyck deploy", "role": "doc", "k": 3}
        assert result_of(await session.call_tool("memory_search", as_doc))["hits"] == []
        assert "non-empty" in error_of(await session.call_tool("memory_search", {"query": " "}))
        assert "non-empty" in error_of(await session.call_tool("memory_save", {"text": ""}))

        gone = result_of(await session.call_tool("memory_forget", {"id": saved["id"]}))
        assert gone == {"id": saved["id"], "forgotten": True}
        again = error_of(await session.call_tool("memory_forget", {"id": saved["id"]}))
        assert f"no memory point #{saved['id']}" in again
        after = result_of(await session.call_tool("memory_search", {"query": "blyck deploy"}))
        assert after["hits"] == []


async def test_status_and_a_failing_command_is_a_one_line_tool_error(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    expected = await cli_json(env, "status")
    async with mcp_session(env, workspace) as session:
        status = result_of(await session.call_tool("memory_status", {}))
        assert set(status) == set(expected)
        assert status["workspace"] == "demo" and status["points"]["total"] == 0
    # A holder that does not serve (a bare lock here): refused after the 3 s wait for an owner.
    with DataDirLock(tmp_path / "home"):
        async with mcp_session(env, workspace) as session:
            busy = error_of(await session.call_tool("memory_status", {}))
    assert "is in use by" in busy


async def test_write_proposes_a_candidate_named_after_the_client_and_read_finds_facts(
    env: Env, workspace: Path
) -> None:
    proposal = {
        "key": "Deploy: Blyck",
        "type": "procedure",
        "body": "Deploy blyck with `just deploy` from the repo root.",
        "proof": "ran it on 2031-02-01",
    }
    async with mcp_session(env, workspace, client="Claude Code") as session:
        written = result_of(await session.call_tool("memory_write", proposal))
        assert written["status"] == "pending_approval" and "approval" in written["note"]
        candidate = written["candidate"]
        assert (candidate["key"], candidate["status"]) == ("deploy:blyck", "pending")
        assert candidate["origin"] == "mcp:Claude Code"
        twice = error_of(await session.call_tool("memory_write", proposal))
        assert "already pending" in twice
        wrong = error_of(await session.call_tool("memory_write", {**proposal, "type": "wish"}))
        assert "type" in wrong
        # not a fact until the user approves it
        assert result_of(await session.call_tool("memory_read", {"key": "deploy:blyck"})) == {
            "facts": []
        }
        assert "key or a query" in error_of(await session.call_tool("memory_read", {}))

        pending = await cli_json(env, "candidates", "list")
        assert [(c["id"], c["origin"]) for c in pending] == [(candidate["id"], "mcp:Claude Code")]
        await cli_json(env, "candidates", "approve", str(candidate["id"]))
        await cli_json(env, "facts", "set", "deploy:docs", "--type", "fact", "--body",
                       "The docs of blyck deploy to the wiki")  # fmt: skip
        by_key = result_of(await session.call_tool("memory_read", {"key": "deploy:blyck"}))
        assert [f["key"] for f in by_key["facts"]] == ["deploy:blyck"]
        both = result_of(
            await session.call_tool("memory_read", {"key": "deploy:docs", "query": "blyck"})
        )
        keys = [f["key"] for f in both["facts"]]
        assert keys[0] == "deploy:docs" and set(keys) == {"deploy:docs", "deploy:blyck"}
        listed = await session.read_resource("straylight://facts")
    text = listed.contents[0].text  # type: ignore[union-attr]
    assert "- deploy:blyck (procedure, workspace): Deploy blyck with" in text


async def test_load_doc_reads_only_under_the_allowed_roots(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.md").write_text(
        "# Deploy\n\nBlyck deploys with just.\n\n# Test\n\nRun just test.\n"
    )
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.md").write_text("# Keys\n\nmy private notes\n")
    (workspace / "escape.md").symlink_to(outside / "secret.md")
    (workspace / "linked-dir").symlink_to(outside)
    async with mcp_session(env, workspace) as session:
        counts = result_of(await session.call_tool("memory_load_doc", {"path": "notes.md"}))
        assert (counts["added"], counts["path"]) == (2, str((workspace / "notes.md").resolve()))
        again = result_of(
            await session.call_tool("memory_load_doc", {"path": str(workspace / "notes.md")})
        )
        assert (again["added"], again["unchanged"]) == (0, 2)
        escapes = [str(outside / "secret.md"), "escape.md", "linked-dir/secret.md"]
        escapes.append("../private/secret.md")
        # outside, a missing file is refused like a present one: the caller learns nothing
        escapes += [str(outside / "missing.md"), "linked-dir/missing.md", "/etc/no-such-file"]
        for path in escapes:
            refused = error_of(await session.call_tool("memory_load_doc", {"path": path}))
            assert "outside the folders" in refused and "mcp_doc_roots" in refused, path
        assert "no such file" in error_of(
            await session.call_tool("memory_load_doc", {"path": "missing.md"})
        )
        docs = result_of(await session.call_tool("memory_search", {"query": "private notes"}))
        assert all("private" not in hit["content"] for hit in docs["hits"])
    allowed = {**env, "STRAYLIGHT_MCP_DOC_ROOTS": str(outside)}
    async with mcp_session(allowed, workspace) as session:
        loaded = result_of(await session.call_tool("memory_load_doc", {"path": "escape.md"}))
    assert loaded["added"] == 1


async def test_the_servers_options_reach_every_command_and_longterm_is_the_prompt_text(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "elsewhere"
    home.mkdir(mode=0o700)
    (home / "longterm.md").write_text(f"<!-- my own note -->\n- Call me Ada.\n- AWS: {AWS_ID}\n")
    options = ("--home", str(home), "--workspace", "blyck")
    async with mcp_session(env, workspace, options=options) as session:
        read = await session.read_resource("straylight://longterm")
        status = result_of(await session.call_tool("memory_status", {}))
    # masked as the prompt masks it (issue 15 §2): another agent never gets the raw secret
    assert read.contents[0].text == "- Call me Ada.\n- AWS: [REDACTED:aws_key]"  # type: ignore[union-attr]
    assert (status["home"], status["workspace"]) == (str(home), "blyck")


async def test_reading_a_mistyped_home_creates_nothing(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    """`straylight mcp --home TYPO`: the reading tools answer empty and leave no folder (before:
    the first call made the folder and its lock file, as the CLI's reads never do)."""
    typo = tmp_path / "hoem"
    async with mcp_session(env, workspace, options=("--home", str(typo))) as session:
        found = result_of(await session.call_tool("memory_search", {"query": "deploy"}))
        assert found["hits"] == []
        read = result_of(await session.call_tool("memory_read", {"key": "deploy"}))
        assert read["facts"] == []
        status = result_of(await session.call_tool("memory_status", {}))
        assert status["points"]["total"] == 0
    assert not typo.exists()


async def test_a_resource_that_cannot_be_read_is_one_line_naming_why(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    """Not the SDK's bare "Error reading resource" (and a traceback in the server's log):
    the facts' command error, and a `longterm.md` link planted while the server runs."""
    home = tmp_path / "home"
    async with mcp_session(env, workspace) as session:
        assert result_of(await session.call_tool("memory_save", {"text": "a first note"}))
        (home / "longterm.md").unlink(missing_ok=True)
        (home / "longterm.md").symlink_to(tmp_path / "elsewhere.md")
        with pytest.raises(MCPError) as linked:
            await session.read_resource("straylight://longterm")
    assert "longterm.md is a symbolic link" in str(linked.value), linked.value
    (home / "longterm.md").unlink()
    (home / "straylight.duckdb").write_bytes(b"not a database at all" * 100)
    async with mcp_session(env, workspace) as session:
        with pytest.raises(MCPError) as damaged:
            await session.read_resource("straylight://facts")
    message = str(damaged.value)
    assert "is damaged" in message and "\n" not in message, message


def raw_server(env: Env, workspace: Path, *, stderr: int) -> subprocess.Popen[bytes]:
    """`straylight mcp` in a child process, spoken to by hand over its stdin and stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=workspace,
    )


def save_through(server: subprocess.Popen[bytes]) -> None:
    """The handshake and one `memory_save` by hand: the server then owns the data dir."""
    assert server.stdin is not None and server.stdout is not None
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": SAVE_CALL},
    ):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
        if "id" in message:
            assert json.loads(server.stdout.readline())["id"] == message["id"]


@pytest.mark.parametrize(
    ("signum", "code", "line", "then_eof"),
    [
        (signal.SIGINT, 130, "straylight: interrupted", False),
        (signal.SIGTERM, 143, "straylight: stopped by SIGTERM", False),
        (signal.SIGTERM, 143, "straylight: stopped by SIGTERM", True),
        # killed by the signal: no line, exit -1, its socket left behind
        (signal.SIGHUP, 129, "straylight: stopped by SIGHUP", False),
    ],
)
def test_ctrl_c_or_sigterm_ends_the_server_and_frees_the_data_dir(
    env: Env,
    workspace: Path,
    tmp_path: Path,
    signum: int,
    code: int,
    line: str,
    then_eof: bool,
) -> None:
    """Started by hand (the README's command table), Ctrl+C must end it: it waited for a
    line on stdin (the SDK's reader thread) until Ctrl+D. SIGTERM (a client stopping it)
    releases the data dir too, like `ask`'s 143 — also when stdin ends while it releases
    (a supervisor that signals, then closes the pipes: it exited 0 without its line)."""
    if then_eof:  # a memory the server opens when it takes the data dir: a longer release
        assert run_cli(env, "remember", "The ferry leaves at nine.").returncode == 0
    server = raw_server(env, workspace, stderr=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    try:
        save_through(server)
        with pytest.raises(DataDirLocked):  # the server owns the data dir now
            DataDirLock(tmp_path / "home").acquire()
        server.send_signal(signum)
        if then_eof:
            server.stdin.close()
        assert server.wait(timeout=15) == code  # stdin still open: not ended by EOF
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.stderr is not None
    assert server.stderr.read().decode().strip().splitlines() == [line]
    with DataDirLock(tmp_path / "home"):  # released: the next process takes it over
        pass


def test_a_client_that_stops_reading_ends_the_server_as_a_closed_pipe(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    """The SDK wraps the broken pipe in an exception group: it read as an unexpected error
    (exit 1, "ExceptionGroup"); it is the closed reader's 141, quietly, the data dir freed."""
    server = raw_server(env, workspace, stderr=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    try:
        save_through(server)
        server.stdout.close()  # the client stops reading
        with contextlib.suppress(BrokenPipeError):
            for number in range(3, 8):
                ping = {"jsonrpc": "2.0", "id": number, "method": "ping"}
                server.stdin.write((json.dumps(ping) + "\n").encode())
                server.stdin.flush()
        assert server.wait(timeout=30) == 141
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.stderr is not None
    assert "ExceptionGroup" not in server.stderr.read().decode()
    with DataDirLock(tmp_path / "home"):  # released
        pass


# ------------------------------------------------------ memory_search cuts each hit's content


def test_cut_content_keeps_short_text_and_marks_a_cut() -> None:
    assert cut_content(7, "short", 100) == "short"
    assert cut_content(7, "x" * 500, 500) == "x" * 500
    cut = cut_content(7, "y" * 5000, 1000)
    assert cut.startswith("y" * 1000 + "\n[") and "y" * 1001 not in cut
    assert "memory #7" in cut and "5000 characters" in cut and "straylight recall" in cut
    assert cut_content(7, "z" * 5000, 0).startswith("z" * MIN_HIT_CHARS + "\n[")


async def test_search_cuts_a_huge_pinned_paste_at_memory_max_chars(
    env: Env, workspace: Path
) -> None:
    """A 2.5 MB paste must not go to the agent whole for one search: each hit's content is
    cut at `memory_max_chars` with a line naming the memory, its length and how to read it
    whole; the result's shape is unchanged and a short hit is whole."""
    cap = 1000
    paste = "harbour crane log " + "0123456789abcdef " * 3000  # ~51k characters
    async with mcp_session(dict(env, MEMORY_MAX_CHARS=str(cap)), workspace) as session:
        big = result_of(await session.call_tool("memory_save", {"text": paste}))["id"]
        small = result_of(
            await session.call_tool("memory_save", {"text": "harbour crane shift at six"})
        )["id"]
        hits = result_of(await session.call_tool("memory_search", {"query": "harbour crane"}))[
            "hits"
        ]
    by_id = {hit["id"]: hit for hit in hits}
    assert set(by_id) == {big, small}
    assert all(set(hit) == {"id", "role", "date", "score", "pinned", "content"} for hit in hits)
    assert by_id[small]["content"] == "harbour crane shift at six"
    content = by_id[big]["content"]
    assert content.startswith(paste[:cap] + "\n[") and len(content) < cap + 300
    assert f"memory #{big}" in content and f"{len(paste.strip())} characters" in content


async def test_write_takes_json_null_as_a_scope_or_proof_not_given(
    env: Env, workspace: Path
) -> None:
    """The README says JSON null means an optional argument is not given; memory_write
    refused `scope: null` and `proof: null` ("Input should be 'workspace' or 'global'")."""
    proposal = {"key": "ci:runner", "type": "fact", "body": "CI runs on the blue runner."}
    async with mcp_session(env, workspace) as session:
        written = result_of(
            await session.call_tool("memory_write", {**proposal, "scope": None, "proof": None})
        )
    candidate = written["candidate"]
    assert (candidate["key"], candidate["scope"], candidate["proof"]) == (
        "ci:runner",
        "workspace",
        "",  # as when it is left out
    )


async def test_a_boolean_is_no_memory_id_or_hit_count(env: Env, workspace: Path) -> None:
    """JSON's `true` is not an integer (the schema says integer): pydantic's lax mode took it
    as 1, so `memory_forget {"id": true}` deleted memory #1 and `k: true` asked for one hit."""
    async with mcp_session(env, workspace) as session:
        first = result_of(await session.call_tool("memory_save", {"text": "the first note"}))
        assert first["id"] == 1
        for flag in (True, False):
            refused = error_of(await session.call_tool("memory_forget", {"id": flag}))
            assert "id: Input should be a valid integer, not a boolean" in refused, refused
        refused = error_of(await session.call_tool("memory_search", {"query": "note", "k": True}))
        assert "k: Input should be a valid integer, not a boolean" in refused, refused
        hits = result_of(await session.call_tool("memory_search", {"query": "first note"}))
    assert [hit["id"] for hit in hits["hits"]] == [1]  # still there


async def test_the_string_null_is_text_not_a_missing_argument(env: Env, workspace: Path) -> None:
    """The SDK parsed string arguments as JSON for fields that are not plain `str`, so the
    text "null" became "not given": `memory_read {"key": "null"}` said it needed a key,
    `role: "null"` searched every role and `k: "null"` took the default. JSON null still
    means "not given"."""
    async with mcp_session(env, workspace) as session:
        saved = result_of(await session.call_tool("memory_save", {"text": "harbour crane at six"}))
        read = result_of(await session.call_tool("memory_read", {"key": "null"}))
        assert read == {"facts": []}  # looked up the key "null": there is none
        role = error_of(
            await session.call_tool("memory_search", {"query": "harbour", "role": "null"})
        )
        assert "role: Input should be 'user', 'assistant' or 'doc'" in role, role
        k = error_of(await session.call_tool("memory_search", {"query": "harbour", "k": "null"}))
        assert "k: Input should be a valid integer" in k, k
        for given in ({"k": None, "role": None}, {"k": "3", "role": "user"}):
            found = await session.call_tool("memory_search", {"query": "harbour", **given})
            assert [hit["id"] for hit in result_of(found)["hits"]] == [saved["id"]]
        no_key = error_of(await session.call_tool("memory_read", {"key": None}))
        assert "memory_read needs a key or a query" in no_key


async def test_load_doc_names_a_path_with_nul_or_a_newline_on_one_line(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    """A path the agent made up with a NUL got Python's `embedded null byte`, and one with a
    newline (missing, or outside the roots) gave a two-line error; now the path is named
    escaped, on one line."""
    (tmp_path / "out\nside.md").write_text("# T\n\nprivate\n")
    async with mcp_session(env, workspace) as session:
        nul = error_of(await session.call_tool("memory_load_doc", {"path": "notes\x00.md"}))
        missing = error_of(await session.call_tool("memory_load_doc", {"path": "a\nb.md"}))
        outside = error_of(
            await session.call_tool("memory_load_doc", {"path": str(tmp_path / "out\nside.md")})
        )
    assert nul.endswith("no such file: notes\\x00.md"), nul
    assert missing.endswith("no such file: a\\nb.md"), missing
    assert "out\\nside.md is outside the folders" in outside, outside


async def test_load_doc_calls_only_a_real_link_a_link(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    """`../private/secret.md` is a plain path out of the workspace: its refusal called it
    "a link to …" (the `..` was compared unresolved); a symlink out is still named one."""
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.md").write_text("# Keys\n\nmy private notes\n")
    (workspace / "escape.md").symlink_to(outside / "secret.md")
    async with mcp_session(env, workspace) as session:
        dotted = error_of(
            await session.call_tool("memory_load_doc", {"path": "../private/secret.md"})
        )
        linked = error_of(await session.call_tool("memory_load_doc", {"path": "escape.md"}))
    assert "../private/secret.md is outside the folders" in dotted, dotted
    assert f"escape.md (a link to {outside / 'secret.md'}) is outside" in linked, linked


async def test_a_workspace_holding_the_home_directory_is_no_doc_root(
    env: Env, tmp_path: Path
) -> None:
    """Started in the home directory, under a git root above it (a repo at /home, say), the
    workspace held the whole home directory and memory_load_doc read ~/.ssh; like `/` and
    the home directory itself it is no fence now, so only `mcp_doc_roots` count."""
    root = tmp_path / "machine"
    (root / ".git").mkdir(parents=True)
    home_dir = root / "me"
    (home_dir / ".ssh").mkdir(parents=True)
    (home_dir / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n")
    async with mcp_session({**env, "HOME": str(home_dir)}, home_dir) as session:
        refused = error_of(await session.call_tool("memory_load_doc", {"path": ".ssh/id_ed25519"}))
    assert "outside the folders memory_load_doc may read: there are none" in refused, refused
    assert "list your document folders in the mcp_doc_roots setting" in refused, refused


async def test_clients_loading_one_doc_at_once_store_it_once(
    env: Env, workspace: Path, standin: OllamaStandIn
) -> None:
    """Three agents load the same file at the same moment: each planned "add every section"
    before any wrote (the embedding in between), so the memory held it three times. Now one
    adds it and the others find it unchanged."""
    sections = 12
    (workspace / "notes.md").write_text(
        "".join(f"# Part {n}\n\nharbour crane step {n}.\n\n" for n in range(sections))
    )
    async with (
        mcp_session(env, workspace, client="a") as first,
        mcp_session(env, workspace, client="b") as second,
        mcp_session(env, workspace, client="c") as third,
    ):
        result_of(await first.call_tool("memory_status", {}))  # one owner serves the others
        standin.fail_next("delay", path="/api/embed", seconds=1.0)
        loads = [
            session.call_tool("memory_load_doc", {"path": "notes.md"})
            for session in (first, second, third)
        ]
        reports = [result_of(outcome) for outcome in await asyncio.gather(*loads)]
        status = result_of(await first.call_tool("memory_status", {}))
    assert sorted((r["added"], r["unchanged"]) for r in reports) == [
        (0, sections),
        (0, sections),
        (sections, 0),
    ]
    assert status["points"]["doc"] == sections


async def test_clients_proposing_one_fact_at_once_leave_one_candidate(
    env: Env, workspace: Path
) -> None:
    """The gate turns away a proposal that is already pending; three agents proposing the
    same fact at the same moment each passed its check before any candidate was written, so
    three identical candidates waited for approval."""
    proposal = {"key": "deploy:blyck", "type": "procedure", "body": "Deploy with just."}
    async with (
        mcp_session(env, workspace, client="a") as first,
        mcp_session(env, workspace, client="b") as second,
        mcp_session(env, workspace, client="c") as third,
    ):
        result_of(await first.call_tool("memory_status", {}))  # one owner serves the others
        writes = [s.call_tool("memory_write", proposal) for s in (first, second, third)]
        outcomes = await asyncio.gather(*writes)
    made = [outcome for outcome in outcomes if not outcome.is_error]
    assert len(made) == 1, [outcome.content for outcome in outcomes]
    refused = [error_of(outcome) for outcome in outcomes if outcome.is_error]
    assert all(text.endswith("not proposed: already pending") for text in refused), refused
    assert len(await cli_json(env, "candidates", "list")) == 1


async def test_save_and_load_doc_over_the_size_limits_are_tool_errors_storing_nothing(
    env: Env, workspace: Path
) -> None:
    """memory_save over 65,536 characters and memory_load_doc of a file over 4 MiB or with a
    section over 65,536 characters: the CLI's one line as the tool error, nothing stored."""
    (workspace / "huge.md").write_text("# Log\n\n" + "crane log line\n" * 300_000)
    (workspace / "long.md").write_text("# Fine\n\nShort.\n\n# Dump\n\n" + "y" * 70_000 + "\n")
    async with mcp_session(env, workspace) as session:
        too_long = error_of(await session.call_tool("memory_save", {"text": "z" * 65_537}))
        assert "65,537 characters" in too_long and "65,536" in too_long, too_long
        huge = error_of(await session.call_tool("memory_load_doc", {"path": "huge.md"}))
        assert "huge.md" in huge and "4 MiB" in huge, huge
        section = error_of(await session.call_tool("memory_load_doc", {"path": "long.md"}))
        assert "long.md" in section and "'Dump'" in section and "65,536" in section, section
        status = result_of(await session.call_tool("memory_status", {}))
    assert status["points"]["total"] == 0


def test_a_request_with_a_lone_surrogate_is_answered_and_the_server_goes_on(
    env: Env, workspace: Path
) -> None:
    """JSON allows `"\\ud800"`; pydantic's parser refuses it, so the SDK dropped the request
    and the client waited forever. It is answered (the character stored as U+FFFD)."""
    import selectors

    server = raw_server(env, workspace, stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    watch = selectors.DefaultSelector()
    watch.register(server.stdout, selectors.EVENT_READ)

    def send(line: str) -> None:
        server.stdin.write(line.encode() + b"\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]

    def answer() -> dict[str, Any]:
        assert watch.select(timeout=60), "no answer within 60 s"
        return json.loads(server.stdout.readline())  # type: ignore[union-attr]

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}))
        assert answer()["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = '"method": "tools/call", "params": {"name": "memory_save", "arguments": '
        send('{"jsonrpc": "2.0", "id": 2, ' + call + '{"text": "gate code 4711 \\ud800 east"}}}')
        saved = answer()
        assert saved["id"] == 2 and not saved["result"].get("isError"), saved
        search = '{"name": "memory_search", "arguments": {"query": "gate code east"}}'
        send('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ' + search + "}")
        found = answer()
        hits = found["result"]["structuredContent"]["hits"]
        assert [hit["content"] for hit in hits] == ["gate code 4711 \ufffd east"]
    finally:
        server.terminate()
        server.wait(timeout=30)


async def test_a_data_dir_that_fails_its_check_is_each_tools_error_until_fixed(
    env: Env, workspace: Path, tmp_path: Path
) -> None:
    """A link planted at longterm.md made `straylight mcp` exit before the handshake: the
    client showed "connection closed" and nothing more. Now it serves, every tool call is
    the check's one line, and once the link is gone the tools work."""
    home = Path(env["STRAYLIGHT_HOME"])
    home.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the prompt\n")
    (home / "longterm.md").symlink_to(secret)
    async with mcp_session(env, workspace) as session:
        refused = error_of(await session.call_tool("memory_save", {"text": "a note"}))
        assert "longterm.md is a symbolic link" in refused, refused
        searched = error_of(await session.call_tool("memory_search", {"query": "note"}))
        assert searched.endswith(refused.split(": ", 1)[1]), searched
        assert not (home / "straylight.duckdb").exists()  # nothing was written
        (home / "longterm.md").unlink()
        saved = result_of(await session.call_tool("memory_save", {"text": "a note"}))
    assert saved["id"] == 1
    assert secret.read_text() == "not for the prompt\n"


async def test_a_search_through_the_server_counts_no_embed_request(
    env: Env, workspace: Path, standin: OllamaStandIn
) -> None:
    """`status`'s embed_requests counts the requests of commands that write; `recall` is a
    reading command. Run by the server (the owner of the data dir, its memory open for
    writing) it was counted all the same."""
    async with mcp_session(env, workspace) as session:
        result_of(await session.call_tool("memory_save", {"text": "the harbour crane at six"}))
        before = result_of(await session.call_tool("memory_status", {}))["embed_requests"]
        embeds = len([r for r in standin.requests if r.path == "/api/embed"])
        for _ in range(2):
            result_of(await session.call_tool("memory_search", {"query": "harbour crane"}))
        after = result_of(await session.call_tool("memory_status", {}))["embed_requests"]
    assert len([r for r in standin.requests if r.path == "/api/embed"]) > embeds  # it embedded
    assert before >= 1 and after == before


async def test_longterm_of_a_data_dir_that_fails_its_check_is_not_served(
    env: Env, workspace: Path
) -> None:
    """The resource read the file the check exists to distrust (a data dir others can
    write to); now it is the check's one line, as every tool's."""
    home = Path(env["STRAYLIGHT_HOME"])
    home.mkdir()
    (home / "longterm.md").write_text("# me\nI am whoever wrote this.\n")
    home.chmod(0o777)
    try:
        async with mcp_session(env, workspace) as session:
            refused = error_of(await session.call_tool("memory_status", {}))
            with pytest.raises(MCPError) as raised:
                await session.read_resource("straylight://longterm")
        assert "writable by other users" in refused, refused
        assert "writable by other users" in str(raised.value), raised.value
        assert "whoever wrote this" not in str(raised.value)
    finally:
        home.chmod(0o700)


async def test_a_data_dir_that_cannot_be_one_is_named_by_the_tools(
    env: Env, workspace: Path
) -> None:
    env = {**env, "STRAYLIGHT_HOME": "/proc/straylight-not-a-dir"}
    async with mcp_session(env, workspace) as session:
        refused = error_of(await session.call_tool("memory_save", {"text": "a note"}))
    assert refused.endswith(
        "cannot use data dir /proc/straylight-not-a-dir: No such file or directory"
    ), refused


async def test_a_save_without_a_vector_says_so_and_a_bad_key_beside_a_query_is_skipped(
    env: Env, workspace: Path, standin: OllamaStandIn
) -> None:
    standin.set_models(["llama3.2"])  # no embedding model
    async with mcp_session(env, workspace) as session:
        saved = result_of(await session.call_tool("memory_save", {"text": "The ferry is late."}))
        assert "no vector yet" in saved["note"] and "nomic-embed-text" in saved["note"], saved
        await cli_json(env, "facts", "set", "ferry:pier", "--type", "fact", "--body", "pier four")
        read = result_of(
            await session.call_tool("memory_read", {"key": "!!!", "query": "ferry pier"})
        )
        assert [fact["key"] for fact in read["facts"]] == ["ferry:pier"], read
        refused = error_of(await session.call_tool("memory_read", {"key": "!!!"}))
        assert "empty fact key" in refused
