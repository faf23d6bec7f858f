"""A chat log's writers (retrieval/speakers.py): the names its messages open with, and the
messages from outside it that ask about one of them."""

from ctxkeep.daemon.retrieval import select
from ctxkeep.daemon.retrieval.speakers import Speakers, addressed, label


def chat(lines: int = 8, first: str = "Caroline", second: str = "Melanie") -> Speakers:
    speakers = Speakers()
    for i in range(lines):
        speakers.add("user", f"{first}: line {i}")
        speakers.add("assistant", f"{second}: reply {i}")
    return speakers


def test_a_writer_is_the_name_most_of_a_roles_messages_open_with():
    assert chat().writers() == {"user": "Caroline", "assistant": "Melanie"}
    assert chat(4).writers() == {}  # too few to tell
    mixed = chat()
    for i in range(20):
        mixed.add("user", f"Note {i}: nothing of a writer")  # most of the user's open otherwise
    assert mixed.writers() == {"assistant": "Melanie"}
    assert label("[2023/05/08 (Mon) 13:56] Jon Snow: hi") == "Jon Snow"  # after a time stamp
    assert label("Dear diary: today") == ""
    assert label("no name here: lower case") == ""


def test_a_message_from_outside_that_names_one_writer_asks_of_their_role():
    speakers = chat()
    assert speakers.asked_of("Where does Caroline live these days?") == "user"
    assert speakers.asked_of("How many kids does Melanie have?") == "assistant"
    assert speakers.asked_of("Melanie: Where does Caroline live these days?") is None  # in a writer's voice
    assert speakers.asked_of("Did Caroline and Melanie meet in May?") is None  # both
    assert speakers.asked_of("What is the capital of France?") is None
    assert speakers.asked_of("Where does Carolines cousin live?") is None  # the name as a word only
    assert Speakers().asked_of("Where does Caroline live?") is None  # no chat log
    assert speakers.outside("The one of them who took in a husky: which city are they in?")  # names no one
    assert not speakers.outside("Caroline: which city are you in now?") and not Speakers().outside("Hi!")


def plain(lines: int = 10) -> Speakers:
    """Caroline (the user) and Melanie (the assistant) with no names opening their lines: each
    greets or thanks the other by name now and then."""
    speakers = Speakers()
    for i in range(lines):
        speakers.add("user", f"Thanks, Melanie, that helps. Line {i}." if i % 2 else f"line {i}")
        speakers.add("assistant", f"Hey Caroline! Reply {i}." if i % 2 else f"Ha, that's so you, Caroline. {i}")
    return speakers


def test_without_names_opening_the_lines_each_role_is_the_one_the_other_addresses():
    assert plain().addressees() == {"user": "Caroline", "assistant": "Melanie"}
    assert plain().writers() == {}
    assert plain(6).addressees() == {"user": "Caroline"}  # Melanie thanked only three times: too few
    assert addressed("Good morning, Sam! Big news, Sam: we moved.") == ["Sam"]  # not before a colon
    assert addressed("Sure: Trello, Asana. Free, Premium: $3/month.") == ["Asana"]


def test_names_a_role_writes_of_others_or_both_roles_address_are_no_ones():
    story = Speakers()
    for i in range(10):  # the characters of a story the assistant writes address each other
        story.add("user", "Write the next scene, please.")
        story.add("assistant", 'Andy: "Of course, Ruth. I was there." Ruth smiled. Ruth left with Andy.')
    assert story.addressees() == {}
    both = Speakers()
    for i in range(10):  # a word both sides end a sentence with is no one's name
        both.add("user", "Thanks, Alright.")
        both.add("assistant", "Well, Alright.")
    assert both.addressees() == {}


def test_without_names_opening_the_lines_a_message_naming_one_writer_asks_of_their_role():
    speakers = plain()
    assert speakers.asked_of("Where does Caroline live these days?") == "user"
    assert speakers.asked_of("How many kids does Melanie have?") == "assistant"
    assert speakers.outside("When did Melanie and Caroline meet?") and \
        speakers.asked_of("When did Melanie and Caroline meet?") is None  # both
    assert not speakers.outside("Thanks, Melanie, where do you live now?")  # addresses her: in the chat
    assert not speakers.outside("What is the capital of France?")


def test_a_question_is_searched_without_the_name_of_the_one_it_asks_of():
    # the name is in the other's greetings only ("Hey Caroline!") or in every line of its
    # writer: which role's words it asks of says who
    assert plain().unnamed("How many kids does Caroline have?", "user") == "How many kids does have?"
    assert chat().unnamed("What is Melanie's job now?", "assistant") == "What is job now?"
    assert chat().unnamed("Where does Caroline live?", None) == "Where does Caroline live?"  # asks of no one
    assert Speakers().unnamed("Where does Caroline live?", "user") == "Where does Caroline live?"  # no chat log
    assert chat().unnamed("Where do Carolines live?", "user") == "Where do Carolines live?"  # the name as a word only


def test_a_whole_question_about_the_chats_people_is_searched_without_the_one_before_it():
    asked = "How many kids does Caroline have?"  # two terms: short, but whole
    assert select.leans_on_last_turn(asked, 2)  # any other message that short
    assert not select.leans_on_last_turn(asked, 1, whole=True)  # "kid", less her name
    assert select.leans_on_last_turn("And Melanie?", 0, whole=True)  # nothing of its own


def test_a_message_from_outside_is_about_the_chat_where_it_speaks_of_its_people():
    speakers = chat()
    assert speakers.about_them("How many kids does Melanie have?")  # names one
    assert speakers.about_them("When did Melanie and Caroline meet?")  # both
    assert speakers.about_them("The one of them who took in a husky: which city are they in?")
    assert speakers.about_them("Did anyone mention Lisbon?") and speakers.about_them("Where did they meet each other?")
    assert not speakers.about_them("What is the capital city of Canada?")  # an everyday request
    assert not speakers.about_them("Write a short poem about the first frost of the year.")
    assert not speakers.about_them("Caroline: where do they live now?")  # in a writer's voice
    assert not Speakers().about_them("Where do they live?")  # no chat log
    assert plain().about_them("Where does Melanie live these days?")
    assert not plain().about_them("Where do they live?")  # names neither (plain: outside only so)


def test_memory_knows_each_chat_logs_writers_by_their_first_names():
    import numpy as np

    from ctxkeep.daemon.memory.people import People
    people = People()
    for i in range(8):
        people.add(0, "user", f"Caroline Smith: line {i}")
        people.add(0, "assistant", f"Melanie: reply {i}")
        people.add(1, "user", f"Note {i}: not a chat log")  # no name opens these ("Note 3" is none)
        people.add(1, "assistant", "Sure.")
    people.settle(0)
    people.settle(1)
    allowed = np.array([True, True])
    assert people.named("How many kids does Melanie have?", allowed)
    assert people.named("Where does Caroline live?", allowed)  # her first name
    assert not people.named("Melanie: how are you?", allowed)  # in a writer's voice
    assert not people.named("What is the capital of France?", allowed)
    assert not people.named("Where does Melanie live?", np.array([False, True]))  # a private session's
