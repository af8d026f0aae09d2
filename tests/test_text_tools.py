"""memory/text (Markdown structure, sentences, cue words) and memory/llm_schema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memory.llm_schema import llm_schema
from memory.text.markdown import (
    FENCE_OPEN_OR_TAB_RE,
    FENCE_OPEN_RE,
    plain_apostrophes,
    unwrap_fenced_reply,
    without_fenced_blocks,
)
from memory.text.sentences import split_sentences


def test_fenced_blocks_go_with_an_unclosed_one_running_to_the_end() -> None:
    text = "before\n```bash\nrm -rf /\n```\nbetween\n~~~\nnever closed\nstill code"
    assert without_fenced_blocks(text).split() == ["before", "between"]


def test_a_fence_opens_after_three_spaces_and_after_a_tab_only_where_asked() -> None:
    assert FENCE_OPEN_RE.match("   ```") and not FENCE_OPEN_RE.match("    ```")
    assert FENCE_OPEN_OR_TAB_RE.match("\t```") and not FENCE_OPEN_RE.match("\t```")


def test_a_fenced_json_reply_is_unwrapped_and_a_plain_one_kept() -> None:
    assert unwrap_fenced_reply('```json\n{"a": 1}\n```\n') == '{"a": 1}'
    assert unwrap_fenced_reply('  {"a": 1} ') == '{"a": 1}'


def test_curly_apostrophes_become_plain() -> None:
    assert plain_apostrophes("don’t ‘x´ ʼy") == "don't 'x' 'y"


def test_sentences_split_after_the_callers_ends() -> None:
    line = "It worked. Then? Done; next… and e.g. this"
    assert split_sentences(line) == ["It worked.", "Then?", "Done; next… and e.g.", "this"]
    assert split_sentences(line, ends=".!?;") == [
        "It worked.",
        "Then?",
        "Done;",
        "next… and e.g.",
        "this",
    ]
    assert split_sentences(line, ends=".!?…", abbreviations=frozenset({"e.g."})) == [
        "It worked.",
        "Then?",
        "Done; next…",
        "and e.g. this",
    ]


class _Inner(BaseModel):
    """Not for the model."""

    kind: Literal["a", "b"]
    note: str = Field("", description="free text")


class _Outer(BaseModel):
    items: list[_Inner] = Field(max_length=2)


def test_llm_schema_inlines_models_and_drops_annotations() -> None:
    assert llm_schema(_Outer) == {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["a", "b"]},
                        "note": {"type": "string", "description": "free text"},
                    },
                    "required": ["kind"],
                },
            }
        },
        "required": ["items"],
    }
