"""Layer 2: `longterm.md`, hand-curated, loaded whole into every system prompt.

Re-read only when its size or modification time changes. HTML comments are the user's
notes to themselves (the first-run template is made of them) and never reach the prompt.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from store.private_files import UnsafeDataDir, read_private_bytes, write_private_text

TEMPLATE = """\
<!--
  longterm.md — Straylight's long-term memory (layer 2).

  Everything outside these comment markers goes into the system prompt of every turn,
  whole. Keep it short (the budget is shown in the sidebar and in `straylight status`)
  and write things that should always hold, for example:

  - My name is Ada; call me Ada.
  - I work on Linux with Python 3.12 and prefer concise answers.
  - The project in ~/src/blyck deploys with `just deploy`.

  Straylight re-reads this file when it changes; no restart needed.
-->
"""

_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True, slots=True)
class LongtermState:
    """What the prompt and the status views need to know about longterm.md."""

    path: Path
    text: str  # the prompt text: comments removed, stripped; "" when unusable
    size_bytes: int
    budget_bytes: int
    warning: str | None  # one line when the file could not be used
    unclosed_comment_line: int | None = None  # a `<!--` never closed: everything after is sent

    @property
    def over_budget(self) -> bool:
        return self.size_bytes > self.budget_bytes


class LongtermFile:
    """Reads `longterm.md`, caching on (mtime, size); creates the template on first run."""

    def __init__(self, path: Path, budget_bytes: int) -> None:
        self.path = path
        self.budget_bytes = budget_bytes
        self._stamp: tuple[int, int] | None = None
        self._state: LongtermState | None = None

    def ensure_template(self) -> bool:
        """Create the commented template if there is no file yet; True if created."""
        if os.path.lexists(self.path):  # a link is refused by `load`, never replaced
            return False
        write_private_text(self.path, TEMPLATE)
        return True

    def load(self) -> LongtermState:
        """The current state, re-read only when the file changed on disk."""
        try:
            stat = self.path.lstat()
        except FileNotFoundError:
            return self._remember(None, LongtermState(self.path, "", 0, self.budget_bytes, None))
        except OSError as error:
            return self._unusable(0, f"cannot read {self.path}: {error.strerror or error}")
        stamp = (stat.st_mtime_ns, stat.st_size)
        if self._state is not None and stamp == self._stamp:
            return self._state
        try:
            raw = read_private_bytes(self.path)  # never through a link
        except UnsafeDataDir as error:
            return self._unusable(0, f"{error}; it is left out of the prompt")
        except OSError as error:
            return self._unusable(stat.st_size, f"cannot read {self.path}: {error.strerror}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return self._unusable(
                len(raw),
                f"{self.path} is not UTF-8 (byte {error.start}); "
                "it is left out of the prompt until fixed",
            )
        # As a Windows editor saves it: a byte-order mark, CRLF line ends.
        text = text.removeprefix("\ufeff").replace("\r\n", "\n")
        prompt_text = _COMMENT_RE.sub("", text).strip()
        state = LongtermState(
            self.path, prompt_text, len(raw), self.budget_bytes, None, _unclosed_comment(text)
        )
        return self._remember(stamp, state)

    def _unusable(self, size: int, warning: str) -> LongtermState:
        self._stamp, self._state = None, None
        return LongtermState(self.path, "", size, self.budget_bytes, warning)

    def _remember(self, stamp: tuple[int, int] | None, state: LongtermState) -> LongtermState:
        self._stamp, self._state = stamp, (state if stamp is not None else None)
        return state


def _unclosed_comment(text: str) -> int | None:
    """The line of a `<!--` that no `-->` closes, as `_COMMENT_RE` reads the text: that
    comment is not removed, so it and everything after it reach the prompt, where an editor's
    Markdown preview hides them."""
    start = 0
    while (opened := text.find("<!--", start)) >= 0:
        closed = text.find("-->", opened + 4)
        if closed < 0:
            return text.count("\n", 0, opened) + 1
        start = closed + 3
    return None
