"""Recall (issue 27): the passages of a session's whole history that a new message needs,
brought into its prompt. Selection as a pure function (hypothesis), the index and the
engine in-process, and the real daemon with the stand-in."""

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import until_idle, wait_for
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.recall import select
from ctxkeep.daemon.recall.lexical import query_terms, terms
from ctxkeep.daemon.recall.passages import PASSAGE_CHARS, Passage, passages
from ctxkeep.daemon.recall.recaller import SessionIndex
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.protocol import requests
from ctxkeep.protocol.events import GenerationRecalled, ResponseGeneration
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
FILLER = "weather tea garden walk book music film cooking travel sleep coffee bread river cloud".split()
FACT = "By the way, my sister Alice moved to Lisbon in March."


def _passage(seq: int, text: str, role: str = "user", reply_to: int = -1) -> Passage:
    return Passage(seq=seq, part=0, parts=1, role=role, created=1.7e9 + seq, text=text, reply_to=reply_to)


@settings(max_examples=200)
@given(lengths=st.lists(st.integers(1, 60), min_size=1, max_size=30), budget=st.integers(0, 400),
       order=st.randoms(use_true_random=False))
def test_selection_never_passes_its_budget_nor_repeats_and_keeps_time_order(lengths, budget, order):
    found = [_passage(i, "word " * n, role="user" if i % 2 == 0 else "assistant",
                      reply_to=i - 1 if i % 2 else -1) for i, n in enumerate(lengths)]
    ranked = list(range(len(found)))
    order.shuffle(ranked)
    cost = lambda pid: len(found[pid].text.split()) + 3  # noqa: E731
    partners = lambda p: [p.reply_to] if p.reply_to >= 0 else ([p.seq + 1] if p.seq + 1 < len(found) else [])  # noqa: E731
    chosen = select.select(ranked, found, budget, 5, cost, partners)
    assert 5 + sum(cost(p.seq) for p in chosen) <= max(budget, 5) or not chosen
    assert len({p.seq for p in chosen}) == len(chosen)
    assert [p.seq for p in chosen] == sorted(p.seq for p in chosen)


def test_an_answer_brings_its_question_when_both_fit():
    found = [_passage(0, "what is the capital of portugal"), _passage(1, "Lisbon.", "assistant", 0),
             _passage(2, "unrelated filler " * 5)]
    cost = lambda pid: 10  # noqa: E731
    partners = lambda p: [0] if p.seq == 1 else ([1] if p.seq == 0 else [])  # noqa: E731
    assert [p.seq for p in select.select([1, 2], found, 100, 0, cost, partners)] == [0, 1, 2]
    assert [p.seq for p in select.select([1, 2], found, 25, 0, cost, partners)] == [1, 2]  # the question no longer fits


def test_long_messages_are_recalled_in_passages_that_point_to_them():
    long = NewMessage(role="assistant", content="\n\n".join(f"Paragraph {i}. " + "words of it " * 30
                                                           for i in range(6))).record(7, 0.0)
    parts = passages(long)
    assert len(parts) > 2 and all(p.seq == 7 and len(p.text) <= PASSAGE_CHARS for p in parts)
    assert [p.part for p in parts] == list(range(len(parts))) and parts[0].parts == len(parts)
    assert not passages(NewMessage(role="assistant", content="[SUMMARY] x", kind="summary").record(1, 0.0))
    assert not passages(NewMessage(role="assistant", content="cut", status="interrupted").record(2, 0.0))


def test_words_are_matched_by_their_stems_and_the_new_message_outweighs_the_last_turn():
    index = SessionIndex()
    index.add([NewMessage(role="user", content=FACT).record(0, 0.0),
               *(NewMessage(role="user", content=" ".join(FILLER)).record(i, 0.0) for i in range(1, 30))])
    assert "move" in terms("she moves") and terms("moved") == terms("moving")
    ranked = index.lexical.rank(query_terms("Where did Alice move?", " ".join(FILLER * 3)), set(), 5)
    assert index.lexical.passages[ranked[0][0]].seq == 0
    assert index.lexical.rank(query_terms("Alice"), {0}, 5) == []  # the active context is left out


def _reply(messages):
    if messages[-1]["content"].startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
        return "Summary: they chatted."
    return "Sure. " + " ".join(random.Random(len(messages)).choice(FILLER) for _ in range(30))


async def _talk(app: InProcess, sid: str, texts: list[str]) -> list[list]:
    """Each turn's recalled passages (none: [])."""
    out = []
    for text in texts:
        accepted = await app.call(requests.Send(session=sid, text=text))
        await app.services.jobs.drain(30)
        out.append(next((e.recalled for e in app.bus.seen if isinstance(e, GenerationRecalled)
                         and e.generation_id == accepted.generation_id), []))
    return out


def test_a_fact_gone_from_the_context_comes_back_for_a_question_about_it_only(tmp_path):
    rng = random.Random(3)
    backend = MemoryBackend(reply=_reply)
    app = InProcess(tmp_path, backend, Config(embed_model=""))  # by words alone

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=2048))).session.id
        await _talk(app, sid, [FACT] + [" ".join(rng.choice(FILLER) for _ in range(25)) for _ in range(40)])
        assert 0 not in app.store.context.get(sid).seqs  # the fact left the active context
        asked = (await _talk(app, sid, ["Where does Alice live these days?"]))[-1]
        prompt = backend.chats[-1][0]
        unrelated = (await _talk(app, sid, ["What is the capital city of France, do you know?"]))[-1]
        return asked, prompt, unrelated
    asked, prompt, unrelated = asyncio.run(go())
    app.close()
    assert 0 in [p.seq for p in asked]
    last = prompt[-1]["content"]
    assert last.startswith(select.OPENING) and FACT in last and last.endswith("Where does Alice live these days?")
    assert not any(FACT in m["content"] for m in prompt[:-1])  # only in the block, once
    assert 0 not in [p.seq for p in unrelated]


def test_recall_never_makes_a_prompt_compact_or_not_fit(tmp_path):
    """In a small window with a long history, every prompt leaves its reply room (the
    in-memory backend refuses any over the window) and recall adds to none that is full."""
    rng = random.Random(4)
    backend = MemoryBackend(reply=_reply)
    app = InProcess(tmp_path, backend, Config(embed_model=""))

    async def go():
        sid = (await app.call(requests.SessionCreate(model=MODEL, num_ctx=1024))).session.id
        texts = [f"Fact {i}: Person{i} keeps a {rng.choice(FILLER)} collection." for i in range(10)]
        texts += [" ".join(rng.choice(FILLER) for _ in range(20)) for _ in range(30)]
        texts += [f"What does Person{i} collect?" for i in range(10)]
        return await _talk(app, sid, texts)
    received = asyncio.run(go())
    app.close()
    assert not [e for e in app.bus.seen if type(e).__name__ == "GenerationError"]
    turns = [options for messages, options in backend.chats
             if not messages[-1]["content"].startswith(("Conversation to", "Summary to", "Summaries of"))]
    assert turns and all(options["num_predict"] >= 128 for options in turns)  # the reply room (1024 // 8)
    assert any(received[-10:])


def test_the_daemon_says_what_the_prompt_recalled(client, standin):
    """Over the real daemon: `generation.recalled` lists the recalled passages; they are the
    block the stand-in received; the answer records them; usage shows their share; status
    says how recall ranks."""
    rng = random.Random(5)
    standin.reply_fn = _reply
    s = client.create_session(model=MODEL, num_ctx=2048).session
    for text in [FACT] + [" ".join(rng.choice(FILLER) for _ in range(25)) for _ in range(40)]:
        acc = client.send(s.id, text)
        until_idle(client, s.id, acc.generation_id)
    acc = client.send(s.id, "Where does Alice live these days?")
    received = wait_for(client, GenerationRecalled, where=lambda e: e.generation_id == acc.generation_id)
    end = wait_for(client, ResponseGeneration, where=lambda e: e.generation_id == acc.generation_id)
    sent = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]
    assert received.recalled and all(p.text in sent for p in received.recalled)
    assert FACT in sent and end.message.recalled == sorted({p.seq for p in received.recalled})
    usage = client.usage(s.id).usage
    assert usage.exact and 0 < usage.segments.recalled < usage.tokens
    assert client.status().status.recall.startswith("by words and meaning (nomic-embed-text)")
    client.set_model(s.id, recall=False)
    acc = client.send(s.id, "And where does Alice work?")
    until_idle(client, s.id, acc.generation_id)
    sent = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]
    assert not sent.startswith(select.OPENING)


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
        assert 0 in [p.seq for p in received.recalled] and not received.by_meaning
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
    standin.reply_fn = _reply
    asked = daemon.cli("ask", "-s", "old", "--jsonl", "Where", "does", "Alice", "live", "these", "days?")
    assert asked.returncode == 0, asked.stderr
    received = next(json.loads(line) for line in asked.stdout.splitlines()
                    if json.loads(line)["type"] == "generation.recalled")
    assert 0 in [p["seq"] for p in received["recalled"]]
    sent = [c for c in standin.chats if c.body.get("stream", True)][-1].body["messages"][-1]["content"]
    assert FACT in sent
