"""Text that is safe to draw: a memory, a log or a reply can hold terminal control
characters (ESC sequences that clear the screen, retitle the window or write the clipboard
with OSC 52). Textual passes them through to the terminal, so everything the TUI shows from
the store, the logs or the model goes through `printable` first. (`counted`: a count and its
noun, for the CLI and the screens alike.)"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls but newline and tab, DEL, and the bidirectional embeddings, overrides
and isolates (U+202A–U+202E, U+2066–U+2069): a terminal that lays out right-to-left text
would reorder what follows one (`\u202e` makes `txt.exe` read `exe.txt`). The marks
U+200E/U+200F that right-to-left writing needs stay."""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␇ for BEL, … (Unicode control pictures)
    return "␡" if code == 0x7F else "\ufffd"  # DEL, the C1 controls, the bidi overrides


def printable(text: str) -> str:
    """`text` with every control character except newline and tab shown as a symbol, and
    every bidirectional override as U+FFFD (CRLF becomes a newline first)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_visible, text.replace("\r\n", "\n"))


def first_line(text: str) -> str:
    """The first line of `text` that is not blank, stripped ("" when there is none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def ellipsize(line: str, width: int) -> str:
    """`line` cut to `width` characters, the last one an ellipsis when it is cut."""
    return line if len(line) <= width else line[: max(width - 1, 0)].rstrip() + "…"


_HEADING = re.compile(r"#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*")


def point_line(text: str, role: str) -> str:
    """The line a memory point is listed by: its first non-blank line, stripped — for a
    document section whose first line is the path of its parent headings and whose second
    is its own heading (`memory.doc_splitter`: `Deploy guide` then `## Staging`), the path
    and the heading (`Deploy guide > Staging`): every section of a document starts with the
    same parents, so they alone would list them all alike."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    if role == "doc" and len(lines) > 1 and not _HEADING.fullmatch(lines[0]):
        heading = _HEADING.fullmatch(lines[1])
        if heading is not None:
            return f"{lines[0]} > {heading.group(1)}"
    return lines[0]


def counted(count: int, noun: str) -> str:
    """`1 point`, `2 points`, `1,204 points`: a count, its digits grouped, and its noun as a
    reader says them."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
