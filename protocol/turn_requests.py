"""Requests that make or change a conversation: a turn, stopping it, and branching."""

from typing import Annotated, Any, Literal

from msgspec import Meta

from .images import ImageInput
from .request_base import Request, SessionRef
from .structs import Seq
from .tools import ToolResult, ToolSpec


class Turn(Request, kw_only=True):
    """What every request that asks the model for an answer carries."""

    session: SessionRef
    #: Ask a thinking model to think, or how hard (None: the model's default).
    think: bool | Literal["low", "medium", "high"] | None = None
    #: The answer's shape, passed as Ollama's `format`: "json" or a JSON schema.
    format: Literal["json"] | dict[str, Any] | None = None
    #: How long the model stays loaded after this turn ("5m", or seconds; 0 unloads it).
    keep_alive: str | float | None = None
    #: The tools the model may call in this turn (None: the session's, `session.set_tools`;
    #: []: none). An answer that calls tools ends its generation with its `tool_calls`.
    tools: list[ToolSpec] | None = None


class Send(Turn, tag="send", kw_only=True):
    """A user turn. Accepted at once; the answer arrives as events. After an answer that
    called tools, `tool_results` carries what each call returned (stored as one `tool`
    message) and `text` may be left empty: the model answers the results."""

    text: str = ""
    tool_results: list[ToolResult] = []
    #: Images the message shows the model (a model with vision sees them; one without reads
    #: each one's name in its place). Each is stored once, by its content's hash.
    images: list[ImageInput] = []
    #: The client's working directory: `@file` references resolve against it, and
    #: by default only files below it may be read.
    cwd: str = ""


class Regenerate(Turn, tag="regenerate"):
    """A new answer to the session's last question, as a turn (accepted at once, the
    answer as events). The answer it replaces stays in history and leaves the active
    context; the new one records it as `alternative_of`. If the new turn fails, the
    previous answer stays where it was. After a failed turn, its question is asked again
    (a failed edit's reworded question, in place of the exchange it rewords).

    With `continues`, the model goes on from the last answer instead (sent as its own
    unfinished message: Ollama and llama.cpp's server continue it); the tokens stream what
    it adds, and the stored answer is the whole, in place of the one it goes on from (one
    answer in the window, not a question and a second answer); what it adds is capped as
    any answer is (answer_max_share)."""

    continues: bool = False


class Edit(Turn, tag="edit", kw_only=True):
    """Ask one of your questions again, in other words (a turn: accepted at once, the answer
    as events). The last question: the edited one takes its place in the active context
    with a new answer (the old question and answer stay in history; the new question
    records `alternative_of`). An earlier one: a new branch holding the history before it
    asks the edited question there, and the session is not changed; the reply's
    `session_id` is the branch's."""

    text: Annotated[str, Meta(min_length=1)]
    #: The seq of the question (a user message) to edit (None: the last question).
    seq: Seq | None = None
    #: As `send`'s: where `@file` references resolve.
    cwd: str = ""


class Alternative(Request, tag="alternative"):
    """Make another answer to the last question the one the model sees (an answer a
    regenerate replaced, or the newest again). Nothing is generated; the history is not
    changed; the token count becomes an estimate until the next turn."""

    session: SessionRef
    #: The seq of the answer to put back.
    seq: Seq


class Cancel(Request, tag="cancel"):
    """Stop the session's running generation or compaction (or the one whose id is given)."""

    session: SessionRef
    generation_id: str = ""


class Branch(Request, tag="session.branch"):
    """A new session whose history is this one's up to a message (its last one unless
    `at` is given), with the context as it stood then (compactions, checkpoints, pins
    and goals); marked as a branch (`branched_from`, `branched_at`). The source is not
    changed, and nothing mutable is shared with it."""

    session: SessionRef
    #: The seq of the last message the branch keeps (None: the session's last message).
    at: Seq | None = None
    #: The branch's name ("": the source's name and "(branch)").
    name: Annotated[str, Meta(max_length=200)] = ""
