"""`ctxkeep export`, `import` and `search` against the real daemon (in a thread): what a
session carries out and back in, and finding it again."""

import json


def test_export_import_round_trip_and_other_shapes(daemon, standin, tmp_path):
    sid = daemon.cli("new", "--name", "trip", "--model", "qwen2.5:7b", "--system", "Be brief.", "-q").stdout.strip()
    for i in range(3):
        assert daemon.cli("ask", sid, f"question {i}").returncode == 0
    first = tmp_path / "first.json"
    assert daemon.cli("export", sid, "-o", str(first)).returncode == 0
    daemon.cli("delete", sid)
    made = daemon.cli("import", str(first))
    assert made.returncode == 0 and made.stdout.startswith("imported trip (")
    again = json.loads(daemon.cli("export", "trip").stdout)
    before = json.loads(first.read_text())

    def without_ids_and_times(doc):
        return {**{k: v for k, v in doc.items() if k != "id"},
                "messages": [{k: v for k, v in m.items() if k != "created"} for m in doc["messages"]]}
    assert without_ids_and_times(again) == without_ids_and_times(before)
    assert len(before["messages"]) == 6 and before["system"] == "Be brief."
    # what the imported session's model sees: every message, then the next question
    assert daemon.cli("ask", "trip", "and now?").returncode == 0
    assert len(standin.chats[-1].body["messages"]) == 1 + 6 + 1
    markdown = daemon.cli("export", "trip", "--format", "md").stdout
    assert markdown.startswith("# trip\n") and "## user\n\nquestion 0\n" in markdown
    # chat messages as Ollama's and OpenAI's APIs take them, and JSON lines
    openai = tmp_path / "openai.json"
    openai.write_text(json.dumps({"model": "qwen2.5:7b", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "assistant", "content": "Hi."}]}))
    got = json.loads(daemon.cli("import", str(openai), "--name", "oa", "--json").stdout)
    assert (got["system"], got["model"], got["message_count"]) == ("You are terse.", "qwen2.5:7b", 2)
    lines = tmp_path / "chat.jsonl"
    lines.write_text('{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n')
    assert json.loads(daemon.cli("import", str(lines), "--json").stdout)["message_count"] == 2
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "wizard", "content": "x"}]')
    refused = daemon.cli("import", str(bad))
    assert refused.returncode == 1 and "message 1" in refused.stderr and "roles" in refused.stderr


def test_a_conversation_larger_than_a_frame_is_imported_in_parts(daemon, tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                                       "content": f"{i} " + "word " * 200}) + "\n" for i in range(600)))
    got = json.loads(daemon.cli("import", str(big), "--json").stdout)  # ~600 KB: three requests
    assert got["message_count"] == 600
    exported = json.loads(daemon.cli("export", got["id"]).stdout)
    assert [m["content"].split()[0] for m in exported["messages"]] == [str(i) for i in range(600)]


def test_search_across_sessions(daemon, standin):
    for name, text in (("one", "The walrus and the carpenter"), ("two", "A carpenter ant, not a walrus")):
        daemon.cli("new", "--name", name, "--model", "qwen2.5:7b", "-q")
        daemon.cli("set", name, "--memory", "none")  # the stand-in's echo stays the question's
        assert daemon.cli("ask", name, text).returncode == 0
    found = daemon.cli("search", "walrus", "CARPENTER")
    lines = found.stdout.splitlines()
    assert found.returncode == 0 and lines[-1] == "4 matches"  # each question and its echo
    assert lines[0].startswith("two #1 assistant") and "walrus" in lines[1]
    data = json.loads(daemon.cli("search", "walrus", "-s", "one", "--json").stdout)
    assert data["total"] == 2 and {h["session_name"] for h in data["hits"]} == {"one"}
    assert daemon.cli("search", "the").returncode == 1  # only a stop word


def test_export_import_keeps_alternatives_what_the_model_sees_and_branch_links(daemon, standin, tmp_path):
    sid = daemon.cli("new", "--name", "pick", "--model", "qwen2.5:7b", "-q").stdout.strip()
    standin.script("Blue.", "Teal.", "Carrot.")
    daemon.cli("chat", sid, input="Name a colour\n/retry\n/edit Name a vegetable\n/quit\n")
    daemon.cli("branch", "pick", "--at", "0", "--name", "pick-2")
    with daemon.client() as c:
        seen = [m.content for m in c.history(sid, active=True).messages]
    assert seen == ["Name a vegetable", "Carrot."]
    exported = tmp_path / "pick.json"
    daemon.cli("export", "pick-2", "-o", str(tmp_path / "pick-2.json"))
    daemon.cli("export", "pick", "-o", str(exported))
    daemon.cli("delete", "pick-2")
    daemon.cli("delete", "pick")
    assert daemon.cli("import", str(exported)).returncode == 0
    with daemon.client() as c:
        again = c.session("pick").session
        assert [m.content for m in c.history(again.id, active=True).messages] == seen
        links = [(m.reply_to, m.alternative_of) for m in c.history(again.id).messages]
    assert links == [(-1, -1), (0, -1), (0, 1), (-1, 0), (3, 2)]
    # the branch, imported after its source: linked to it again, by name
    branch = daemon.cli("import", str(tmp_path / "pick-2.json"), "--json")
    assert json.loads(branch.stdout)["branched_from"] == again.id, branch.stderr
    daemon.cli("delete", "pick")
    alone = daemon.cli("import", str(tmp_path / "pick-2.json"), "--name", "orphan")
    assert alone.returncode == 0 and "imported without the link" in alone.stderr
