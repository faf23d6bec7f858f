"""ctxkeepd's own words (its recall and memory blocks, their lines, its summary
instructions) are never indexed for recall, wherever a message repeats them."""

from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.compaction.prompts import CHECKPOINT_SYSTEM
from ctxkeep.daemon.memory import block as memory_block
from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.own_words import without_own_words
from ctxkeep.daemon.retrieval.passages import Passage, passages
from ctxkeep.daemon.store.records import MessageRecord

RECALLED = "\n".join([select.OPENING, "[2026-11-23 17:23] user: my dog is called Biscuit",
                      "[2026-11-23 17:24] assistant (part 2 of 3): Biscuit is a lovely name", select.CLOSING])
REMEMBERED = "\n".join([memory_block.OPENING, '[2026-10-02 09:00] in "garden" user: the allotment is plot 14',
                        "[2026-10-02 09:01] in another conversation assistant: plot 14, noted", select.CLOSING])


def answer(text: str) -> MessageRecord:
    return MessageRecord(role="assistant", content=text, seq=3, created=0.0)


def test_an_answer_that_echoes_the_blocks_keeps_only_its_own_words():
    echoed = f"Sure! {RECALLED}\n{REMEMBERED}\nYour dog is Biscuit."
    assert [p.text for p in passages(answer(echoed))] == ["Sure! \n\nYour dog is Biscuit."]


def test_block_lines_without_their_markers_and_a_cut_block_are_taken_out():
    lines = "Here is what you said:\n[2026-11-23 17:23] user: my dog is called Biscuit\nThat's all."
    assert without_own_words(lines) == "Here is what you said:\nThat's all."
    assert without_own_words(f"Noted. {select.OPENING}\n[2026-11-23 17:23] user: half a blo") == "Noted. "


def test_summary_instructions_are_taken_out_and_an_echo_alone_is_not_recalled():
    assert without_own_words(f"{CHECKPOINT_SYSTEM} The plan: paint the shed.").strip() == "The plan: paint the shed."
    assert passages(answer(RECALLED)) == []


def test_every_instruction_compaction_gives_is_taken_out_whole():
    """own_words.py knows compaction's instructions by their openings (recall sits below
    compaction): each is taken out whole, and a new one would fail here."""
    from ctxkeep.daemon.compaction import prompts
    said = [v for k, v in vars(prompts).items() if k.endswith("_SYSTEM") and isinstance(v, str)]
    assert len(said) >= 6
    for instructions in said:
        assert without_own_words(f"Sure. {instructions} Then we left.") == "Sure.  Then we left.", instructions


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_a_message_without_them_is_unchanged(text):
    if "<recalled from" in text or "You " in text or "] user: " in text or "] assistant" in text:
        return
    assert without_own_words(text) == text


def test_passages_are_still_what_they_were_for_plain_messages():
    plain = MessageRecord(role="user", content="We moved to Porto in May [finally].", seq=0, created=0.0)
    assert passages(plain) == [Passage(seq=0, part=0, parts=1, role="user", created=0.0,
                                       text="We moved to Porto in May [finally].")]
