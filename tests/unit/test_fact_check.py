"""The checkpoint validator (compaction/fact_check.py): what a summary drops of what the user
stated — names, numbers, dates, decisions — and whether it is about its source at all; the
extractive checkpoint that stands in for one that fails twice."""

from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.compaction import fact_check

NAMES = ["Ingrid", "Tomas", "Okafor", "Lisbon", "Tromsø", "PostgreSQL", "Kyoto", "Anouk"]
FILLER = ["we talked about the weather", "the garden needs water", "coffee was fine today",
          "the train was late again", "a quiet evening with a book"]


def cost(text: str) -> int:
    return len(text.split())


@st.composite
def transcripts(draw):
    """A transcript of user and assistant lines with facts planted in the user's lines."""
    facts = []
    lines = []
    for n in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["name", "number", "date", "filler"]))
        if kind == "name":
            fact = draw(st.sampled_from(NAMES))
            said = f"User: my friend went to see {fact} last week."
        elif kind == "number":
            fact = str(draw(st.integers(10, 99999)))
            said = f"User: the code for the shed is {fact} and it works."
        elif kind == "date":
            fact = f"{draw(st.sampled_from(['March', 'October', 'June']))} {draw(st.integers(1, 28))}"
            said = f"User: the appointment is on {fact} at the clinic."
        else:
            fact, said = "", f"User: {draw(st.sampled_from(FILLER))}."
        if fact:
            facts.append(fact)
        lines += [said, f"Assistant: {draw(st.sampled_from(FILLER))}, and 4242 Zanzibar."]
    return "\n\n".join(lines), facts


@given(transcripts(), st.data())
def test_a_summary_that_drops_a_stated_fact_is_caught_and_the_extract_keeps_it(made, data):
    source, facts = made
    kept_all = "In short: " + "; ".join(facts) + "."
    assert not fact_check.dropped(source, kept_all)  # everything stated is kept
    if not facts:
        return
    lost = data.draw(st.sampled_from(facts))
    summary = "In short: " + "; ".join(f for f in facts if lost not in f and f not in lost) + "."
    verdict = fact_check.check(source, summary)
    assert any(lost in m or m in lost for m in verdict.missing), (lost, verdict)
    room = data.draw(st.integers(1, 200))
    made_of = fact_check.extractive(source, summary, verdict.missing, room, cost)
    assert cost(made_of) <= max(room, cost(summary)) + len(made_of.splitlines())
    if room >= cost(summary) + sum(cost(line) + 1 for line in source.split("\n\n")):
        assert lost in made_of


def test_what_the_model_restates_is_not_a_fact_to_keep():
    source = "User: my locker code is 4711-blue.\n\nAssistant: Your locker code is 4719-green."
    assert fact_check.dropped(source, "The user's locker code is 4711-blue.") == []
    assert "4711" in " ".join(fact_check.dropped(source, "The locker code is 4719-green."))


def test_a_summary_about_something_else_is_not_about_its_source():
    source = "User: we repainted the kitchen a pale green and fixed the boiler on Tuesday."
    assert not fact_check.check(source, "The model is a model of the world and of the universe.").on_topic
    assert fact_check.check(source, "Kitchen repainted pale green; boiler fixed Tuesday.").good


def test_decisions_are_items_and_the_second_try_names_what_was_lost():
    source = "User: after all that we decided to use PostgreSQL for the orders service."
    verdict = fact_check.check(source, "They talked about databases.")
    assert "PostgreSQL" in verdict.missing and any(m.startswith("decision: ") for m in verdict.missing)
    assert "PostgreSQL" in fact_check.asking_for(verdict.missing)


def test_the_word_that_opens_a_speakers_line_is_no_name():
    """ "User: Turn 17: …" opens a sentence; a name inside it is still one."""
    found = fact_check.items("User: Turn 17: tell me about Paris.\n\nUser: Sure, ask Maria.")
    assert "Turn" not in found and "Sure" not in found
    assert {"Paris", "Maria", "17"} <= set(found)


def test_a_second_try_for_a_summary_about_something_else_names_no_empty_list():
    verdict = fact_check.check("User: we repainted the kitchen.", "The model is a model of the world.")
    assert not verdict.missing and not verdict.on_topic
    asked = fact_check.asking_for(verdict.missing)
    assert "Keep these" not in asked and "what the conversation says" in asked


def items_as_first_written(text: str) -> list[str]:
    """`items` as it was first written: a decision is a run of a sentence around one of the
    deciding words (one regular expression, whose backtracking took 3 s for a 3,000-message
    transcript), and every item is compared with every other."""
    import re
    decision = re.compile(r"[^.!?\n]*\b(?:decided|decide|agreed|chose|chosen|settled on|going with|"
                          r"we'll use|will use|\[DECISION\])\b[^.!?\n]*", re.I)
    found: dict[str, None] = {}
    for pattern in (fact_check._DATE, fact_check._NUMBER, fact_check._NAME):
        for m in pattern.finditer(fact_check._SPEAKER.sub("", text) if pattern is fact_check._NAME else text):
            item = m.group(0).strip().rstrip(".,:;-/")
            if item and item not in fact_check._NOT_NAMES and not item.startswith(("I'", "I’")):
                found[item] = None
    for m in decision.finditer(text):
        words = [w for w in fact_check.terms(m.group(0)) if len(w) > 3 and w not in fact_check._DECIDING][:3]
        if words:
            found["decision: " + " ".join(words)] = None
    for item in list(found):
        if any(item != other and item in other for other in found):
            del found[item]
    order = {item: text.find(item.split(": ", 1)[-1]) for item in found}
    return sorted(found, key=lambda item: order[item] if order[item] >= 0 else len(text))


PIECES = ["We decided to use Postgres", " and Ingrid agreed", ". ", "! ", "?", "\n", "\n\nUser: ",
          "March 3rd", " March", " 4711", " 47", " 2024-05-01", " settled on Kyoto", " [DECISION] cache",
          " undecided", " we'll use the parser", " going with", " Lisbon", " Lisbon Station", " the plan"]


@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_items_are_what_the_first_way_of_finding_them_found(pieces):
    """The items of any text are those the first, slower, way found, in the same order."""
    text = "".join(pieces)
    assert fact_check.items(text) == items_as_first_written(text)
