"""Tool calling over the real daemon (issue 31): an answer that calls a tool ends its
generation with the calls; the client sends what the tool returned, which starts the next
generation; the prompt carries the calls and results as Ollama's chat API does, and the
stand-in's template (which refuses orphaned calls and results) takes every prompt."""

import pytest

from conftest import wait_terminal
from ctxkeep.clients.errors import CtxkeepError
from ctxkeep.protocol.events import ResponseGeneration
from ctxkeep.protocol.tools import FunctionSpec, ToolResult, ToolSpec

MODEL = "qwen2.5:7b"
READ = ToolSpec(function=FunctionSpec(name="read_file", description="Read a file",
                                      parameters={"type": "object", "properties": {"path": {"type": "string"}}}))
RUN = ToolSpec(function=FunctionSpec(name="run", description="Run a command"))


def test_a_three_step_agent_loop_calls_sends_results_and_answers(client, standin):
    s = client.create_session(model=MODEL, name="agent").session
    client.set_tools(s.id, [READ, RUN])  # the session's default tools
    standin.script_tool_call("read_file", {"path": "setup.py"})
    standin.script_tool_call("run", {"cmd": "pytest -q"})
    standin.script("Two tests fail in test_io.py; the rest pass.")
    called, _ = wait_terminal(client, client.send(s.id, "Why do the tests fail?").generation_id)
    assert isinstance(called, ResponseGeneration)
    assert [c.function.name for c in called.message.tool_calls] == ["read_file"]
    assert called.message.tool_calls[0].function.arguments == {"path": "setup.py"}
    assert called.message.done_reason == "stop"
    sent = standin.chats[-1].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["read_file", "run"]
    ran, _ = wait_terminal(client, client.send(s.id, tool_results=[
        ToolResult(tool_name="read_file", content="from setuptools import setup\nsetup()")]).generation_id)
    assert [c.function.name for c in ran.message.tool_calls] == ["run"]
    body = standin.chats[-1].body["messages"]
    assert body[-2]["tool_calls"] == [{"function": {"name": "read_file", "arguments": {"path": "setup.py"}}}]
    assert body[-1] == {"role": "tool", "content": "from setuptools import setup\nsetup()", "tool_name": "read_file"}
    answer, _ = wait_terminal(client, client.send(s.id, tool_results=[
        ToolResult(tool_name="run", content="2 failed, 40 passed")]).generation_id)
    assert answer.message.content == "Two tests fail in test_io.py; the rest pass." and not answer.message.tool_calls
    assert not standin.orphans and not standin.truncations
    history = client.history(s.id).messages
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert history[2].tool_results[0].tool_name == "read_file" and history[2].content.startswith("[read_file]")
    assert history[4].reply_to == -1 and history[5].reply_to == 4
    seen = [m.role for m in client.history(s.id, active=True).messages]
    assert seen == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_tool_results_that_answer_no_call_are_refused_and_nothing_is_stored(client, standin):
    s = client.create_session(model=MODEL, name="strict").session
    with pytest.raises(CtxkeepError, match="does not end with an answer that calls tools"):
        client.send(s.id, tool_results=[ToolResult(tool_name="run", content="ok")])
    standin.script_tool_call("run", {"cmd": "ls"})
    wait_terminal(client, client.send(s.id, "List the files", tools=[RUN]).generation_id)
    with pytest.raises(CtxkeepError, match="no call of the last answer is to 'read_file'"):
        client.send(s.id, tool_results=[ToolResult(tool_name="read_file", content="x")])
    with pytest.raises(CtxkeepError, match="send the tool results alone"):
        client.send(s.id, "and also", tool_results=[ToolResult(tool_name="run", content="a b")])
    assert client.session(s.id).session.message_count == 2
    assert not standin.orphans


def test_a_turn_without_tools_sends_none_and_a_turn_may_offer_its_own(client, standin):
    s = client.create_session(model=MODEL, name="plain").session
    wait_terminal(client, client.send(s.id, "hello").generation_id)
    assert not standin.chats[-1].body.get("tools")  # (the ollama package sends [])
    wait_terminal(client, client.send(s.id, "again", tools=[RUN]).generation_id)
    assert [t["function"]["name"] for t in standin.chats[-1].body["tools"]] == ["run"]


def test_a_long_agent_loop_compacts_old_results_first_and_never_orphans_a_call(client, standin):
    s = client.create_session(model=MODEL, name="long-agent", num_ctx=8192).session
    client.set_tools(s.id, [RUN])
    output = "\n".join(f"case {i} ok" for i in range(80))  # ~500 tokens: three fit, and more
    wait_first = client.send  # the first step asks; every later one sends the last step's result
    standin.script_tool_call("run", {"cmd": "pytest -k step0"})
    ended, _ = wait_terminal(client, wait_first(s.id, "Run the tests step by step").generation_id)
    for step in range(1, 20):
        standin.script_tool_call("run", {"cmd": f"pytest -k step{step}"})
        ended, _ = wait_terminal(client, client.send(s.id, tool_results=[
            ToolResult(tool_name="run", content=f"step {step - 1}\n{output}")]).generation_id)
        assert isinstance(ended, ResponseGeneration), ended
    assert not standin.orphans and not standin.truncations and not standin.refusals
    prompts = [c.body["messages"] for c in standin.chats]
    assert any("lines omitted" in m.get("content", "") for p in prompts for m in p if m["role"] == "tool")
    last = [m for m in prompts[-1] if m["role"] == "tool"]
    assert [m["content"].split("\n")[0] for m in last[-3:]] == ["step 16", "step 17", "step 18"]
    assert all(m["content"].endswith(output) for m in last[-3:])  # the last three whole


def test_results_too_long_to_keep_three_whole_shorten_the_older_ones_not_the_turns_own(client, standin):
    """Three results that do not fit beside the reply room: the two before the turn's own are
    given as head and tail too, rather than the turn refused; the turn's own stays whole."""
    s = client.create_session(model=MODEL, name="big-results", num_ctx=4096).session
    client.set_tools(s.id, [RUN])
    output = "\n".join(f"case {i} of the suite passed" for i in range(150))  # ~1,100 tokens
    standin.script_tool_call("run", {"cmd": "pytest -k step0"})
    wait_terminal(client, client.send(s.id, "Run the tests step by step").generation_id)
    for step in range(1, 6):
        standin.script_tool_call("run", {"cmd": f"pytest -k step{step}"})
        ended, _ = wait_terminal(client, client.send(s.id, tool_results=[
            ToolResult(tool_name="run", content=f"step {step - 1}\n{output}")]).generation_id)
        assert isinstance(ended, ResponseGeneration), ended
        last = [m["content"] for m in standin.chats[-1].body["messages"] if m["role"] == "tool"][-1]
        assert last == f"step {step - 1}\n{output}"  # the turn's own, whole
    assert not standin.orphans and not standin.truncations and not standin.refusals
    tools = [m["content"] for m in standin.chats[-1].body["messages"] if m["role"] == "tool"]
    assert len(tools) >= 2 and all("lines omitted" in t for t in tools[:-1])


def test_an_old_result_that_is_a_files_text_becomes_the_files_outline(client, standin):
    """Level 1 gives a long result of `read_file({"path": "app.py"})` as app.py's outline (its
    functions, each on a line), where a command's output gets its head and tail."""
    s = client.create_session(model=MODEL, name="outline", num_ctx=8192).session
    client.set_tools(s.id, [READ, RUN])
    source = "\n".join(f"def handler_{i}(request):\n    \"\"\"Handle request kind {i}.\"\"\"\n"
                       f"    value = request.get({i})\n    return value\n" for i in range(60))
    standin.script_tool_call("read_file", {"path": "app.py"})
    wait_terminal(client, client.send(s.id, "Read app.py, then run the tests").generation_id)
    result = ToolResult(tool_name="read_file", content=source)
    for step in range(12):
        standin.script_tool_call("run", {"cmd": f"pytest -k step{step}"})
        ended, _ = wait_terminal(client, client.send(s.id, tool_results=[result]).generation_id)
        assert isinstance(ended, ResponseGeneration), ended
        result = ToolResult(tool_name="run", content="\n".join(f"step {step} case {i} ok" for i in range(80)))
        sent = [m["content"] for m in standin.chats[-1].body["messages"] if m.get("tool_name") == "read_file"]
        if sent and sent[0] != source:
            break
    assert sent and sent[0].startswith("L1 def handler_0(request)  # Handle request kind 0.")
    assert "value = request.get(0)" not in sent[0] and not standin.orphans


def test_an_answer_that_does_not_match_its_schema_is_flagged_not_stored_as_valid(client, standin):
    s = client.create_session(model=MODEL, name="shaped").session
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    standin.script('{"city": "Lyon"}', '{"town": 3}', "Lyon, I think")
    good, _ = wait_terminal(client, client.send(s.id, "Which city?", format=schema).generation_id)
    assert good.message.format_error == "" and standin.chats[-1].body["format"] == schema
    bad, _ = wait_terminal(client, client.send(s.id, "Which city?", format=schema).generation_id)
    assert bad.message.format_error == "does not match the schema: 'city' is a required property"
    loose, _ = wait_terminal(client, client.send(s.id, "Which city?", format="json").generation_id)
    assert loose.message.format_error.startswith("not JSON")
    stored = client.history(s.id).messages
    assert [m.format_error != "" for m in stored if m.role == "assistant"] == [False, True, True]
    plain, _ = wait_terminal(client, client.send(s.id, "And you?").generation_id)
    assert plain.message.format_error == ""  # no format asked: nothing to check


def test_ask_format_checks_the_answer_and_show_folds_tool_exchanges(daemon, standin, tmp_path):
    schema = tmp_path / "city.json"
    schema.write_text('{"type": "object", "required": ["city"]}')
    standin.script('{"city": "Lyon"}', '{"town": "Lyon"}')
    ok = daemon.cli("ask", "--new", "--format", str(schema), "Which city?")
    assert ok.returncode == 0 and ok.stdout.strip() == '{"city": "Lyon"}'
    bad = daemon.cli("ask", "--format", str(schema), "Which city?")
    assert bad.returncode == 1 and '{"town": "Lyon"}' in bad.stdout
    assert "not in the format asked for: does not match the schema: 'city' is a required property" in bad.stderr
    missing = daemon.cli("ask", "--format", str(tmp_path / "none.json"), "x")
    assert missing.returncode != 0 and "give `json`, or a file holding a JSON schema" in missing.stderr
    with daemon.client() as client:
        client.subscribe("")
        s = client.create_session(model=MODEL, name="folded").session
        standin.script_tool_call("run", {"cmd": "pytest"})
        wait_terminal(client, client.send(s.id, "Test it", tools=[RUN]).generation_id)
        wait_terminal(client, client.send(s.id, tool_results=[ToolResult(
            tool_name="run", content="collected 40 items\n" + "ok\n" * 50)]).generation_id)
    shown = daemon.cli("show", "folded").stdout
    assert '→ calls run({"cmd": "pytest"})' in shown
    assert "[run] collected 40 items (51 lines, 169 characters)" in shown and "ok\n  ok" not in shown
    assert shown.count("ok") < 5 < daemon.cli("show", "folded", "--full").stdout.count("ok")


def test_the_chat_folds_a_tool_call_to_a_line_and_show_n_gives_it_whole(daemon, standin):
    with daemon.client() as c:
        s = c.create_session(model=MODEL, name="chat-agent").session
        c.set_tools(s.id, [RUN])
    standin.script_tool_call("run", {"cmd": "pytest -q"})
    out = daemon.cli("chat", "chat-agent", input="Why do the tests fail?\n/show 1\n/show 9\n/quit\n").stdout
    assert '→ calls run({"cmd": "pytest -q"})\n(/show 1 for all of it)' in out
    assert out.count('→ calls run({"cmd": "pytest -q"})') == 2  # folded after the turn, then /show 1
    assert "/show: there is no message #9" in out
