"""A chat log's writers (recall/speakers.py): the names its messages open with, and the
messages from outside it that ask about one of them."""

from ctxkeep.daemon.recall.speakers import Speakers, label


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
