"""How every headless command prints: JSON to stdout, one error line to stderr."""

from __future__ import annotations

import argparse
import errno
import json
import re
import sys
from typing import Any

PROG = "straylight"
EXIT_UNEXPECTED = 1  # an error nobody foresaw: one line, details in straylight.log


def print_json(data: Any) -> None:
    """Indented UTF-8 JSON on stdout (times and other odd values as strings)."""
    write_stdout(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


STDOUT_CHUNK = 1 << 16


def write_stdout(text: str) -> None:
    """`text` on stdout in 64 KiB pieces, each flushed. One large write to a pipe whose
    reader left midway (`export … | head`) is a short write Python does not report: the
    rest was dropped and the command exited 0. A piece after the reader left raises
    `BrokenPipeError`, which the command line turns into exit 141."""
    for start in range(0, len(text), STDOUT_CHUNK):
        sys.stdout.write(text[start : start + STDOUT_CHUNK])
        sys.stdout.flush()


def fail(message: str, code: int) -> int:
    """`straylight: MESSAGE` on stderr, as one line (see `one_line`); returns the exit code
    to use."""
    print(f"{PROG}: {one_line(message)}", file=sys.stderr)
    return code


def one_line(text: str) -> str:
    """`text` as one line of printable characters: a path or name the user gave may hold a
    line break or an ESC sequence (`import-doc $'notes\\n.md'`), which would split the
    error line or act on the terminal; each control character is shown as a symbol (␊, ␛)."""
    from tui.display_text import printable

    return printable(text).replace("\n", "\u240a")


FULL_OR_FAILING = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""A write that failed for the disk (full, over a quota or a file-size limit, failing): one
line naming the file, not "unexpected error" (`ask`, the chat)."""


def cannot_write(error: OSError) -> str:
    """`cannot write FILE: REASON` for a write `FULL_OR_FAILING` stopped."""
    what = "the output" if error.filename is None else one_line(str(error.filename))
    return f"cannot write {what}: {error.strerror or error}"


STDIN_MAX_BYTES = 16 << 20
"""More standard input than this is refused (`TEXT -` of `/dev/zero` read for ever, and ran
out of memory with a traceback): 16 MiB is far more than any message or body takes."""


def read_stdin_text() -> str:
    """All of standard input as text (see `decode_piped`), CRLF as LF, as a text-mode read
    did; whatever the locale says. On a terminal (`ask -` typed at a prompt) a line on
    stderr says how to end the text first: silence there looked like a hang. More than
    `STDIN_MAX_BYTES` stops the command with one line, exit 2."""
    if sys.stdin.isatty():
        print(f"{PROG}: type the text, then Ctrl+D on a line of its own", file=sys.stderr)
    raw = sys.stdin.buffer.read(STDIN_MAX_BYTES + 1)
    if len(raw) > STDIN_MAX_BYTES:
        sys.exit(fail(f"standard input is over {STDIN_MAX_BYTES >> 20} MiB: not read", 2))
    return decode_piped(raw).replace("\r\n", "\n")


def stdin_kept() -> str:
    """Standard input read whole (`read_stdin_text`), and put back as `sys.stdin` so the
    next reader (the command, or the forward to the data dir's owner) gets the same text."""
    import io

    text = read_stdin_text()
    sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
    return text


# A lead byte and its continuation bytes: the shape of a UTF-8 sequence beyond ASCII.
_UTF8_SHAPED = re.compile(rb"[\xc2-\xf4][\x80-\xbf]+")


def decode_piped(raw: bytes) -> str:
    """Piped bytes as text. UTF-8 when they are UTF-8. Bytes with no UTF-8 sequence in them at
    all are a file in an 8-bit code page (a Latin-1 or Windows-1252 export: `caf\\xe9`), read as
    Windows-1252 so `café` stays `café`; otherwise (UTF-8 with a few broken bytes) each byte
    that is not UTF-8 becomes U+FFFD. Never an error."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if not _UTF8_SHAPED.search(raw):
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:  # 0x81 0x8d 0x8f 0x90 0x9d: undefined there, Latin-1 has them
            return raw.decode("latin-1")
    return raw.decode("utf-8", "replace")


def for_terminal(text: str) -> str:
    """Stored or streamed text as it may reach a terminal: control characters (an ESC
    sequence that clears the screen or writes the clipboard) shown as symbols. Into a pipe
    or a file the text goes unchanged."""
    if not sys.stdout.isatty():
        return text
    from tui.display_text import printable

    return printable(text)


class ThinkingEcho:
    """`ask --show-thinking`: the model's thinking on stderr as it streams, dimmed on a
    terminal and plain into a pipe; a line break when the answer starts."""

    def __init__(self) -> None:
        self._open = False
        self._ends_line = True

    def write(self, text: str) -> None:
        if not text:
            return
        if sys.stderr.isatty():
            from tui.display_text import printable

            sys.stderr.write(f"\x1b[2m{printable(text)}\x1b[22m")
        else:
            sys.stderr.write(text)
        sys.stderr.flush()
        self._open = True
        self._ends_line = text.endswith("\n")

    def close(self) -> None:
        """The answer starts (or the turn ends): end the thinking's last line."""
        if self._open and not self._ends_line:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self._open = False


def record_id(text: str) -> int:
    """An id argument as the commands print it, `7` or `#7` (argparse `type`)."""
    digits = text.strip().removeprefix("#")
    if not digits.isdecimal():
        raise argparse.ArgumentTypeError(f"not an id: {text!r} (the number shown as #ID)")
    return int(digits)
