"""Which workspace the facts of this run belong to.

The workspace is the git root of the current directory (the nearest parent holding a `.git`
directory or file, so worktrees and submodules count), else the directory itself; the
`workspace` setting (`--workspace NAME`, `STRAYLIGHT_WORKSPACE`) overrides it with any name.
Facts of scope `workspace` are stored under this string; global facts under ''.
"""

from __future__ import annotations

from pathlib import Path


def git_root(directory: Path) -> Path | None:
    """The nearest directory at or above `directory` that holds `.git`, if any."""
    current = directory.absolute()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def resolve_workspace(override: str | None, cwd: Path | None = None) -> str:
    """The workspace id: the override if given, else the git root, else the directory."""
    if override is not None and override.strip():
        return override.strip()
    directory = (cwd or Path.cwd()).absolute()
    return str(git_root(directory) or directory)
