"""session.import in the engine, in-process: what an imported conversation becomes."""

import asyncio

from ctxkeep.protocol import requests
from ctxkeep.protocol.imported import ImportedMessage
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"


def test_an_imported_answer_answers_the_question_before_it_unless_it_says_otherwise(tmp_path):
    """HTTP clients and exports seldom say which question an answer answers: recall brings
    an answer back with its question, so the import links them."""
    app = InProcess(tmp_path, MemoryBackend())
    said = [ImportedMessage(role="system", content="Be brief."),
            ImportedMessage(role="assistant", content="Hello! Ask me anything."),
            ImportedMessage(role="user", content="What is a tetra?"),
            ImportedMessage(role="assistant", content="A small freshwater fish."),
            ImportedMessage(role="user", content="And a gourami?"),
            ImportedMessage(role="assistant", content="A labyrinth fish."),
            ImportedMessage(role="assistant", content="They breathe air.", reply_to=2)]

    async def go():
        sid = (await app.call(requests.SessionImport(model=MODEL, messages=said))).session.id
        page, _, _ = app.store.history.page(sid, start=0, limit=100)
        return [(m.role, m.reply_to) for m in page]
    try:
        assert asyncio.run(go()) == [("system", -1), ("assistant", -1), ("user", -1), ("assistant", 2),
                                     ("user", -1), ("assistant", 4), ("assistant", 2)]
    finally:
        app.close()
