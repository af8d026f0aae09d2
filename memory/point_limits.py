"""The largest text a memory point may hold and the largest document `import-doc` reads.

A pasted log of megabytes or a multi-gigabyte "Markdown" file would otherwise be read whole,
embedded and stored: each check returns the user's one line (None when within the limit), and
the callers refuse before anything is stored.
"""

from __future__ import annotations

from pathlib import Path

DOC_MAX_BYTES = 4 * 1024 * 1024
"""`import-doc` / `/import` / `memory_load_doc`: a file over 4 MiB is refused unread."""
TEXT_MAX_CHARS = 65_536
"""`remember` / `/remember` / `memory_save`, and each section of an imported document."""


HEADING_SHOWN = 80
"""The most of a section's heading a refusal repeats (a 1 MB heading made a 1 MB line)."""


class PointTooLarge(ValueError):
    """A text or document over its limit; `str()` is the user's one line."""


def doc_size_problem(path: Path) -> str | None:
    """Why `path` is too large to import (checked by its size, before it is read), or None."""
    size = path.stat().st_size
    if size <= DOC_MAX_BYTES:
        return None
    return (
        f"{path} is {size:,} bytes; import-doc reads at most {DOC_MAX_BYTES:,} bytes (4 MiB):"
        " split the file"
    )


def section_size_problem(path: Path, key: str, content: str) -> str | None:
    """Why the section `key` of `path` is too long to store, or None."""
    if len(content) <= TEXT_MAX_CHARS:
        return None
    from memory.secret_masking import mask_secrets  # (not on the chat's start path)

    heading = str(mask_secrets(key))  # the line goes to the terminal and MCP's agent
    if len(heading) > HEADING_SHOWN:
        heading = heading[: HEADING_SHOWN - 1] + "…"
    return (
        f"{path}: section {heading!r} is {len(content):,} characters; a section holds at"
        f" most {TEXT_MAX_CHARS:,}: split it with more headings"
    )


def text_size_problem(text: str, command: str = "remember") -> str | None:
    """Why `text` is too long to remember, or None."""
    if len(text) <= TEXT_MAX_CHARS:
        return None
    return (
        f"{command}: the text is {len(text):,} characters; a memory holds at most"
        f" {TEXT_MAX_CHARS:,}"
    )
