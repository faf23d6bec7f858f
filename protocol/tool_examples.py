"""The worked tool-calling exchange of docs/protocol.md — a turn offers a tool, its answer
calls it, the client sends what the tool returned, the model answers — and the examples
of `session.set_tools` and `image.get` (a test round-trips them)."""

import msgspec

from . import events, replies, requests
from .structs import MessageInfo, SessionInfo
from .tools import FunctionCall, FunctionSpec, ToolCall, ToolResult, ToolSpec

_T = 1795000000.0
_SID = "3f2a9c4b1d7e"
WEATHER = ToolSpec(function=FunctionSpec(
    name="get_weather", description="The current weather of a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
_SESSION = SessionInfo(id=_SID, name="chat-1", model="qwen2.5:7b", num_ctx=8192, window=8192,
                       created=_T, updated=_T + 60, message_count=2, token_count=212)
_CALL = ToolCall(function=FunctionCall(name="get_weather", arguments={"city": "Lyon"}))
_RESULT = ToolResult(tool_name="get_weather", content='{"temp_c": 14, "sky": "rain"}')

SET_TOOLS: tuple[requests.Request, replies.Reply, list[events.Event]] = (
    requests.SetTools(id="15", session=_SID, tools=[WEATHER]),
    replies.SessionReply(id="15", session=msgspec.structs.replace(_SESSION, tools=[WEATHER])),
    [events.SessionUpdated(seq=51, time=_T, session_id=_SID,
                           session=msgspec.structs.replace(_SESSION, tools=[WEATHER]))])

#: A 1×1 PNG, as a message's `images` item refers to it and `image.get` returns it.
_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
_PNG_HASH = "c414cd0e204de974f73753c7e28d7638e7b3691bb8b1a2bab6b25bb7fed7ce77"
IMAGE_GET: tuple[requests.Request, replies.Reply, list[events.Event]] = (requests.ImageGet(id="16b", hash=_PNG_HASH),
             replies.ImageReply(id="16b", hash=_PNG_HASH, media_type="image/png", data=_PNG), [])

#: The loop, frame by frame: (direction, frame); ">" sent, "<" its reply, "*" an event.
TOOL_LOOP: list[tuple[str, msgspec.Struct]] = [
    (">", requests.Send(id="40", session=_SID, text="Should I take an umbrella in Lyon?",
                        tools=[WEATHER])),
    ("<", replies.Accepted(id="40", session_id=_SID, generation_id="a1", ahead=0)),
    ("*", events.ResponseGeneration(
        seq=80, time=_T, session_id=_SID, generation_id="a1", token_count=212, eval_count=21,
        window=8192, message=MessageInfo(seq=1, role="assistant", content="", created=_T + 2,
                                         model="qwen2.5:7b", reply_to=0, tool_calls=[_CALL],
                                         done_reason="stop", eval_count=21))),
    (">", requests.Send(id="41", session=_SID, tool_results=[_RESULT], tools=[WEATHER])),
    ("<", replies.Accepted(id="41", session_id=_SID, generation_id="a2", ahead=0)),
    ("*", events.QueryReceived(seq=81, time=_T, session_id=_SID, generation_id="a2", model="qwen2.5:7b",
                               message=MessageInfo(seq=2, role="tool", created=_T + 3,
                                                   content='[get_weather] {"temp_c": 14, "sky": "rain"}',
                                                   tool_results=[_RESULT]))),
    ("*", events.ResponseGeneration(
        seq=83, time=_T, session_id=_SID, generation_id="a2", token_count=261, eval_count=12,
        window=8192, message=MessageInfo(seq=3, role="assistant", created=_T + 4, model="qwen2.5:7b",
                                         content="Yes: it is raining in Lyon (14 °C).", reply_to=2,
                                         done_reason="stop", eval_count=12))),
]
