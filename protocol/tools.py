"""Tool calling, in Ollama's /api/chat shapes: the tools a model may call, the calls an
answer makes, and the results a client sends back."""

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

#: A tool's or a function's name, as the chat templates take it.
ToolName = Annotated[str, Meta(min_length=1, max_length=256)]


class FunctionSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a tool does and takes: `parameters` is a JSON schema of its arguments."""

    name: ToolName
    description: str = ""
    parameters: dict[str, Any] = {}


class ToolSpec(msgspec.Struct, kw_only=True):
    """A tool the model may call (Ollama's and OpenAI's `tools` item)."""

    type: Literal["function"] = "function"
    function: FunctionSpec


class FunctionCall(msgspec.Struct, kw_only=True):
    """The function an answer calls, and its arguments."""

    name: ToolName
    arguments: dict[str, Any] = {}


class ToolCall(msgspec.Struct, kw_only=True):
    """One call an answer makes (Ollama's `message.tool_calls` item)."""

    function: FunctionCall


class ToolResult(msgspec.Struct, kw_only=True):
    """What one call returned, as the client that ran the tool sends it back (Ollama's
    `role: "tool"` message: its `tool_name` and `content`)."""

    tool_name: ToolName
    content: str


def results_text(results: list[ToolResult]) -> str:
    """Tool results as one text (what history shows, search finds and summaries read)."""
    return "\n\n".join(f"[{r.tool_name}] {r.content}" for r in results)


def calls_text(calls: list[ToolCall]) -> str:
    """Tool calls as one text: each as `name(arguments as JSON)`."""
    return "\n".join(f"{c.function.name}({msgspec.json.encode(c.function.arguments).decode()})"
                     for c in calls)
