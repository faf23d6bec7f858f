"""When a message reaches into the past (recall/room.py `reaches`), as a pure function: its
best match outside the active context against the oldest verbatim exchanges recall may take
the room of."""

from hypothesis import given
from hypothesis import strategies as st

from ctxkeep.daemon.recall.room import REACH, Movable, made, needs, reaches
from ctxkeep.daemon.retrieval.passages import Passage

#: Passages 0-5 were compacted out (outside the active context); 6-9 are the movable
#: exchanges; 10-11 the newest turns, kept.
PASSAGES = [Passage(seq=i, part=0, parts=1, role="user" if i % 2 == 0 else "assistant", created=1.7e9 + i,
                    text=f"turn {i}") for i in range(12)]
ACTIVE = set(range(6, 12))
MOVING = set(range(6, 10))
NOTHING_RARE = lambda pid: False  # a chat that keeps to one subject: no word of the question is rare
RARE = lambda pid: True


def test_a_question_about_the_past_reaches_in_a_chat_that_keeps_to_one_subject():
    """"How much money did I raise in total at all the charity events?" after three chats
    about charity events: "charity", "raise", "events" are in many turns, none rare. The
    turns that answer are outside the window; the older turns recall may move say nothing
    of it. The question reaches, as it does where a rare word matched."""
    outside_only = {1: 2.39, 3: 1.7}
    assert reaches(outside_only, PASSAGES, MOVING, ACTIVE, NOTHING_RARE, about_past=True)
    assert reaches(outside_only, PASSAGES, MOVING, ACTIVE, RARE, about_past=False)
    # the older turns say it far less well ("How many doctor's appointments did I go to in March?")
    assert reaches({1: 4.97, 7: 1.53}, PASSAGES, MOVING, ACTIVE, NOTHING_RARE, about_past=True)


def test_a_request_that_does_not_speak_of_the_past_reaches_only_by_a_rare_word():
    """"Write a poem about autumn": its everyday words meet old turns by chance; the prompt's
    start (the model server's cache) stays as it is."""
    assert not reaches({1: 2.39}, PASSAGES, MOVING, ACTIVE, NOTHING_RARE, about_past=False)


def test_what_the_movable_turns_say_as_well_keeps_them_in_place():
    """Where the older verbatim turns match about as well as anything outside, they may be
    what the question asks of: without a rare word, nothing moves."""
    assert not reaches({1: 2.0, 7: 1.9}, PASSAGES, MOVING, ACTIVE, NOTHING_RARE, about_past=True)
    assert not reaches({1: 2.0, 7: 2.6}, PASSAGES, MOVING, ACTIVE, RARE, about_past=True)  # below REACH × inside
    assert not reaches({7: 2.0}, PASSAGES, MOVING, ACTIVE, RARE, about_past=True)  # nothing outside
    assert not reaches({}, PASSAGES, MOVING, ACTIVE, RARE, about_past=True)


@given(outside=st.floats(0.01, 10), inside=st.floats(0, 10), more=st.floats(0, 5), rare=st.booleans(),
       about_past=st.booleans())
def test_a_better_match_outside_or_a_worse_one_inside_never_stops_a_reach(outside, inside, more, rare, about_past):
    """Monotone in what it weighs: a stronger match outside, a weaker one among the movable
    turns, a rare word or a message about the past can only make a message reach."""
    def reached(out: float, ins: float, rare_word: bool, past: bool) -> bool:
        scores = {2: out, 8: ins} if ins else {2: out}
        return reaches(scores, PASSAGES, MOVING, ACTIVE, lambda pid: rare_word, past)
    if reached(outside, inside, rare, about_past):
        assert reached(outside + more, inside, rare, about_past)
        assert reached(outside, max(0.0, inside - more), rare, about_past)
        assert reached(outside, inside, True, about_past) and reached(outside, inside, rare, True)
    assert not reached(outside, inside, rare, about_past) or outside >= REACH * inside


def test_only_a_message_that_asks_for_something_may_take_the_room_of_verbatim_turns():
    from ctxkeep.daemon.retrieval.asking import asks
    for asking in ["Where does Andrew live these days?", "remind me what I said about the boiler",
                   "Tell me again which rooms I noted", "what was the plumber's name", "Can you summarize our plan",
                   "梅兰妮现在住在哪里？", "أين تعيش ميلاني الآن؟"]:
        assert asks(asking), asking
    for saying in ["On Sunday I tried to learn a card trick, and it was great.", "Audrey: We moved to Cork last week!",
                   "I went back to the zeppelin museum's archive room today.", "Thanks, that helps a lot."]:
        assert not asks(saying), saying


def test_only_what_says_more_than_the_verbatim_turns_takes_their_room():
    """"How many children does Audrey have?" in a chat log: the lines that share only a name
    or a common word with it ("Thanks, Audrey, that means a lot.") score no better than the
    oldest verbatim turns they would push out; only what outscores those takes their room
    (with the lines they answer). Where the verbatim turns match nothing, all may."""
    scores = {0: 2.0, 1: 1.2, 2: 0.9, 3: 0.3, 4: 0.2, 5: 0.2}
    partners = lambda pid: [pid + 10] if pid < 2 else []
    cost = lambda pid: 100 if pid >= 10 else 40
    ranked = [0, 1, 2, 3, 4, 5]
    assert needs(ranked, scores.__getitem__, cost, partners, 20)(1.0) == 20 + 40 + 40 + 100 + 100
    assert needs(ranked, scores.__getitem__, cost, partners, 20)(0.0) == 20 + 6 * 40 + 100 + 100
    assert needs(ranked, scores.__getitem__, cost, partners, 20)(2.0) == 0  # nothing says more
    assert needs([], scores.__getitem__, cost, partners, 20)(0.0) == 0


@given(scores=st.lists(st.floats(0, 10), min_size=1, max_size=12), displaced=st.floats(0, 10), more=st.floats(0, 5))
def test_the_better_the_verbatim_turns_match_the_less_room_recall_takes(scores, displaced, more):
    score = dict(enumerate(scores)).__getitem__
    ranked = sorted(range(len(scores)), key=lambda pid: -scores[pid])
    took = needs(ranked, score, lambda pid: 10, lambda pid: [], 5)
    assert took(displaced + more) <= took(displaced) <= 5 + 10 * len(scores)


def test_the_oldest_verbatim_turns_make_room_until_one_says_as_much():
    """Oldest first, each movable exchange gives its room while what outscores it needs more
    than the room so far: the unrelated ones go, one about the same thing stays (and every
    one after it: the active context stays a run of the newest turns) — unless it is among
    the best matches (`strong`): its best passage comes back in the block."""
    moving = Movable((((6, 7), 50), ((8, 9), 50), ((10, 11), 50)))
    best = {6: 0.0, 7: 0.1, 8: 1.5, 10: 0.0}.get
    matched = lambda seqs: max(best(s, 0.0) for s in seqs)
    need = lambda displaced: 170 if displaced < 1.0 else 30  # only two lines outscore the turn at 8
    assert made(moving, 60, matched, need, strong=2.0) == 60 + 50  # (6, 7) goes; (8, 9) says as much: it stays
    assert made(moving, 60, matched, need, strong=1.0) == 60 + 150  # (8, 9) among the best: it comes back in the block
    assert made(moving, 200, matched, need, strong=2.0) == 200  # the room the window leaves is enough
    assert made(moving, 60, matched, lambda displaced: 1000, strong=2.0) == 60 + 150  # all outscored: all may go
    assert made(Movable(), 60, matched, need, strong=0.0) == 60
