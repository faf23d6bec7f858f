"""The two-person chats of the recall bench's `--mode pair` (tests/two_person.py) are what they
claim to be: every message opened with its writer's name, each question's evidence the very
messages that say its answer, asked in the third person of someone every message names."""

import pytest

import two_person
from ctxkeep.daemon.retrieval import asking


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_pair_chat_names_its_writer_in_every_message_and_its_evidence_holds_each_answer(seed):
    chat = two_person.generate(seed, 200)
    first, second = chat.turns[0].user.split(":")[0], chat.turns[0].assistant.split(":")[0]
    assert first != second
    assert all(t.user.startswith(f"{first}: ") and t.assistant.startswith(f"{second}: ") for t in chat.turns)
    assert {q.kind for q in chat.questions} == {"single", "updated", "when", "multi_hop"}
    for q in chat.questions:
        assert len(q.said) == len(q.evidence)
        for turn, text in zip(q.evidence, q.said):
            assert text in (chat.turns[turn].user, chat.turns[turn].assistant)
        named = first if first in q.text else second
        assert named in q.text or q.kind == "multi_hop"
        assert all(text.startswith(f"{named}: ") for text in q.said) or q.kind == "multi_hop"
        assert not q.text.startswith(("My ", "I ")) and " my " not in q.text  # asked from outside


def test_an_updated_fact_is_asked_of_its_newer_message():
    chat = two_person.generate(4, 300)
    updated = [q for q in chat.questions if q.kind == "updated"]
    assert updated
    for q in updated:
        assert any(w in q.said[0] for w in ("moved to", "I quit my old job"))
    assert not asking.about_the_past("How many children does Melanie have?")  # the probe's point


def test_a_plain_pair_chat_opens_no_line_with_a_name_and_its_evidence_holds_each_answer():
    chat = two_person.generate(2, 200, labels=False)
    named = two_person.generate(2, 200)
    assert not any(":" in t.user.split(" ")[0] for t in chat.turns)
    assert [t.user for t in chat.turns] == [t.user.split(": ", 1)[1] for t in named.turns]
    for q in chat.questions:
        for turn, text in zip(q.evidence, q.said):
            assert text in (chat.turns[turn].user, chat.turns[turn].assistant)
