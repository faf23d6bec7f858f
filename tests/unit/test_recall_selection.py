"""Recall's selection as a pure function (hypothesis): the budget, time order, answers
with their questions, passages of long messages, stems."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.recall.recaller import SessionIndex
from ctxkeep.daemon.retrieval import asking, select, sharing
from ctxkeep.daemon.retrieval.lexical import asked_terms, has_words, query_terms, terms
from ctxkeep.daemon.retrieval.passages import PASSAGE_CHARS, WHOLE_CHARS, Passage, passages
from ctxkeep.daemon.store.records import NewMessage

MODEL = "qwen2.5:7b"
FILLER = "weather tea garden walk book music film cooking travel sleep coffee bread river cloud".split()
FACT = "By the way, my sister Alice moved to Lisbon in March."


def _passage(seq: int, text: str, role: str = "user", reply_to: int = -1) -> Passage:
    return Passage(seq=seq, part=0, parts=1, role=role, created=1.7e9 + seq, text=text, reply_to=reply_to)


@settings(max_examples=200)
@given(lengths=st.lists(st.integers(1, 60), min_size=1, max_size=30), budget=st.integers(0, 400),
       order=st.randoms(use_true_random=False), near=st.integers(0, 5))
def test_selection_never_passes_its_budget_nor_repeats_and_keeps_time_order(lengths, budget, order, near):
    """Whatever it is offered by words, and by meaning (`near`)."""
    found = [_passage(i, "word " * n, role="user" if i % 2 == 0 else "assistant",
                      reply_to=i - 1 if i % 2 else -1) for i, n in enumerate(lengths)]
    ranked = list(range(len(found)))
    order.shuffle(ranked)
    cost = lambda pid: len(found[pid].text.split()) + 3
    partners = lambda p: [p.reply_to] if p.reply_to >= 0 else ([p.seq + 1] if p.seq + 1 < len(found) else [])
    chosen = sharing.select(ranked, found, budget, 5, cost, partners, near=ranked[::-1][:near])
    assert 5 + sum(cost(p.seq) for p in chosen) <= max(budget, 5) or not chosen
    assert len({p.seq for p in chosen}) == len(chosen)
    assert [p.seq for p in chosen] == sorted(p.seq for p in chosen)


def test_an_answer_brings_its_question_when_both_fit():
    found = [_passage(0, "what is the capital of portugal"), _passage(1, "Lisbon.", "assistant", 0),
             _passage(2, "unrelated filler " * 5)]
    cost = lambda pid: 10
    partners = lambda p: [0] if p.seq == 1 else ([1] if p.seq == 0 else [])
    assert [p.seq for p in sharing.select([1, 2], found, 100, 0, cost, partners)] == [0, 1, 2]
    assert [p.seq for p in sharing.select([1, 2], found, 25, 0, cost, partners)] == [1, 2]  # the question no longer fits


def test_what_stands_out_by_meaning_keeps_a_share_of_the_room_words_would_fill():
    """Words' matches would fill the budget; a passage only meaning found ("my Fitbit"
    for "health-related devices") still gets MEANING_SHARE of it; without one, words keep
    all of it."""
    found = [_passage(i, f"devices used daily {i}") for i in range(20)] + [_passage(20, "I wear my Fitbit")]
    cost, none = lambda pid: 10, lambda p: []
    words = list(range(20))
    assert len(sharing.select(words, found, 100, 0, cost, none)) == 10
    chosen = [p.seq for p in sharing.select(words, found, 100, 0, cost, none, near=[20, 3])]
    assert 20 in chosen and len(chosen) == 10 and chosen[:8] == words[:8]
    assert [p.seq for p in sharing.select(words, found, 100, 0, cost, none, near=[3])] == words[:10]


def test_a_turn_comes_back_whole_and_only_a_very_long_one_in_passages_that_point_to_it():
    turn = NewMessage(role="assistant", content="\n\n".join(f"Paragraph {i}. " + "words of it " * 30
                                                           for i in range(6))).record(6, 0.0)
    assert [p.text for p in passages(turn)] == [turn.content.strip()]  # 2,200 characters: whole
    long = NewMessage(role="assistant", content="\n\n".join(f"Paragraph {i}. " + "words of it " * 100
                                                           for i in range(6))).record(7, 0.0)
    assert len(long.content) > WHOLE_CHARS
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


def test_the_index_reads_each_message_once_and_knows_what_was_replaced():
    said = [NewMessage(role="user", content="Which city is Maya in?"),
            NewMessage(role="assistant", content="Porto, since the spring.", reply_to=0),
            NewMessage(role="assistant", content="Maya lives in Porto.", reply_to=0, alternative_of=1),
            NewMessage(role="user", content="Which city is Maya living in?", alternative_of=0),
            NewMessage(role="assistant", content="Porto.", reply_to=3)]
    records = [m.record(seq, 0.0) for seq, m in enumerate(said)]
    index = SessionIndex()
    index.add(records[:2])
    index.add(records[2:])
    assert index.lexical.next_seq == 5 and len(index.lexical.passages) == 5
    # the regenerated answer replaced #1; the edited question replaced #0 and its answers
    assert index.replaced == {0, 1, 2}


def test_a_question_says_whose_words_it_asks_about():
    assert asking.addressed("What is my locker code?") == "user"
    assert asking.addressed("Where did we park last time?") == "user"
    assert asking.addressed("Which book did you recommend for me?") == "assistant"
    assert asking.addressed("Remind me of your advice on tomatoes") == "assistant"
    assert asking.addressed("Where does Maya live now?") is None
    assert asking.addressed("What's the phone number of the tourism board that you provided me earlier?") == \
        "assistant"
    # a past conversation as a whole: either side's words may hold it
    assert asking.addressed("I'm checking our previous chat about the rota. Can you remind me of Sunday's?") is None


def test_the_asked_of_speakers_passages_outrank_equal_ones_of_the_other():
    ranking = [(0, 1.0), (1, 1.0)]  # the same score: the newer (1) first, unless 0 is favored
    plain, favoring_0 = select.fused(ranking), select.fused(ranking, favored=lambda pid: pid == 0)
    assert plain[1] > plain[0] and favoring_0[0] > favoring_0[1]


def test_time_stamps_are_not_terms_so_a_dated_question_does_not_find_every_dated_line():
    assert list(query_terms("[2023/05/30 (Tue) 22:26] Where did I get my guitar serviced?")) == ["guitar", "servic"]
    assert list(query_terms("2023-05-30T22:26:00Z and Tue, 30 May 2023 22:26 the parrot")) == ["parrot"]
    assert "2019" in query_terms("I moved to Lisbon in 2019")  # a year said in words stays a term
    index = SessionIndex()
    index.add([NewMessage(role="user", content=f"[2023/05/{d:02d} (Tue) 10:00] Let us talk about {w}.").record(d, 0.0)
               for d, w in enumerate(FILLER, 1)] +
              [NewMessage(role="user", content="I took my guitar to Strings & Things to be serviced.").record(99, 0.0)])
    ranked = index.lexical.rank(query_terms("[2023/05/30 (Tue) 22:26] Where did I get my guitar serviced?"), set(), 5)
    assert [index.lexical.passages[pid].seq for pid, _ in ranked] == [99]


@settings(max_examples=100)
@given(lengths=st.lists(st.integers(1, 200), min_size=2, max_size=20), budget=st.integers(20, 600))
def test_with_scores_the_budget_goes_to_short_turns_that_match_as_well_as_long_ones(lengths, budget):
    found = [_passage(i, "word " * n) for i, n in enumerate(lengths)]
    cost = lambda pid: len(found[pid].text.split()) + sharing.LEAST_LINE  # a line's least
    ranked = list(range(len(found)))
    chosen = sharing.select(ranked, found, budget, 5, cost, lambda p: [], score=lambda pid: 1.0)
    assert 5 + sum(cost(p.seq) for p in chosen) <= budget or not chosen
    # equal scores: never a longer passage chosen while a shorter one that fits was left out
    left = [p for p in found if p not in chosen]
    room = budget - 5 - sum(cost(p.seq) for p in chosen)
    assert all(cost(p.seq) > room for p in left)
    if chosen and left:
        assert max(cost(p.seq) for p in chosen) <= max(cost(p.seq) for p in left) or \
            min(cost(p.seq) for p in left) > room


@settings(max_examples=200)
@given(lengths=st.lists(st.integers(1, 300), min_size=1, max_size=30), budget=st.integers(0, 700),
       scores=st.lists(st.floats(0.01, 3.0), min_size=30, max_size=30), near=st.integers(0, 5))
def test_the_best_passage_is_recalled_whenever_it_fits_whatever_its_length(lengths, budget, scores, near):
    """The issue's property at the lowest level: a message whose best match stands out and
    fits the room gets at least that passage — before short turns that match less are
    shared the room by length, and before meaning's share is set aside."""
    found = [_passage(i, "word " * n, role="user" if i % 2 == 0 else "assistant",
                      reply_to=i - 1 if i % 2 else -1) for i, n in enumerate(lengths)]
    ranked = sorted(range(len(found)), key=lambda pid: -scores[pid])
    cost = lambda pid: len(found[pid].text.split()) + sharing.LEAST_LINE
    partners = lambda p: [p.reply_to] if p.reply_to >= 0 else ([p.seq + 1] if p.seq + 1 < len(found) else [])
    chosen = sharing.select(ranked, found, budget, 5, cost, partners, scores.__getitem__, near=ranked[::-1][:near])
    top = ranked[0]
    if 5 + cost(top) <= budget and all(sharing.STANDS_OUT * scores[pid] <= scores[top] for pid in ranked[1:]):
        assert top in [p.seq for p in chosen]
    assert 5 + sum(cost(p.seq) for p in chosen) <= max(budget, 5) or not chosen


def test_a_long_answer_that_matches_best_is_not_crowded_out_by_short_turns():
    """The live dev split's "remind me how many subjects were in that study": the study's
    answer (373 tokens) scored 2.68, the user's short questions around it 1.1-1.3; shared
    out by length, with meaning's share kept, the short ones filled the room and the answer
    was left out by a few tokens."""
    found = [_passage(0, "answer " * 365, "assistant")] + [_passage(i, "question " * 50) for i in range(1, 6)]
    scores = [2.68, 1.34, 1.14, 1.12, 1.09, 1.05]
    cost = lambda pid: len(found[pid].text.split()) + sharing.LEAST_LINE
    chosen = [p.seq for p in sharing.select(list(range(6)), found, 620, 10, cost, lambda p: [], scores.__getitem__,
                                           near=[5])]
    assert 0 in chosen
    assert 10 + sum(cost(seq) for seq in chosen) <= 620
    for near_tie in ([2.58, 2.53, 2.45, 2.42, 2.41, 2.40], [1.0] * 6):  # no passage stands out: by length
        shared = [p.seq for p in sharing.select(list(range(6)), found, 620, 10, cost, lambda p: [], near_tie.__getitem__)]
        assert 0 not in shared and len(shared) == 5


def test_a_passage_that_says_a_better_one_again_is_left_out():
    """Three restatements of one sentence and one different passage: the best restatement
    and the different one stay, in their order; the rest of the ranking is untouched."""
    from ctxkeep.daemon.retrieval.lexical import terms
    from ctxkeep.daemon.retrieval.select import DISTINCT_CHECKED, distinct
    texts = {0: "My locker code is 4701-green, my locker code. Sure, cooking.",
             1: "My locker code is 4719-green, my locker code. Sure, cooking.",
             2: "Please remember this: my locker code is 4711-blue.",
             3: "My locker code is 4768-green, my locker code. Sure, cooking."}
    term_set = lambda pid: frozenset(terms(texts.get(pid, f"passage {pid}")))
    assert distinct([0, 1, 2, 3], term_set) == [0, 2]
    far = list(range(100, 100 + DISTINCT_CHECKED)) + [1, 3]
    assert distinct(far, term_set) == far  # past the checked ones: as they were


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.sampled_from(list("ab Zé9,.\n  ")), min_size=1, max_size=60),
                      min_size=1, max_size=8),
       pick=st.lists(st.booleans(), min_size=8, max_size=8))
def test_a_blocks_features_add_up_from_its_lines_as_its_text_gives_them(texts, pick):
    """Recall's block is costed from each line's kept features, not read again each turn:
    exactly what the block's own text gives (no word or run of spaces crosses a newline)."""
    from ctxkeep.daemon.memory import block as memory_block
    from ctxkeep.daemon.tokens import text_features
    index = SessionIndex()
    index.add([NewMessage(role=("user", "assistant")[i % 2], content=t).record(i, 1e9 + i)
               for i, t in enumerate(texts)])
    assume(index.lexical.passages)  # blank messages make no passage: no block at all
    chosen = [p for p, keep in zip(index.lexical.passages, pick) if keep] or index.lexical.passages[:1]
    lines = [index.lines[index.by_seq[p.seq][p.part]] for p in chosen]
    assert select.block_features(lines) == text_features(select.block(chosen))
    opening = memory_block.OPENING  # memory's block: the same lines under its own opening
    assert select.block_features(lines, opening) == text_features(
        "\n".join([opening, *(select.line(p) for p in chosen), select.CLOSING]))


def test_how_a_question_asks_never_matches_on_its_own():
    """"What did I tell you about", "remind me", "we talked about": the words of asking are
    not terms of the query; what it asks about is."""
    from ctxkeep.daemon.retrieval.lexical import query_terms
    assert set(query_terms("What did I tell you about my allotment?")) == {"allot"}
    assert query_terms("Remind me what we talked about last time, please.") == {}
    assert set(query_terms("Remember the recipe you mentioned?")) == {"recip"}


def test_how_a_question_counts_never_matches_on_its_own():
    """"How many … in total", "the number of": a count's words find every other count ("How
    many chemical elements are there?", "the total number of nodes"), not what is counted."""
    assert set(query_terms("How many fish are there in total in both of my aquariums?")) == {"fish", "aquarium"}
    assert set(query_terms("What is the total number of books I bought altogether?")) == {"book", "bought"}
    assert "total" in query_terms("What was the total cost of the trip?")  # a total that is the subject
    assert _ranked(["How many chemical elements are there?",
                    "Can you calculate the total number of nodes in the tree?",
                    "My betta fish Bubbles lives in the old 10-gallon tank."], "How many fish are there in total?") == [2]


def test_for_a_living_asks_of_work_not_of_where_someone_lives():
    assert asked_terms("What does Nate do for a living now?") == ["nate", "work"]
    assert asked_terms("Where does Nate live?") == ["nate", "live"]  # living where: still "live"
    assert _ranked(["This morning I repotted the plants in the living room.",
                    "I live in Porto now, we like how quiet it is.",
                    "I work as a vet these days."], "What does he do for a living now?") == [2]


def _ranked(texts: list[str], question: str) -> list[int]:
    """The indexes of `texts` (user messages) the question's words rank, best first."""
    index = SessionIndex()
    index.add([NewMessage(role="user", content=text).record(seq, 0.0) for seq, text in enumerate(texts)])
    return [index.lexical.passages[pid].seq for pid, _ in index.lexical.rank(query_terms(question), set(), 5)]


def test_memory_answers_only_what_speaks_of_the_past():
    from ctxkeep.daemon.retrieval.asking import about_the_past
    assert about_the_past("Where does my sister live now?") and about_the_past("What did you suggest for dinner?")
    assert about_the_past("What was the codeword of the glacier project?")
    assert not about_the_past("Write a short poem about autumn.") and not about_the_past("What's 15% of 240?")
    # a request's receiver ("give me", "help us") and a request on the chat itself ("again") name no past
    assert not about_the_past("Give me a limerick about a forgetful robot.")
    assert not about_the_past("Say it again more simply, please.") and not about_the_past("Help us plan a picnic.")
    assert about_the_past("Remind me of the plan") and about_the_past("What's my dog's name again?")
    # something chosen for the user, or near them, is chosen by what they said of themselves
    assert about_the_past("Can you recommend a show or movie for me to watch tonight?")
    assert about_the_past("Any cultural events happening around me this weekend?")
    assert about_the_past("Find us a quiet place to eat.")
    assert not about_the_past("Suggest three names for a small bakery.")
    assert not about_the_past("Translate this for me.") and not about_the_past("Suggest a title. Then tell me a joke.")
    # what was done to the user, and the order things happened in
    assert about_the_past("Who gave me a new stand mixer as a birthday gift?")
    assert about_the_past("What are the two hobbies that led me to join online communities?")
    assert about_the_past("Which event happened first, the road trip or the new lens?")
    assert about_the_past("Who became a parent first, Rachel or Alex?")
    assert about_the_past("Who graduated first, second and third among Emma, Rachel and Alex?")
    assert not about_the_past("Tell me a joke. Then give me a riddle.") and not about_the_past("Who painted The Starry Night?")
    assert not about_the_past("Write a short poem about the first frost of the year.")
    assert not about_the_past("What happened in 1971?")  # history, not the user's
    assert not about_the_past("Shorten this: At first reference, use the full name. Later, the surname or title.")


@settings(max_examples=60)
@given(kept=st.lists(st.lists(st.sampled_from(FILLER), min_size=1, max_size=8), min_size=1, max_size=12),
       deleted=st.lists(st.lists(st.sampled_from(FILLER), min_size=1, max_size=8), min_size=1, max_size=12),
       query=st.lists(st.sampled_from(FILLER), min_size=1, max_size=4))
def test_forgotten_passages_leave_the_word_statistics_as_if_never_indexed(kept, deleted, query):
    """A deleted session's passages, forgotten, count in no term's rarity or weight: the
    passages that remain rank and are judged rare exactly as in an index of them alone;
    counted again (a private session shared again), exactly as if never left out."""
    from ctxkeep.daemon.retrieval.bm25 import LexicalIndex, gone_of
    alone, both = LexicalIndex(), LexicalIndex()
    mine = [_passage(i, " ".join(words)) for i, words in enumerate(kept)]
    theirs = [_passage(100 + i, " ".join(words)) for i, words in enumerate(deleted)]
    alone.add(mine)
    both.add(mine + theirs)
    both.forget(gone_of(theirs))
    asked = query_terms(" ".join(query))
    allowed = np.array([True] * len(mine) + [False] * len(theirs))
    ours = both.rank(asked, set(), 50, allowed)
    expected = alone.rank(asked, set(), 50)
    assert [pid for pid, _ in ours] == [pid for pid, _ in expected]
    assert np.allclose([s for _, s in ours], [s for _, s in expected])
    assert both.rare(asked, least=1) == alone.rare(asked, least=1)
    everyone = LexicalIndex()  # counted again (shared again): as if never left out
    everyone.add(mine + theirs)
    both.unforget(gone_of(theirs))
    again, whole = both.rank(asked, set(), 50), everyone.rank(asked, set(), 50)
    assert [pid for pid, _ in again] == [pid for pid, _ in whole]
    assert np.allclose([s for _, s in again], [s for _, s in whole])


def test_what_only_asks_ranks_below_what_states():
    assert select.only_asks("When did Greta begin the new lessons?")
    assert select.only_asks("What about the gift? Should I wait?")
    assert not select.only_asks("By the way, I use a Fitbit. Can you suggest tips?")
    texts = ["When did Greta begin the new lessons?", "Maya started sailing on 5 May."]
    assert select.statements_first([(0, 3.0), (1, 2.0)], [_passage(i, t) for i, t in enumerate(texts)]) \
        == [(1, 2.0), (0, 3.0 * select.ASKED)]


def test_a_text_has_words_when_it_says_anything_beside_its_stamps():
    """What the embedder skips: nothing but time stamps, spaces or invisible characters; one
    letter or digit of any script is a word."""
    assert not any(map(has_words, ["", "\u200b", " \n", "[2023/05/30 (Tue) 23:38]", "_ - _"]))
    assert all(map(has_words, ["猫", "42", "[2023/05/30 (Tue) 23:38] ok", "a"]))


def test_a_sitting_opens_with_the_users_first_message_after_a_pause():
    """Messages stored minutes apart are one sitting; a pause of SITTING_GAP opens the next,
    at its first user message (a sitting the model's words open: at the user's first)."""
    from ctxkeep.daemon.recall.sittings import SITTING_GAP
    said = [("user", 0), ("assistant", 10), ("user", 60), ("assistant", 70),  # sitting 1: opened by #0
            ("assistant", 70 + SITTING_GAP + 1), ("user", 80 + SITTING_GAP), ("assistant", 90 + SITTING_GAP),
            ("user", 100 + 3 * SITTING_GAP)]
    records = [NewMessage(role=role, content=f"message {seq} on camera flashes").record(seq, 1.7e9 + at)
               for seq, (role, at) in enumerate(said)]
    index = SessionIndex()
    index.add(records[:3])
    index.add(records[3:])  # (a sitting goes on across additions)
    assert index.sittings.openings == [0, 0, 0, 0, -1, 5, 5, 7]


def test_a_long_sitting_without_a_pause_moves_on_from_its_opening():
    from ctxkeep.daemon.recall.sittings import SITTING_GAP, SITTING_REACH
    count = SITTING_REACH + 5
    records = [NewMessage(role="user" if seq % 2 == 0 else "assistant", content=f"message {seq} on camera flashes")
               .record(seq, 1.7e9 + 60 * seq) for seq in range(count)]
    later = NewMessage(role="user", content="back to camera flashes").record(count, 1.7e9 + 60 * count + SITTING_GAP + 1)
    index = SessionIndex()
    index.add([*records, later])
    assert index.sittings.openings == [0] * (SITTING_REACH + 1) + [-1] * (count - SITTING_REACH - 1) + [count]


def test_a_greeting_or_a_bare_stamp_does_not_open_a_sitting():
    """"hey" says nothing of what a sitting is about: the user's first message that does
    opens it (the greeting itself has no opening to bring)."""
    said = ["[2023/05/20 (Sat) 04:08]", "Hello! How can I help you today?", "hey", "Hey there!",
            "[2023/05/20 (Sat) 04:09] I'm looking to upgrade my camera flash", "The Godox V1 suits you.",
            "I'll go with the Godox"]
    records = [NewMessage(role="user" if seq % 2 == 0 else "assistant", content=text).record(seq, 1.7e9 + 60 * seq)
               for seq, text in enumerate(said)]
    index = SessionIndex()
    index.add(records)
    assert index.sittings.openings == [-1, -1, -1, -1, 4, 4, 4]


def test_a_follow_up_found_brings_the_opening_of_its_sitting_at_a_share_of_its_score():
    from ctxkeep.daemon.recall.sittings import OPENING_WEIGHT, Sittings
    sittings = Sittings(openings=[0, 0, 0, 3, 3])
    scores = {2: 1.0, 4: 0.6, 1: 0.2}
    raised = sittings.with_openings(scores, skip=lambda pid: False)
    assert raised == {2: 1.0, 4: 0.6, 1: 0.2, 0: OPENING_WEIGHT * 1.0, 3: OPENING_WEIGHT * 0.6}
    assert 0 not in sittings.with_openings(scores, skip=lambda pid: pid == 0)  # in the prompt
    assert sittings.with_openings({0: 0.9, 2: 0.1}, lambda pid: False)[0] == 0.9  # its own score


def test_a_turn_that_only_says_the_new_messages_words_again_adds_nothing():
    said = lambda text: frozenset(terms(text))
    greeting = said("Hey Marek! How have you been lately?")
    assert select.echoes(said("hey marek, how have you been lately"), greeting, about_past=False)
    assert select.echoes(said("Hey Marek!"), greeting, about_past=False)  # some of its words, to a short message
    assert not select.echoes(said("Marek moved to Gdansk"), greeting, about_past=False)  # says something new
    oboe = said("Did I tell you I play the oboe?")
    assert not select.echoes(said("I play the oboe"), oboe, about_past=True)  # its answer, in its own words
    assert select.echoes(said("Did I tell you I play the oboe?"), oboe, about_past=True)  # the question again
    pasted = said("Here are my notes: the budget is 500, the venue is the old mill, the band plays jazz, "
                  "the date is in May and the caterer is Luigi")
    assert not select.echoes(said("My budget is 500"), pasted, about_past=False)  # a long message: words together


def test_a_question_of_what_holds_now_brings_the_later_turn_nearest_a_best_match():
    """"What do I do for a living now?" whose best match is "I work as a librarian these
    days": the user's later turn nearest that one by meaning ("I quit my old job, I'm a nurse
    now") comes with it, at its score; not the assistant's, not an earlier one, not one the
    prompt holds, and nothing for a question that does not ask what holds now."""
    from ctxkeep.daemon.recall.own import OwnHistory
    texts = ["I work as a librarian these days.", "Nice, books!"] + \
        [f"Small talk number {i}." for i in range(36)] + ["I quit my old job, I'm a nurse now.", "Congratulations!"]
    records = [NewMessage(role="user" if seq % 2 == 0 else "assistant", content=t).record(seq, 0.0)
               for seq, t in enumerate(texts)]
    index = SessionIndex()
    index.add(records)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(texts), 64))
    vectors[38] = vectors[0] + 0.1 * rng.normal(size=64)  # the change, near the first statement
    vectors[39] = vectors[0] + 0.1 * rng.normal(size=64)  # the assistant's, as near
    vectors[1] = vectors[0] + 0.1 * rng.normal(size=64)  # said after it, by the assistant
    index.semantic.of("m").add_many(list(range(len(texts))), vectors.tolist())
    scores = {0: 1.0, 2: 0.4}
    now = NewMessage(role="user", content="What do I do for a living now?").record(40, 0.0)
    ever = NewMessage(role="user", content="What do I do for a living?").record(40, 0.0)
    assert OwnHistory._changed_since(index, now, scores, lambda pid: False) == {0: 1.0, 2: 0.4, 38: 1.0}
    assert OwnHistory._changed_since(index, now, scores, lambda pid: pid == 38) == scores
    assert OwnHistory._changed_since(index, ever, scores, lambda pid: False) == scores
    assert OwnHistory._changed_since(index, now, {38: 1.0}, lambda pid: False) == {38: 1.0}  # nothing after it


def test_a_question_says_when_it_asks_what_holds_now():
    for now in ["What does Nate do for a living now?", "Where does Joanna live these days?",
                "Do I still have the old bike?", "What am I currently reading?"]:
        assert asking.holds_now(now), now
    for other in ["What did Nate do for a living?", "Where did Joanna live in 2019?",
                  "I'm a nurse now.", "How many children does Nate have?"]:
        assert not asking.holds_now(other), other


def test_a_line_said_again_and_again_is_in_a_block_once():
    """"Thanks, Audrey, that means a lot." forty times in a chat log: the ranking keeps the
    best-ranked of the copies (select.unrepeated), and neither an answer's question nor what
    meaning found brings a copy back (sharing.select)."""
    thanks = "Thanks, Audrey, that means a lot."
    found = [_passage(0, "Hey Andrew! How have you been?"), _passage(1, thanks, "assistant", 0),
             _passage(2, "Hey Andrew! How have you been?"), _passage(3, "I have one kid.", "assistant", 2),
             _passage(4, "That sounds lovely!"), _passage(5, thanks, "assistant", 4)]
    text = lambda pid: found[pid].text
    assert select.unrepeated([5, 1, 3, 0, 2], text) == [5, 3, 0]
    assert select.unrepeated([5, 1, 3], text, seen={hash(thanks)}) == [3]
    partners = lambda p: [p.reply_to] if p.reply_to >= 0 else []
    chosen = sharing.select([3, 1], found, 1000, 0, lambda pid: 10, partners, near=[5])
    texts = [p.text for p in chosen]
    assert len(texts) == len(set(texts)) and {p.seq for p in chosen} == {1, 2, 3}
