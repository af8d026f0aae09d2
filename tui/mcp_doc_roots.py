"""Which files `straylight mcp`'s `memory_load_doc` may read: only those under the allowed
roots — the workspace (the git root of the current directory, else the directory) and the
folders of the `mcp_doc_roots` setting.

Why: the caller is another agent, which may be steered by text it read (a web page, an issue,
a README). Without a fence, "load ~/.ssh/id_ed25519 into memory" would copy a private file
into the memory, where every client's `memory_search` finds it again. Secret masking catches
known credential shapes, not everything private. Symlinks are resolved before the check, so a
link inside a root that points outside it is refused too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from agent.workspace import git_root, safe_derived_name


def doc_roots(
    configured: Iterable[Path], cwd: Path | None = None, home: Path | None = None
) -> list[Path]:
    """The allowed roots, resolved: the workspace directory first, then the configured ones.

    A workspace that is the filesystem root, the home directory or a folder holding it (a git
    root above `~`) is no fence at all (desktop clients start their servers in `/` or `~`):
    then only the configured folders."""
    directory = (cwd or Path.cwd()).absolute()
    workspace = Path(os.path.realpath(git_root(directory) or directory))
    home_dir = Path(os.path.realpath(home or Path.home()))
    too_wide = workspace == Path(workspace.anchor) or home_dir.is_relative_to(workspace)
    roots = [*([] if too_wide else [workspace]), *configured]
    resolved: list[Path] = []
    for root in roots:
        real = Path(os.path.realpath(root))
        if real not in resolved:
            resolved.append(real)
    return resolved


PATH_MAX = 4096
"""The longest path Linux opens (bytes). A longer one names no file, and resolving it took
minutes (`Path.resolve` joins the growing string at every part: `"a/" * 1_000_000`), while
the server answered none of its client's other calls."""


def allowed_doc(raw: str, roots: Iterable[Path]) -> Path:
    """The real path of `raw` if it is a file under one of `roots`; else ValueError saying
    why (one line). The fence comes first: of a path outside the roots the caller learns
    that, not whether a file is there."""
    if not raw.strip():
        raise ValueError("memory_load_doc needs a path")
    if len(raw.encode("utf-8", "surrogatepass")) > PATH_MAX:  # resolving it is quadratic
        raise ValueError(f"the path is {len(raw):,} characters; a path holds at most {PATH_MAX:,}")
    named = safe_derived_name(raw)  # a NUL or a newline in it: the line stays one line
    given = Path(os.path.expanduser(raw))
    plain = Path(os.path.abspath(given))  # `..` folded: only a symlink makes it differ
    allowed = list(roots)
    try:
        real = given.resolve(strict=False)  # the links that exist, followed
    except (OSError, RuntimeError, ValueError):  # a loop, no permission, a NUL
        real = plain
    if not allowed:  # started in /, ~ or a git root above ~: no workspace to read from
        raise ValueError(
            f"{named} is outside the folders memory_load_doc may read: there are none, as the "
            "server runs in /, your home directory or a folder holding it, which is never one; "
            "list your document folders in the mcp_doc_roots setting"
        )
    if not any(real.is_relative_to(root) for root in allowed):
        shown = ", ".join(safe_derived_name(str(root)) for root in allowed)
        inside = any(plain.is_relative_to(root) for root in allowed)
        link = f" (a link to {safe_derived_name(str(real))})" if inside and real != plain else ""
        raise ValueError(
            f"{named}{link} is outside the folders memory_load_doc may read ({shown}); "
            "add its folder to the mcp_doc_roots setting to allow it"
        )
    try:
        real = given.resolve(strict=True)
    except (OSError, RuntimeError, ValueError):  # missing, a loop, no permission, a NUL
        raise ValueError(f"no such file: {named}") from None
    if not any(real.is_relative_to(root) for root in allowed):  # changed since the check
        raise ValueError(f"{named} is outside the folders memory_load_doc may read")
    if not real.is_file():
        raise ValueError(f"{named} is not a file")
    return real
