"""Waiting for a model's first token, out loud.

A model server that takes a request and sends nothing (a model loading, a stuck server)
left clients silent for up to `read_timeout`. While a turn waits for its first chunk it
says so every few seconds (`generation.waiting`), telling a model that is loading (not in
/api/ps yet: this may take minutes) from a loaded one processing the prompt and from a
server that does not answer /api/ps either; a model that is not loading and sends nothing
for `first_token_timeout` seconds ends the turn with `ollama_not_answering` — or for
longer, where the model is measured slower than that allows for the prompt (it is given
three times what reading the prompt should take at its speed here, context/speeds.py), and
the waiting lines say how long reading it should take.
"""

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal, TypeVar

from ctxkeep.daemon.backends.protocol import ModelBackend, ModelCallError
from ctxkeep.daemon.turns.question import Question
from ctxkeep.protocol import ErrorCode
from ctxkeep.protocol.events import GenerationWaiting

T = TypeVar("T")

#: The longest a question's commit waits for its model request to be out (building a
#: request of many thousands of messages takes the ollama package longer).
SENT_WAIT_S = 0.02

#: The first report after this long, then one every REPORT_EVERY_S.
FIRST_REPORT_S = 2.0
REPORT_EVERY_S = 5.0

#: What a turn waits on (GenerationWaiting.state).
WaitingState = Literal["loading", "processing", "not_answering"]
WORDS = {
    "loading": "{server} is loading {model} into memory (a large model can take minutes)",
    "processing": "the model {model} is loaded and reading the prompt",
    "not_answering": "{server} does not answer (not even which models it has loaded)",
}


def server_of(backend: ModelBackend) -> tuple[str, str]:
    """How the waiting lines name the model server, and how to restart it: Ollama when
    every configured server is one, else "the model server"."""
    if all(b.kind == "ollama" for b in backend.hosts()):
        return "Ollama", "Restart it (`systemctl restart ollama`, or `ollama serve`)"
    return "the model server", "Restart it"


async def first_chunk(stream: AsyncIterator[T], question: Question,
                      patience: Callable[[], Awaitable[BaseException]]) -> T:
    """The stream's first chunk, asked for in this task: its request goes out at once, not
    after a hop to a task of its own. Beside it, in a task that ends with the wait:

    - the question's commit, started by the request's being out (`on_sent`) or after
      SENT_WAIT_S at the latest, is awaited and announced (`query.received` comes before
      any token, however long the model takes);
    - then `patience()` (the waiting reports), whose error ends the wait.

    Raises what ended the wait: the stream's own error, Withdrawn where the question could
    not be stored, `patience`'s error (the stream has ended then: the wait's cancel went
    through it)."""
    loop = asyncio.get_running_loop()
    ended: list[BaseException] = []
    try:
        async with asyncio.timeout(None) as limit:
            def end(exc: BaseException) -> None:
                ended.append(exc)
                limit.reschedule(loop.time())  # the chunk's wait is cancelled: raised below
            beside = loop.create_task(_beside(question, patience, end))
            try:
                return await anext(stream)
            finally:
                beside.cancel()
    except TimeoutError:
        if ended:
            raise ended[0] from None
        raise


async def _beside(question: Question, patience: Callable[[], Awaitable[BaseException]],
                  end: Callable[[BaseException], None]) -> None:
    """What a turn does while its first chunk is awaited (`first_chunk`)."""
    try:
        await asyncio.wait([question.commit.future], timeout=SENT_WAIT_S)
        await question.settled()
        end(await patience())
    except Exception as exc:  # Withdrawn, or a failure of the reports: the turn ends with it
        end(exc)


async def patience(backend: ModelBackend, model: str, generation_id: str, timeout: float,
                   publish: Callable[[GenerationWaiting], object], reading: str = "") -> ModelCallError:
    """Report, from FIRST_REPORT_S on, while the first chunk is awaited (the caller cancels
    this once it is in); returns ModelCallError(ollama_not_answering) once a model that is
    not loading has sent nothing for `timeout` seconds. `reading`: how long reading the
    prompt should take at the model's measured speed ("" when not measured)."""
    start = time.monotonic()
    report_at = FIRST_REPORT_S
    server, restart = server_of(backend)
    while True:
        await asyncio.sleep(max(0.0, report_at - (time.monotonic() - start)))
        loaded = await backend.loaded(model)
        state: WaitingState = "loading" if loaded is False else "processing" if loaded else "not_answering"
        waited = time.monotonic() - start
        words = WORDS[state].format(model=model, server=server)  # never opening with a model's name
        words = words[:1].upper() + words[1:] + (f" ({reading})" if reading and state == "processing" else "")
        publish(GenerationWaiting(generation_id=generation_id, model=model, waited=round(waited, 1),
                                  state=state, message=words))
        if state != "loading" and waited >= timeout:
            what = (f"{model} is loaded" + (f", and reading this prompt should take {reading}" if reading else "")
                    if state == "processing" else f"{server} did not say which models it has loaded either")
            return ModelCallError(
                ErrorCode.OLLAMA_NOT_ANSWERING,
                f"{server[:1].upper() + server[1:]} took the request but sent nothing for {waited:.0f} s "
                f"({what}): it stopped answering. {restart} and send again; first_token_timeout in "
                "config.toml sets how long to wait")
        report_at = waited + REPORT_EVERY_S
