"""Tool calls, images and structured output through the HTTP front door (issue 31), driven
by the `ollama` and `openai` libraries: the agent loop (call, result, answer) continues one
session in each API's shape, images reach a vision model, and a schema reaches the model."""

import base64
import json

from test_http import ollama_client, openai_client, sessions

from ctxkeep.protocol.tools import FunctionSpec, ToolSpec

MODEL = "qwen2.5:7b"
WEATHER = ToolSpec(function=FunctionSpec(
    name="get_weather", description="The weather of a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather of a city",
                                           "parameters": WEATHER.function.parameters}}]
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def test_the_ollama_library_runs_an_agent_loop_in_one_session(door, standin):
    client = ollama_client(door)
    standin.script_tool_call("get_weather", {"city": "Lyon"})
    ask = [{"role": "user", "content": "Umbrella in Lyon?"}]
    called = client.chat(model=MODEL, messages=ask, tools=TOOLS)
    (call,) = called.message.tool_calls
    assert (call.function.name, call.function.arguments) == ("get_weather", {"city": "Lyon"})
    assert standin.chats[-1].body["tools"][0]["function"]["name"] == "get_weather"
    loop = ask + [called.message.model_dump(exclude_none=True),
                  {"role": "tool", "tool_name": "get_weather", "content": '{"sky": "rain"}'}]
    pieces = list(client.chat(model=MODEL, messages=loop, tools=TOOLS, stream=True))
    assert pieces[-1].done and "".join(p.message.content for p in pieces)
    sent = standin.chats[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"] and sent[2]["content"] == '{"sky": "rain"}'
    assert not standin.orphans
    (one,) = sessions(door)  # the results continued the session that made the call
    with door.client() as c:
        history = c.history(one.id).messages
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[1].tool_calls[0].function.name == "get_weather"


def test_the_openai_library_runs_an_agent_loop_with_call_ids_and_a_json_schema(door, standin):
    client = openai_client(door)
    standin.script_tool_call("get_weather", {"city": "Lyon"})
    ask = [{"role": "user", "content": "Umbrella in Lyon?"}]
    done = client.chat.completions.create(model=MODEL, messages=ask, tools=TOOLS)
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Lyon"}
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    loop = ask + [choice.message.model_dump(exclude_none=True),
                  {"role": "tool", "tool_call_id": call.id, "content": '{"sky": "rain"}'}]
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=loop, tools=TOOLS, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "answer" in json.loads(text)  # the stand-in answers in JSON when a format is asked
    body = standin.chats[-1].body
    assert body["format"] == schema and body["messages"][2]["tool_name"] == "get_weather"
    assert len(sessions(door)) == 1 and not standin.orphans


def test_images_reach_a_vision_model_through_both_apis_and_are_stored_once(door, standin):
    data = base64.b64encode(PNG).decode()
    ollama_client(door).chat(model="vision:4b", messages=[
        {"role": "user", "content": "What is this?", "images": [data]}])
    assert standin.chats[-1].body["messages"][-1]["images"] == [data]
    openai_client(door).chat.completions.create(model="vision:4b", messages=[{"role": "user", "content": [
        {"type": "text", "text": "And this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]}])
    assert standin.chats[-1].body["messages"][-1]["images"] == [data]
    with door.client() as c:
        held = [i for s in c.sessions().sessions for m in c.history(s.id).messages for i in m.images]
        assert len(held) == 2 and len({i.hash for i in held}) == 1
        assert base64.b64decode(c.image(held[0].hash).data) == PNG


def test_tool_call_arguments_nested_too_deep_are_a_400_with_the_reason(door, standin):
    """Arguments given as a JSON string nested 5,000 deep: a 400 that says so (not a 500
    with a RecursionError in the log)."""
    import httpx
    deep = "[" * 5000 + "]" * 5000
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": deep}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    answer = httpx.post(door.http.url + "/v1/chat/completions", timeout=30,
                        headers={"Authorization": f"Bearer {door.http.token}"},
                        json={"model": "qwen2.5:7b", "messages": messages})
    assert answer.status_code == 400 and "nest deeper than" in answer.text


def test_a_conversation_sent_back_ending_with_its_answer_continues_that_answer(door, standin):
    """Issue 59: the way Ollama's and OpenAI's clients ask a model to go on — the conversation
    sent back ending with the answer — continues that answer: the model is sent it as its own
    unfinished message, and the session holds the whole answer in its place, no new question."""
    import httpx
    headers = {"Authorization": f"Bearer {door.http.token}"}
    question = {"role": "user", "content": "Tell me a long story about a lighthouse."}
    standin.script("Once upon a time there was a lighthouse")
    first = httpx.post(door.http.url + "/api/chat", headers=headers, timeout=30,
                       json={"model": "qwen2.5:7b", "messages": [question], "stream": False}).json()["message"]
    standin.script(" on a rocky shore.")
    more = httpx.post(door.http.url + "/api/chat", headers=headers, timeout=30,
                      json={"model": "qwen2.5:7b", "messages": [question, first], "stream": False})
    assert more.status_code == 200, more.text
    assert standin.chats[-1].body["messages"][-1] == {"role": "assistant", "content": first["content"]}
    (session,) = sessions(door)
    with door.client() as c:
        history = c.history(session.id).messages
    assert [m.role for m in history] == ["user", "assistant", "assistant"]
    assert history[-1].content == "Once upon a time there was a lighthouse on a rocky shore."
    stranger = httpx.post(door.http.url + "/api/chat", headers=headers, timeout=30, json={
        "model": "qwen2.5:7b", "stream": False,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sure, the JSON: {"}]})
    assert stranger.status_code == 400 and "continues that answer" in stranger.text
