"""JSON schemas for Ollama's structured output and tool arguments, made from pydantic models.

`llm_schema(Model)` is `Model.model_json_schema()` made plain for a model's grammar: nested
models inlined (no ``$defs`` / ``$ref``), and the ``title`` and ``default`` annotations, which
constrain nothing, left out, as is a model's docstring. A field's ``description`` is kept (the
model reads it); a field without a default is required."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_ANNOTATIONS = ("title", "default")


def _plain(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_plain(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _plain(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    plain: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":  # field names, not annotations: keep every one
            plain[key] = {name: _plain(field, defs) for name, field in value.items()}
        elif key not in _ANNOTATIONS and key != "$defs":
            plain[key] = _plain(value, defs)
    return plain


def llm_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of `model`, inlined and without annotations (see the module)."""
    schema = model.model_json_schema()
    defs = {name: _without_docstring(sub) for name, sub in schema.get("$defs", {}).items()}
    result: dict[str, Any] = _plain(_without_docstring(schema), defs)
    return result


def _without_docstring(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's schema without the ``description`` pydantic takes from its docstring: that is
    for the reader of the code, not for the model. Field descriptions stay."""
    return {key: value for key, value in schema.items() if key != "description"}
