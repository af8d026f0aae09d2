"""Split a structured Markdown document into entries, one per heading section.

An entry's key is its heading path (`Lessons > §8 Timeouts`), made unique by a counter
when two sections share a path, so an edit to one section changes one entry and the
rest stay byte-identical (idempotent ingest re-embeds only what changed). Headings inside
fenced code blocks are code, not structure. Text before the first heading is the entry
`(preamble)`. A heading with no body (a document's `# Title`) is not an entry of its own:
it would match every query that names the title. It is folded into the next section, whose
heading path already names it when it is a parent, or whose text starts with its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.text.markdown import FENCE_OPEN_OR_TAB_RE

_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
PREAMBLE = "(preamble)"


@dataclass(frozen=True, slots=True)
class DocEntry:
    """One section: its unique key and the text stored as a pinned doc point."""

    key: str
    content: str


def split_markdown(text: str) -> list[DocEntry]:
    """Entries in document order; a heading with no body is folded into the next section."""
    sections: list[tuple[list[str], list[str]]] = []  # (heading path, body lines)
    path: list[tuple[int, str]] = []
    body: list[str] = []
    current_path: list[str] = []
    fence: str | None = None
    started = False

    def close() -> None:
        if started or any(line.strip() for line in body):
            sections.append((list(current_path), list(body)))

    for line in text.replace("\r\n", "\n").split("\n"):
        fence_match = FENCE_OPEN_OR_TAB_RE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        heading = None if fence is not None or fence_match else _HEADING_RE.match(line)
        if heading is None:
            body.append(line)
            continue
        close()
        level, title = len(heading.group(1)), heading.group(2).strip()
        path = [(lvl, name) for lvl, name in path if lvl < level] + [(level, title)]
        current_path = [name for _lvl, name in path]
        body = [line]
        started = True
    close()
    return _unique_entries(_fold_empty_headings(sections))


def _fold_empty_headings(
    sections: list[tuple[list[str], list[str]]],
) -> list[tuple[list[str], list[str]]]:
    """Sections without an empty heading-only one. Its heading line goes to the next section
    with a body: dropped there when that section's heading path names it (a parent), else put
    before its text; headings after the last body go to the end of the text before them."""
    folded: list[tuple[list[str], list[str]]] = []
    pending: list[tuple[list[str], str]] = []  # (heading path, heading line) of empty sections
    for heading_path, lines in sections:
        if heading_path and not any(line.strip() for line in lines[1:]):
            pending.append((heading_path, lines[0]))
            continue
        carried = [line for path, line in pending if heading_path[: len(path)] != path]
        folded.append((heading_path, carried + lines))
        pending = []
    if pending and folded:  # headings after the last body belong to the text before them
        last_path, last_lines = folded[-1]
        folded[-1] = (last_path, last_lines + [line for _path, line in pending])
    elif pending:  # a document of headings only: one entry, or nothing is stored
        path, _line = pending[-1]
        folded.append((path, [line for _path, line in pending]))
    return folded


def _unique_entries(sections: list[tuple[list[str], list[str]]]) -> list[DocEntry]:
    seen: dict[str, int] = {}
    entries: list[DocEntry] = []
    for heading_path, lines in sections:
        base = " > ".join(heading_path) if heading_path else PREAMBLE
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base} ({seen[base]})"
        content = "\n".join(lines).strip()
        if len(heading_path) > 1:  # the parents give a section its context in recall
            content = f"{' > '.join(heading_path[:-1])}\n{content}"
        entries.append(DocEntry(key, content))
    return entries
