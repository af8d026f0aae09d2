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
        "Lessons > §8 Timeouts",
        "Lessons > §29 Parser",
        "Lessons > §8 Timeouts (2)",
    ]
    timeouts = entries[1].content
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


def test_a_heading_without_body_is_not_an_entry_of_its_own() -> None:
    """A document's `# Title` would match every query naming the title (issue 16)."""
    entries = split_markdown("# Runbook\n\n## Deploy\nUse the blue pipeline.\n")
    assert [e.key for e in entries] == ["Runbook > Deploy"]
    assert entries[0].content == "Runbook\n## Deploy\nUse the blue pipeline."


def test_an_empty_sibling_heading_is_carried_into_the_next_section() -> None:
    entries = split_markdown("# Notes\n\n# Deploy\nUse the blue pipeline.\n# Tail\n")
    assert [e.key for e in entries] == ["Deploy"]
    assert entries[0].content == "# Notes\n# Deploy\nUse the blue pipeline.\n# Tail"
    assert [e.key for e in split_markdown("# Only a title\n")] == ["Only a title"]


@given(st.text())
def test_any_text_splits_without_losing_a_word(text: str) -> None:
    entries = split_markdown(text)
    assert len({e.key for e in entries}) == len(entries)
    joined = "\n".join(e.content for e in entries)
    for word in text.split():
        assert word.strip("#") in joined or not word.strip("#")
