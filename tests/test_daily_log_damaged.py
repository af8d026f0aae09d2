"""A crash that cuts a daily log inside a message's metadata line (issue 15 §8): the fragment
(`<!-- straylight {"ti`) is a damaged header, not the message's text, and `ask
--conversation` never sends it to the model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

from store.daily_log import DailyLog, LogMessage, format_message, parse_messages
from tests.support.cli import DAY, NOW, run_cli
from tests.support.ollama_standin import OllamaStandIn

Env = dict[str, str]
CONVERSATION = "20310203-040000-abc123"
CUT = '### assistant\n<!-- straylight {"ti'  # a kill inside the reply's metadata line


def block(role: str, text: str) -> str:
    return format_message(LogMessage(role, text, conversation_id=CONVERSATION))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fragment",
    [
        '<!-- straylight {"ti',
        '<!-- straylight {"time": "2031-02-03T04:05:06Z", "conver',
        "<!-- straylight ",
        "<!-- stra",
        "<",
    ],
)
def test_a_metadata_line_cut_by_a_crash_is_a_damaged_header(fragment: str) -> None:
    text = block("user", "What is the plan?") + "### assistant\n" + fragment
    messages = parse_messages(text)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].content == ""
    assert messages[1].status == "truncated"
    assert messages[0].content == "What is the plan?"


def test_the_next_append_after_a_cut_metadata_line_reads_cleanly(tmp_path: Path) -> None:
    log = DailyLog(tmp_path / "conversation")
    day = date(2031, 2, 3)
    log.path_for(day).parent.mkdir(parents=True)
    log.path_for(day).write_text(block("user", "What is the plan?") + CUT, encoding="utf-8")
    log.append(LogMessage("user", "Still there?", conversation_id=CONVERSATION), day)
    messages = log.read_day(day)
    assert [(m.role, m.content, m.status) for m in messages] == [
        ("user", "What is the plan?", "complete"),
        ("assistant", "", "truncated"),
        ("user", "Still there?", "complete"),
    ]


def test_ask_never_sends_the_fragment_to_the_model(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    folder = home / "conversation"
    folder.mkdir(parents=True)
    (folder / f"{DAY}.md").write_text(
        block("user", "What is the plan?") + CUT,
        encoding="utf-8",
    )
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW)
    proc = run_cli(env, "ask", "--conversation", CONVERSATION, "Still there?")
    assert proc.returncode == 0, proc.stderr
    sent = standin.chat_requests()[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["What is the plan?", "Still there?"]
    assert not any("<!--" in m["content"] for m in sent[1:])
