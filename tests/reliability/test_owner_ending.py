"""Issue 7, part 5: a second `ask` served by a first one that ends. The owner lets its
clients' running commands finish for up to 10 s (README, exit code 6), then cancels them.
The served `ask` was cut with exit 130 ("interrupted") and not a word, and its reply was
logged as "cancelled by the user", who had done nothing. Now it says why in one line (exit
1, as a client of a killed owner gets), and the log's reason says the same."""

from __future__ import annotations

import json
import subprocess
import time

from tests.reliability import corruption_support
from tests.reliability.corruption_support import Env, popen_cli, run_cli
from tests.support.ollama_standin import OllamaStandIn

seed_template = corruption_support.seed_template
home = corruption_support.home
env = corruption_support.env

LONG = " ".join(f"w{i}" for i in range(80))  # 24 s at 0.3 s a chunk: past the 10 s grace
WAIT = 60.0


def _communicate(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=WAIT)
    return proc.returncode, out.decode(), err.decode()


def test_a_served_ask_cut_by_its_owner_ending_says_so(env: Env, standin: OllamaStandIn) -> None:
    standin.token_delay = 0.3
    standin.script_reply("short reply here")
    standin.script_reply(LONG)
    owner = popen_cli(env, "ask", "first short one")
    deadline = time.monotonic() + WAIT
    while not standin.chat_requests() and time.monotonic() < deadline:
        time.sleep(0.05)
    client = popen_cli(env, "ask", "second long one")
    owner_code, _out, owner_err = _communicate(owner)
    assert (owner_code, owner_err) == (0, "")
    code, out, err = _communicate(client)
    assert out.startswith("w0 w1")
    assert code == 1, (code, err)
    [line] = err.splitlines()
    assert line.startswith("straylight: ") and "ended" in line and "kept" in line
    standin.token_delay = 0.0
    history = json.loads(run_cli(env, "history", "--json").stdout)
    cut = [m for m in history if m["role"] == "assistant" and m["content"].startswith("w0")]
    assert [m["status"] for m in cut] == ["cancelled"]
    assert "ended" in cut[0]["reason"] and "user" not in cut[0]["reason"]
