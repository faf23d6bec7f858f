"""Recall through the real daemon and the stand-in: what a prompt recalled is said and
recorded, ranking by words alone without an embedding model, the CLI, an imported history
recalled after a restart."""

import random

from chatter import FACT, FILLER, filler_reply
from conftest import until_idle, wait_for
from ctxkeep.daemon.retrieval import select
from ctxkeep.protocol.events import GenerationRecalled, ResponseGeneration

MODEL = "qwen2.5:7b"


def test_the_daemon_says_what_the_prompt_recalled(client, standin):
    """Over the real daemon: `generation.recalled` lists the recalled passages; they are the
    block the stand-in received; the answer records them; usage shows their share; status
    says how recall ranks. A request that does not speak of the past gets only what is about
    it: the fact it names, or nothing where a checkpoint kept the fact word for word."""
    rng = random.Random(5)
    standin.reply_fn = filler_reply
    s = client.create_session(model=MODEL, num_ctx=2048).session
    for text in [FACT] + [" ".join(rng.choice(FILLER) for _ in range(25)) for _ in range(40)]:
        acc = client.send(s.id, text)
        until_idle(client, s.id, acc.generation_id)
    acc = client.send(s.id, "Where does Alice live these days?")
    end = next(e for e in until_idle(client, s.id, acc.generation_id)
               if isinstance(e, ResponseGeneration) and e.generation_id == acc.generation_id)
    prompt = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"]
    # the fact: recalled, or kept word for word by the checkpoint that replaced it (fact_check)
    assert FACT in prompt[-1]["content"] or FACT in prompt[0]["content"]
    assert set(end.message.recalled) <= {0, 1}, end.message.recalled  # the fact (and its answer) alone
    acc = client.send(s.id, "What did I say about the river and the garden?")
    received = wait_for(client, GenerationRecalled, where=lambda e: e.generation_id == acc.generation_id)
    end = wait_for(client, ResponseGeneration, where=lambda e: e.generation_id == acc.generation_id)
    sent = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]
    assert received.recalled and all(p.text in sent for p in received.recalled)
    assert end.message.recalled == sorted({p.seq for p in received.recalled})
    usage = client.usage(s.id).usage
    assert usage.exact and 0 < usage.segments.recalled < usage.tokens
    assert client.status().status.recall.startswith("by words and meaning (nomic-embed-text)")
    client.set_model(s.id, recall=False)
    acc = client.send(s.id, "And what did I say about the river and the walk?")
    until_idle(client, s.id, acc.generation_id)
    sent = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]
    assert select.OPENING not in sent


def test_without_an_embedding_model_recall_ranks_by_words_and_says_so(daemon_factory, standin):
    daemon = daemon_factory()
    daemon.write_config('embed_model = "nosuch-embedder"\n')
    daemon.start()
    with daemon.client() as c:
        c.subscribe("")
        s = c.create_session(model=MODEL, num_ctx=2048).session
        for text in [FACT] + [" ".join(FILLER) for _ in range(30)]:
            acc = c.send(s.id, text)
            until_idle(c, s.id, acc.generation_id)
        acc = c.send(s.id, "Where does Alice live these days?")
        received = wait_for(c, GenerationRecalled, where=lambda e: e.generation_id == acc.generation_id)
        prompt = [ch for ch in standin.chats if ch.body.get("stream", True)][-1].body["messages"]
        assert (0 in [p.seq for p in received.recalled] or FACT in prompt[0]["content"]) and not received.by_meaning
        status = c.status().status.recall
        assert status.startswith("by words only") and "ollama pull nosuch-embedder" in status


def test_the_cli_sets_recall_and_shows_it(daemon, standin):
    import json
    sid = daemon.cli("new", "--model", MODEL, "-q").stdout.strip()
    off = daemon.cli("set", sid, "--recall", "off", "--recall-budget", "500", "--json")
    assert off.returncode == 0, off.stderr
    assert json.loads(off.stdout)["recall"] is False and json.loads(off.stdout)["recall_budget"] == 500
    on = json.loads(daemon.cli("set", sid, "--recall", "on", "--recall-budget", "0", "--json").stdout)
    assert on["recall"] is True and on["recall_budget"] is None  # 0: the daemon's budget again
    assert "  recall    by words and meaning (nomic-embed-text)" in daemon.cli("status").stdout
    chat = daemon.cli("chat", sid, input="hello\n/usage\n/quit\n")
    assert "recalled" in chat.stdout  # /usage lists recall's share (none yet)


def test_an_imported_history_is_recalled_after_a_restart(daemon_factory, standin, tmp_path):
    """A conversation brought in with `import` (its early part never in any prompt the
    daemon sent), then a restart: its first turn recalls from the whole history (the index
    is built from the store; embeddings follow in the background)."""
    import json
    rng = random.Random(6)
    conversation = [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted!"}]
    for _ in range(300):
        conversation += [{"role": "user", "content": " ".join(rng.choice(FILLER) for _ in range(25))},
                         {"role": "assistant", "content": " ".join(rng.choice(FILLER) for _ in range(25))}]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"messages": conversation}))
    daemon = daemon_factory().start()
    assert daemon.cli("import", str(path), "--name", "old", "--model", MODEL,
                      "--num-ctx", "4096").returncode == 0
    daemon.stop()
    daemon.start()
    standin.reply_fn = filler_reply
    asked = daemon.cli("ask", "-s", "old", "--jsonl", "Where", "does", "Alice", "live", "these", "days?")
    assert asked.returncode == 0, asked.stderr
    received = [p["seq"] for line in asked.stdout.splitlines() if json.loads(line)["type"] == "generation.recalled"
                for p in json.loads(line)["recalled"]]
    prompt = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"]
    # recalled from the whole history, or kept word for word by the pass's checkpoint (fact_check)
    if FACT not in prompt[0]["content"]:
        assert 0 in received and FACT in prompt[-1]["content"]
    assert set(received) <= {0, 1}, received  # the fact (and its answer) alone: nothing else is about it


def test_a_daemon_stopped_while_an_import_is_indexed_stops_cleanly(short_tmp, standin, caplog):
    """An import of thousands of messages is indexed for recall in a worker thread; a stop
    that comes meanwhile waits for the page under way, then closes the store: no read of a
    closed store, no task left pending."""
    import asyncio

    from harness import DaemonThread
    daemon = DaemonThread(short_tmp, standin.url).start()
    messages = [{"role": ("user", "assistant")[i % 2], "content": f"message {i} about the garden and the river"}
                for i in range(6000)]
    with daemon.client(timeout=60) as c:
        c.import_session(model=MODEL, messages=messages)
    loop = daemon._loop
    daemon.stop()
    assert [t.get_name() for t in asyncio.all_tasks(loop) if not t.done()] == []
    problems = [r for r in caplog.records if r.levelname in ("WARNING", "ERROR") and (
        "recall" in r.getMessage() or "pending" in r.getMessage() or "closed" in r.getMessage())]
    assert problems == []


def test_a_failed_embedding_never_marks_the_server_down_for_answers(client, standin, caplog):
    """Embedding calls fail (their connection cut, as by a crash): turns are answered by
    words, the server stays up in `status`, and nothing is logged as never retrieved."""
    import logging
    import time
    s = client.create_session(model=MODEL).session
    standin.fail_next("drop", path="/api/embed")
    with caplog.at_level(logging.WARNING):
        client.turn(s.id, FACT)  # its passages are embedded after it: the cut calls
        deadline = time.monotonic() + 10
        while any(f.path == "/api/embed" for f in standin.faults) and time.monotonic() < deadline:
            time.sleep(0.05)
        (server,) = client.status().status.backends
        assert server.reachable and not server.retry_in
        assert isinstance(client.turn(s.id, "Where does Alice live these days?"), ResponseGeneration)
    assert "never retrieved" not in caplog.text and "is down" not in caplog.text


def test_a_message_no_ranking_can_use_is_never_embedded(client, standin):
    """The question's vector is a round trip to the embedding model before the first token:
    asked only where a ranking may use it. A new session's everyday request (nothing of its
    own out of the prompt; its words rule out memory) is not embedded; a question about
    the user's past is, and memory brings the fact back by it."""
    import json
    import time
    past = client.create_session(model=MODEL).session
    client.turn(past.id, FACT)
    client.memory_search("Alice")  # memory reads the session now, its vectors follow
    deadline = time.monotonic() + 10
    while "still to embed" in client.status().status.recall and time.monotonic() < deadline:
        time.sleep(0.05)
    # as a query (nomic-embed-text's prefix); each stored message is embedded as a document later
    asked = lambda text: [b for b in standin.embeds if f"search_query: {text}" in json.dumps(b.get("input"))]
    fresh = client.create_session(model=MODEL).session
    assert isinstance(client.turn(fresh.id, "What is the capital of Canada?"), ResponseGeneration)
    assert asked("What is the capital of Canada?") == []
    client.turn(fresh.id, "What did I tell you about my sister Alice?")
    assert asked("What did I tell you about my sister Alice?")
    sent = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]
    assert "Lisbon" in sent
