"""Summaries asked after the opening of the last turn's prompt (issue 42): the model's server
holds that turn's prompt and answer in its cache, so a checkpoint asked right after the
messages it replaces, and an aging asked after the system message, are read from it but
for the request, where a transcript of the same messages is read whole. Where that leaves
the summary too little room, or the server refuses it as too long, the call goes on its
own; a call on its own tells the record that the server's cache moved."""

import asyncio

from ctxkeep.daemon.backends.protocol import ChatChunk, ModelCallError
from ctxkeep.daemon.compaction.summarizer import Summarizer
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.prompt import build_messages
from ctxkeep.daemon.context.served import LastPrompts, Opening, Served, opening_through
from ctxkeep.daemon.store.context_records import ActiveContext
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol import ErrorCode

HEADER = "Conversation to summarize:"


def turn(texts: list[tuple[str, str]], question: str = "and now?") -> Served:
    """A turn of session s1 whose context held `texts` (role, text), as its prompt was sent."""
    session = SessionRecord(id="s1", name="s1", model="m", system="be brief", num_ctx=4096, created=0, updated=0)
    active = [MessageRecord(seq=i, role=r, content=t, created=0.0) for i, (r, t) in enumerate(texts)]
    view = View(session, ActiveContext(seqs=[m.seq for m in active]), active)
    user = MessageRecord(seq=len(texts), role="user", content=question, created=0.0)
    return Served("s1", [*build_messages(*view, user), {"role": "assistant", "content": "fine"}], view)


TALK = [("user", "plan the garden"), ("assistant", "tomatoes by the wall"), ("user", "and the beans?"),
        ("assistant", "beans in the middle")]


class Recording:
    """A model backend that answers every call with a short summary and keeps what it was sent
    (refusing, when told, a call that goes on from a turn as too long)."""

    def __init__(self, refuse_in_place: bool = False) -> None:
        self.sent: list[list[dict]] = []
        self.refuse_in_place = refuse_in_place

    async def chat_once(self, model, messages, options):
        self.sent.append(messages)
        if self.refuse_in_place and messages[0]["content"] == "be brief":
            raise ModelCallError(ErrorCode.CONTEXT_OVERFLOW, "the input length exceeds the context length")
        return ChatChunk(done=True, eval_count=4, content="the garden's plan")


def summarizer(tmp_path, backend: Recording, window: int = 4096) -> tuple[Summarizer, LastPrompts]:
    last = LastPrompts()
    last.turn("m", turn(TALK))
    found = Summarizer(backend, Estimator(Store.open(tmp_path)), "m", window, 256, 2000).continuing(last, "s1")
    return found, last


def test_the_last_prompt_is_the_last_turn_of_its_session_on_its_model():
    last = LastPrompts()
    served = turn(TALK)
    last.turn("m", served)
    assert last.of("s1", "m") is served
    assert last.of("s2", "m") is None and last.of("s1", "other") is None  # another session's, another model
    last.turn("m", Served("s2", served.messages, served.view))
    assert last.of("s1", "m") is None  # another session's turn was read since
    last.other("m")
    assert last.of("s2", "m") is None  # a request no summary can go on from


def test_the_opening_through_a_message_is_the_prompt_as_the_server_read_it(tmp_path):
    estimator = Estimator(Store.open(tmp_path))
    served = turn(TALK)
    opening = opening_through(served, 1, estimator)
    assert opening is not None and opening.messages == served.messages[:3]  # system, the question, its answer
    assert opening.tokens >= estimator.context(*served.view._replace(active=served.view.active[:2]))
    assert opening_through(served, 9, estimator) is None  # not in the prompt's context
    merged = turn([("user", "a"), ("user", "b"), ("assistant", "c")])  # sent as one message of the user's
    assert opening_through(merged, 0, estimator) is None
    assert opening_through(merged, 1, estimator).messages == merged.messages[:3]  # with the answer to it
    last = turn(TALK)
    assert opening_through(last, 3, estimator).messages == last.messages[:5]
    assert opening_through(turn(TALK[:3]), 2, estimator) is None  # sent merged with the turn's own question


def test_an_aging_goes_on_from_the_system_message_the_server_holds(tmp_path):
    backend = Recording()
    found, last = summarizer(tmp_path, backend)
    text, tokens = asyncio.run(found.call("Shorten it.", "", "a long summary", "Summary to shorten:", room=100))
    assert (text, tokens) == ("the garden's plan", 4)
    sent = backend.sent[-1]
    assert sent[0] == {"role": "system", "content": "be brief"} and len(sent) == 2 and sent[1]["role"] == "user"
    assert sent[1]["content"].startswith("Summary to shorten:\n\na long summary") and "Shorten it." in sent[1]["content"]
    assert last.of("s1", "m") is not None  # the server still holds the turn's opening: the next call goes on too


def test_a_call_the_window_leaves_too_little_room_goes_on_from_less_or_on_its_own(tmp_path):
    backend = Recording()
    found, last = summarizer(tmp_path, backend)
    opening = Opening(found.served.messages[:3], 4096 - 60)
    asyncio.run(found.summarize(["User: a\n\n"], "Compress it.", "", room=100, opening=opening))
    assert backend.sent[-1][0]["content"] == "be brief" and len(backend.sent[-1]) == 2  # the transcript, after
    assert backend.sent[-1][1]["content"].startswith(f"{HEADER}\n\nUser: a")     # the system message
    found.window = 200  # not even the system message leaves half the room
    asyncio.run(found.summarize(["User: a\n\n"], "Compress it.", "", room=300, opening=opening))
    assert backend.sent[-1][0]["content"] == "Compress it." and len(backend.sent[-1]) == 2  # on its own
    assert last.of("s1", "m") is None  # which the server now holds instead of the turn


def test_a_call_refused_as_too_long_goes_on_its_own(tmp_path):
    backend = Recording(refuse_in_place=True)
    found, last = summarizer(tmp_path, backend)
    asyncio.run(found.call("Shorten it.", "", "a long summary", "Summary to shorten:", room=100))
    assert [m[0]["content"] for m in backend.sent] == ["be brief", "Shorten it."]
    assert found.served is None and last.of("s1", "m") is None


def test_a_checkpoint_after_its_messages_is_one_call(tmp_path):
    """A transcript of many chunks takes a call each and a merge; asked right after the
    messages it replaces in the prompt the server holds, one call that reads the request."""
    backend = Recording()
    found, _ = summarizer(tmp_path, backend)
    steps = []
    chunks = ["User: a\n\n", "Assistant: b\n\n", "User: c\n\n"]
    opening = opening_through(found.served, 1, found.estimator)
    asyncio.run(found.summarize(chunks, "Compress it.", "", lambda *a: steps.append(a[:2]), room=100, opening=opening))
    assert len(backend.sent) == 1 and backend.sent[0][:3] == found.served.messages[:3] and len(backend.sent[0]) == 4
    assert backend.sent[0][3]["content"].startswith(f"{HEADER}\n\nthe conversation above")
    assert steps == [(0, 1), (1, 1)]
    through_question = opening_through(found.served, 2, found.estimator)  # and the answer after it
    asyncio.run(found.summarize(chunks, "Compress it.", "", room=100, opening=through_question))
    assert backend.sent[-1][:5] == found.served.messages[:5] and backend.sent[-1][4]["content"] == "beans in the middle"
    assert backend.sent[-1][5]["content"].startswith(HEADER) and len(backend.sent[-1]) == 6
    backend.sent.clear()
    found.served = None  # no turn to go on from: the transcript, a call per chunk, then a merge
    asyncio.run(found.summarize(chunks, "Compress it.", "", room=100))
    assert all(m[0]["role"] == "system" and m[0]["content"] != "be brief" and len(m) == 2 for m in backend.sent)
    assert [m[1]["content"].startswith(HEADER) for m in backend.sent] == [True, True, True, False]


def test_an_aging_names_the_checkpoints_the_system_message_shows_as_they_are():
    import msgspec

    from ctxkeep.daemon.compaction.aging import shown_in
    from ctxkeep.daemon.store.context_records import Checkpoint
    recent = Checkpoint(id="a", first_seq=0, last_seq=5, summary="they planned the garden", original_tokens=90,
                        current_tokens=9)
    old = Checkpoint(id="b", age="old", first_seq=6, last_seq=9, summary="beans", original_tokens=40, current_tokens=2)
    served = turn(TALK)
    served = Served("s1", served.messages, served.view._replace(
        context=msgspec.structs.replace(served.view.context, checkpoints=[old, recent])))
    assert shown_in(served, [recent]) == ("the summary under \u201c[recent checkpoint, messages 0-5]\u201d "
                                          "at the start of the conversation above.")
    aged = msgspec.structs.replace(recent, age="old")  # aged without a call since: shown as it was then
    assert "\u201c[old checkpoint, messages 6-9]\u201d and \u201c[recent checkpoint" in shown_in(served, [old, aged])
    assert shown_in(served, [msgspec.structs.replace(recent, summary="shorter")]) == ""  # not as it is now
    assert shown_in(None, [recent]) == "" and shown_in(served, []) == ""


def test_an_opening_of_a_counted_prompt_is_its_share_of_the_count(tmp_path):
    """The server counted the whole prompt: an opening is its estimate scaled by what the count
    made of the whole estimate, a little more (an estimate alone is raised by its error, which
    kept checkpoints that fit from going on from the turn)."""
    from ctxkeep.daemon.context.served import SCALED_MARGIN, opening_tokens
    estimator = Estimator(Store.open(tmp_path))
    served = turn(TALK)
    assert opening_tokens(served, estimator, "m", 1000) == estimator.raised("m", 1000)  # no count
    counted = Served("s1", served.messages, served.view, counted=1800, estimated=2000)
    assert opening_tokens(counted, estimator, "m", 1000) == round(900 * (1 + SCALED_MARGIN)) + 16
    assert opening_tokens(counted, estimator, "m", 1000) < estimator.raised("m", 1000)
