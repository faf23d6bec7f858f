"""Recall in a live chat that keeps to one subject (recall/room.py, asking.gathers): none of
a question's words is rare there, the turns it needs share one everyday word of the chat
with it, and the older verbatim turns in the window are about other things."""

import random

from live_chat import TOPICS, prompt_after, summarizer

#: Three chats about charity events, each amount said once by the user among talk of them.
CHARITY = ["I took part in a charity walk last spring and raised $250 through sponsors.",
           "My team did a charity Bike-a-Thon for cancer research and we raised $5,000.",
           "I helped organize a charity yoga event that raised $600 for the animal shelter."]


def replies(subject: str, opening: str, lines: list[str], rng: random.Random):
    """A model's replies: about `subject` (`opening`, then its `lines`) when asked of it,
    else chatter; the summaries of realistic size."""

    def reply(messages: list[dict]) -> str:
        summary = summarizer(messages)
        if summary is not None:
            return summary
        if subject in messages[-1]["content"].lower():
            return opening + " " + " ".join(rng.choice(lines) for _ in range(12))
        return "Here are some thoughts: " + " ".join(rng.choice(TOPICS) + " is worth a look." for _ in range(30))
    return reply


def test_a_question_about_a_subject_the_whole_chat_keeps_to_reaches_past_the_older_turns():
    """The chat comes back to charity events again and again, so none of the question's
    words is rare in it ("charity", "raised", "events"); the three turns that say the amounts
    are in checkpoints by the time it is asked, and the older verbatim turns in the window are
    about other things. The question speaks of the user's past and nothing in those turns
    says what it asks: it takes their room, and the three amounts come back word for word."""
    rng = random.Random(11)
    talk = [f"What else should I do for the next charity event, {n}?" for n in
            ("the spring one", "the summer one", "the autumn one", "the winter one", "the school one", "the town one")]
    chatter = [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(16)]
    texts = [CHARITY[0], *talk[:2], CHARITY[1], *talk[2:4], CHARITY[2], *talk[4:], *chatter]
    text = prompt_after(texts, "How much money did I raise in total through all the charity events I took part in?",
                        replies("charity", "Charity events do well with clear goals.",
                                ["Thank your sponsors.", "Share the results with donors.",
                                 "Ask friends to join the next charity event.", "Keep a list of volunteers."], rng))
    assert [fact in text for fact in CHARITY] == [True] * 3


#: Three magazines the user gets, each said once: the first in the words a question about
#: them asks with, the other two in long turns about something else.
MAGAZINES = ["My subscriptions in total: The New Yorker magazine, since February.",
             "I'm redecorating the living room and want a calm, warm look with plants, wood and soft "
             "light; which colours and furniture would suit it? By the way, Architectural Digest comes "
             "every month, a magazine I read for decor ideas.",
             "I'm building a small home server for photos and backups and wonder which parts are quiet "
             "and cheap to run all day. I also get Wired, a magazine about gadgets, on the first of the month."]


def test_a_question_that_gathers_gets_each_turn_it_needs_not_only_the_best():
    """"How many magazine subscriptions … in total?" holds the first turn's words; the other
    two magazines are said in turns that share one word of the chat with it ("magazine") and
    score under a seventh of the first. A question that gathers (how many, in total, which
    first) needs them all: all three come back."""
    rng = random.Random(12)
    talk = [f"Which magazine has the best {thing}?" for thing in
            ("crossword", "cartoons", "photographs", "covers", "recipes", "travel pieces", "interviews", "reviews")]
    chatter = [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(14)]
    texts = [*chatter[:4], MAGAZINES[0], *talk[:3], MAGAZINES[1], *talk[3:6], MAGAZINES[2], *talk[6:], *chatter[4:]]
    text = prompt_after(texts, "How many magazine subscriptions do I have in total?",
                        replies("magazine", "Each magazine has its strengths.",
                                ["A weekly magazine covers more.", "Ask a friend which magazine they read.",
                                 "Libraries keep every magazine of the month."], rng))
    assert [fact in text for fact in MAGAZINES] == [True] * 3, [fact in text for fact in MAGAZINES]


#: A model kit the user was building, and the one they switched to: the first said at length
#: in the words a question about it asks with, the change in a short turn that shares one
#: word with it.
KITS = ["I'm working on a model of a Ford Mustang Shelby GT350R, my current model project, and I want "
        "the weathering on this model car to look right.",
        "Quick news: that one is done, and I switched to a new model, a Ford F-150 pickup truck."]


def test_a_question_of_what_holds_now_gets_the_change_as_well_as_the_first_statement():
    """"What … am I currently working on?" holds the first statement's words; the turn that
    changed it shares one everyday word of the chat ("model") and scores a fraction of it.
    A question of what holds now needs both (the first to know what changed): both come
    back."""
    rng = random.Random(13)
    talk = [f"Which paint suits the {part} of a model?" for part in
            ("wheels", "windows", "seats", "bumpers", "engine", "doors", "lights", "roof")]
    chatter = [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(14)]
    texts = [*chatter[:4], KITS[0], *talk[:4], KITS[1], *talk[4:], *chatter[4:]]
    text = prompt_after(texts, "What type of vehicle model am I currently working on?",
                        replies("model", "Every model kit rewards patience.",
                                ["Thin your paint for a model.", "Prime each model part first.",
                                 "A model looks best under soft light."], rng))
    assert [kit in text for kit in KITS] == [True] * 2, [kit in text for kit in KITS]


#: Two graduations in a chat that keeps coming back to the same two people.
GRADUATIONS = ["Big news from the family: Emma graduated from high school in June, with honours.",
               "And Alex graduated from college in May, with a degree in engineering."]


def test_a_question_of_which_came_first_gets_each_thing_it_orders():
    """"Who graduated first, Emma or Alex?" says nothing of "I" or "my", and the names it
    gives are in every other turn of the chat, so they say nothing of what it is about. It
    asks the order things happened in, each said in a turn of its own: both come back."""
    rng = random.Random(14)
    talk = [f"What gift would {name} like for {occasion}?" for name in ("Emma", "Alex") for occasion in
            ("a birthday", "the holidays", "a new flat", "a summer trip", "a first job")]
    chatter = [f"Tell me something about {rng.choice(TOPICS)}, please." for _ in range(14)]
    texts = [*chatter[:3], *talk[:3], GRADUATIONS[0], *talk[3:6], GRADUATIONS[1], *talk[6:], *chatter[3:]]
    text = prompt_after(texts, "Who graduated first, Emma or Alex?",
                        replies("gift", "A gift they can use every day is best.",
                                ["Emma likes books.", "Alex likes tools.", "Wrap it nicely for Emma.",
                                 "Alex prefers something practical."], rng))
    assert [fact in text for fact in GRADUATIONS] == [True] * 2, [fact in text for fact in GRADUATIONS]
