"""Tool arguments as the client wrote them: a string stays a string.

The MCP SDK's `FuncMetadata.pre_parse_json` runs `json.loads` over every string argument of a
field that is not plain `str` (Claude Desktop sends lists as JSON text). For our optional
fields that misreads the text: `memory_read(key="null")` became "no key", `role="null"` became
"any role", `k="null"` became "the default". Here a string given for a field that takes text
(`str | None`, a `Literal` of names) is never parsed, and no string is ever turned into JSON
`null`: "null" is the literal text "null" for a text field and a validation error for a number.
JSON `null` itself still means "not given".
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata


def takes_text(annotation: Any) -> bool:
    """Whether a field of this type accepts a string as it is (`str`, `str | None`, a
    `Literal` of strings, an `Annotated` of one of those)."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return any(isinstance(value, str) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return any(takes_text(arg) for arg in typing.get_args(annotation))
    return False


class TextKeepingMetadata(FuncMetadata):
    """`FuncMetadata` whose pre-parse leaves text arguments, and the string "null", alone."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        fields = self.arg_model.model_fields
        for key, value in data.items():
            if not isinstance(value, str) or key not in fields:
                continue
            if parsed[key] is None or takes_text(fields[key].annotation):
                parsed[key] = value
        return parsed


def keep_text_arguments(server: MCPServer[Any]) -> None:
    """Give every tool registered on `server` the text-keeping pre-parse."""
    for tool in server._tool_manager.list_tools():
        tool.fn_metadata = TextKeepingMetadata(
            arg_model=tool.fn_metadata.arg_model,
            output_schema=tool.fn_metadata.output_schema,
            output_model=tool.fn_metadata.output_model,
            wrap_output=tool.fn_metadata.wrap_output,
        )
