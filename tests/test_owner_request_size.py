"""A command whose request is too large for the owner socket (`MAX_FRAME_BYTES`: a stdin of
more than 64 MiB piped to `remember -`) while another process owns the data dir: one line,
exit 2, at once — as alone, where the command refuses such a text by its own limit. The
owner dropped the frame unanswered, so the client took it for an owner not serving, waited
3 s and said `… is in use by PID n (another Straylight?)`, exit 6. Since the thirty-second
session the client refuses more than 16 MiB of standard input before it asks anyone."""

from __future__ import annotations

from pathlib import Path

from store.owner_socket import MAX_FRAME_BYTES, SOCKET_FILENAME
from tests.support.cli import assert_ok, cli_env, run_cli_process
from tests.support.ollama_standin import OllamaStandIn
from tui.command_runner import CommandRunner

TOO_MUCH = "a" * (MAX_FRAME_BYTES + 2**20)  # the frame's limit is checked per 64 KiB read


async def test_a_request_too_large_for_the_socket_is_one_line_exit_2(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    import asyncio

    env = cli_env(home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_WORKSPACE="demo")
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    alone = run_cli_process(env, "remember", "-", stdin=TOO_MUCH)
    assert alone.returncode == 2, alone.stderr  # over the text limit, as alone
    runner = CommandRunner(env=env, cwd=tmp_path)
    try:
        assert (await runner.run(["recall", "ferry", "--json"])).exit_code == 0  # owns, serves
        assert (home / SOCKET_FILENAME).exists()
        served = await asyncio.to_thread(run_cli_process, env, "remember", "-", stdin=TOO_MUCH)
        usual = await asyncio.to_thread(run_cli_process, env, "remember", "pier four again")
    finally:
        await runner.aclose()
    assert served.returncode == 2, served.stderr
    [line] = served.stderr.splitlines()
    # Not taken for an owner that does not serve (its 3 s wait, then "in use", exit 6).
    assert line.startswith("straylight: ") and "in use" not in line, line
    # the client's own limit on standard input (16 MiB) comes before the socket's (64 MiB)
    assert line == "straylight: standard input is over 16 MiB: not read", line
    assert_ok(usual)  # the owner still serves
    assert usual.stdout.startswith("remembered #")
