"""Which workspace the facts of this run belong to.

The workspace is the git root of the current directory (the nearest parent holding a `.git`
directory or file, so worktrees and submodules count), else the directory itself; the
`workspace` setting (`--workspace NAME`, `STRAYLIGHT_WORKSPACE`, config key `workspace`)
overrides it with any name without a control character (`check_workspace_name`); a derived
name has its control characters escaped instead (`safe_derived_name`). Facts of
scope `workspace` are stored under this string; global facts under ''.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

LINE_BREAKING = frozenset({"Cc", "Zl", "Zp"})
"""Unicode categories a workspace name may not contain: control characters (newline, tab,
ESC, DEL, C1) and the line and paragraph separators, each of which breaks a one-line output."""


def check_workspace_name(name: str) -> str:
    """`name` unchanged, or ValueError when it holds a control character: the name is
    printed on one line (`facts list --all-workspaces`, `status`), stored with every fact
    and sent to the owner of the data dir, so a newline or ESC in it is refused where it
    enters (the settings: flag, environment, config file; `straylight mcp` reads those).
    So is a name the masker would change (a token pasted as `--workspace`)."""
    for char in name:
        if unicodedata.category(char) in LINE_BREAKING:
            raise ValueError(
                f"a workspace name may not contain a control character ({char!r} found)"
            )
    from memory.secret_masking import mask_secrets  # (only for a name that was given)

    if mask_secrets(name) != name:  # stored with every fact, never masked there
        raise ValueError("a workspace name may not hold a secret (it is stored with every fact)")
    return name


def git_root(directory: Path) -> Path | None:
    """The nearest directory at or above `directory` that holds `.git`, if any."""
    current = directory.absolute()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def safe_derived_name(path: str) -> str:
    """A directory path made a workspace name: the user did not type it, so a control
    character in it is not refused but written escaped (`\\n`, `\\x1b`, `\\u2028`), and so
    is a byte that is not UTF-8 (`\\xe9`, which Python holds as a lone surrogate and DuckDB
    cannot store). The same directory always gives the same name; every output that shows
    it stays one line."""
    return "".join(_escaped(char) for char in path)


def _escaped(char: str) -> str:
    category = unicodedata.category(char)
    if category == "Cs":  # a byte that is not UTF-8 (surrogateescape), or a lone surrogate
        code = ord(char)
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
    if category in LINE_BREAKING:
        return char.encode("unicode_escape").decode("ascii")
    return char


def resolve_workspace(override: str | None, cwd: Path | None = None) -> str:
    """The workspace id: the override if given (checked where it was given), else the git
    root, else the directory (`safe_derived_name`)."""
    if override is not None and override.strip():
        return override.strip()
    directory = (cwd or Path.cwd()).absolute()
    return safe_derived_name(str(git_root(directory) or directory))
