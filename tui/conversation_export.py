"""`conversations export ID [--format md|json] [-o FILE]`: one conversation as a Markdown
transcript or JSON, printed or written to a file of the user's (never over a file Straylight
keeps in the data dir). The conversations screen's export writes the same Markdown."""

from __future__ import annotations

import errno
import json
from collections.abc import Sequence
from pathlib import Path

from agent.gateway_errors import EXIT_OK, EXIT_USAGE
from store.clock import format_instant
from store.daily_log import LogMessage
from tui.cli_output import EXIT_UNEXPECTED, fail, for_terminal, write_stdout
from tui.conversation_index import ConversationInfo
from tui.display_text import counted

FORMATS = ("md", "json")


def export_markdown(
    info: ConversationInfo, title: str, system: str | None, messages: Sequence[LogMessage]
) -> str:
    """The conversation as a Markdown transcript: a title, its facts, then each message
    under `## role · time` (a reply that failed: `· failed: REASON`)."""
    lines = [f"# {title or info.conversation_id}", "", f"- id: `{info.conversation_id}`"]
    if info.started:
        lines.append(f"- started: {format_instant(info.started)}")
    if info.last:
        lines.append(f"- last: {format_instant(info.last)}")
    if info.model:
        lines.append(f"- model: {info.model}")
    if system:
        lines.append(f"- system prompt: {' '.join(system.split())}")
    for message in messages:
        head = f"## {message.role}"
        if message.time:
            head += f" · {format_instant(message.time)}"
        if message.role == "assistant" and message.model:
            head += f" · {message.model}"
        if message.status != "complete":
            head += f" · {message.status.replace('_', ' ')}"
        if message.reason:  # why it failed (`history` shows it too): one line in the heading
            head += f": {' '.join(message.reason.split())}"
        lines += ["", head, "", message.content]
    return "\n".join(lines) + "\n"


def export_json(
    info: ConversationInfo, title: str, system: str | None, messages: Sequence[LogMessage]
) -> str:
    """`{"id", "title", "started", "last", "model", "system", "messages": [history rows]}`."""
    data = {
        **info.to_json(),
        "title": title,
        "system": system,
        "messages": [m.to_json() for m in messages],
    }
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def export_to(
    info: ConversationInfo,
    title: str,
    system: str | None,
    messages: Sequence[LogMessage],
    fmt: str,
    output: str | None,
    home: Path,
) -> int:
    render = export_json if fmt == "json" else export_markdown
    text = render(info, title, system, messages)
    if output is None or output == "-":  # `-o -`: standard output, as `-` is stdin elsewhere
        write_stdout(for_terminal(text) if fmt == "md" else text)  # `| head`: 141
        return EXIT_OK
    from store.private_files import write_private_text

    if not output.strip():  # `Path("")` is the current folder: "-o wants a file" about `.`
        return fail("-o needs a FILE (or - for standard output)", EXIT_USAGE)
    path = Path(output).expanduser()
    if path.is_dir():
        return fail(f"{path} is a directory; -o wants a file", EXIT_USAGE)
    if path.exists() and not path.is_file():  # a FIFO or a device: the rename would replace it
        return fail(f"{path} is not a regular file; -o wants a file", EXIT_USAGE)
    if kept_by_straylight(path, home):  # the database, longterm.md, a daily log: never
        return fail(
            f"{path} belongs to Straylight's data dir; -o wants a file of yours", EXIT_USAGE
        )
    if not path.parent.is_dir():
        return fail(f"cannot write {path}: no folder {path.parent}", EXIT_USAGE)
    try:
        write_private_text(path, text)
    except OSError as error:  # a full disk is exit 1 (README), an unwritable FILE usage
        full = error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
        return fail(
            f"cannot write {path}: {error.strerror or error}",
            EXIT_UNEXPECTED if full else EXIT_USAGE,
        )
    count = counted(len(messages), "message")
    print(for_terminal(f"exported {info.conversation_id} to {path} ({count})"))
    return EXIT_OK


def kept_by_straylight(path: Path, home: Path) -> bool:
    """Whether `path` is one of the files Straylight keeps in `home` (an export written there
    would replace the database, longterm.md or a daily log)."""
    from store.data_dir_check import CONVERSATION_DIR, OWN_FILES, OWNER_SOCKET

    target, root = path.resolve(), home.resolve()
    if target.parent == root / CONVERSATION_DIR:
        return True
    return target.parent == root and target.name in (*OWN_FILES, OWNER_SOCKET)
