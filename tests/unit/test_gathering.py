"""A question that gathers what several turns said, or asks what holds now (asking.gathers):
which questions do, and the floor they are held to."""

from ctxkeep.daemon.retrieval import asking, select
from unrelated import FOLLOW_UPS


def test_questions_that_count_total_order_compare_or_ask_what_holds_now_gather():
    for question in ("How many magazine subscriptions do I currently have?",
                     "What is the total amount I earned at the markets?", "How much did I raise in total?",
                     "What is the order of the three trips I took, from earliest to latest?",
                     "Which event happened first, the purchase of the coffee maker or the mixer's malfunction?",
                     "Who graduated first among Emma, Rachel and Alex?",
                     "What brand of BBQ sauce am I currently obsessed with?",
                     "Do I go to the gym more than I did previously?",
                     "What do I use to store my sneakers these days?", "Do I still play tennis, or not anymore?",
                     "Where did I use to buy my coffee beans?"):
        assert asking.gathers(question), question
    for question in ("What brand of BBQ sauce did I buy for the party?", "Which book did I finish a week ago?",
                     "Can you suggest a hotel for my upcoming trip to Miami?",
                     "Is it first come, first served at the museum?", "What did I order at the sushi place?",
                     "I'm saving in order to buy a car: where do I start?", "Which flour is used to make bagels?",
                     "Do you have any more ideas for the party?", *FOLLOW_UPS):
        assert not asking.gathers(question), question


def test_the_floor_a_gathering_question_is_held_to_keeps_what_scores_a_fraction_of_the_best():
    scores = {0: 4.0, 1: 0.5, 2: 0.25, 3: 0.1}
    assert set(select.above_floor(scores)) == {0}
    assert set(select.above_floor(scores, select.GATHER_FLOOR)) == {0, 1, 2}

