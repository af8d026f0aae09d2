"""Doc ingest splits Markdown into stable, one-per-heading entries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.doc_splitter import PREAMBLE, split_markdown

DOC = """\
Intro text before any heading.

# Lessons

## §8 Timeouts
httpx ReadTimeout has an empty str(); the work may have succeeded.

```python
# not a heading
print("x")
```

## §29 Parser
Split only on anchored headers.

## §8 Timeouts
A second section with the same title.
"""


def test_one_entry_per_heading_with_context_and_unique_keys() -> None:
    entries = split_markdown(DOC)
    assert [e.key for e in entries] == [
        PREAMBLE,
        "Lessons",
        "Lessons > §8 Timeouts",
        "Lessons > §29 Parser",
        "Lessons > §8 Timeouts (2)",
    ]
    timeouts = entries[2].content
    assert timeouts.startswith("Lessons\n## §8 Timeouts")
    assert "# not a heading" in timeouts  # fenced code stays in its section
    assert entries[0].content == "Intro text before any heading."


def test_editing_one_section_changes_only_that_entry() -> None:
    before = {e.key: e.content for e in split_markdown(DOC)}
    after = {
        e.key: e.content
        for e in split_markdown(DOC.replace("Split only on", "Always split only on"))
    }
    changed = [key for key in before if before[key] != after.get(key)]
    assert changed == ["Lessons > §29 Parser"]


@given(st.text())
def test_any_text_splits_without_losing_a_word(text: str) -> None:
    entries = split_markdown(text)
    assert len({e.key for e in entries}) == len(entries)
    joined = "\n".join(e.content for e in entries)
    for word in text.split():
        assert word.strip("#") in joined or not word.strip("#")
