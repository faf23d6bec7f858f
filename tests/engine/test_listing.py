"""`session.list` answers from a list kept encoded (daemon/store/listing.py): whatever
sequence of changes happens, the cached answer equals one computed from the store."""

import asyncio
import shutil
import tempfile
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.daemon.context.listing import shown
from ctxkeep.daemon.handlers import RequestError
from ctxkeep.daemon.store.errors import NameTaken
from ctxkeep.protocol import encode, requests
from inprocess import InProcess
from memory_backend import MemoryBackend

MODEL = "qwen2.5:7b"
STEP = st.one_of(
    st.tuples(st.just("create"), st.text("abc", min_size=0, max_size=3)),
    st.tuples(st.just("rename"), st.integers(0, 5), st.text("xyz", min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("send"), st.integers(0, 5)),
    st.tuples(st.just("hold"), st.integers(0, 5)),
    st.tuples(st.just("release"),),
    st.tuples(st.just("list"),),
)


def fresh(app: InProcess) -> bytes:
    """The list as computed from the store and the queue, with no cache."""
    busy = app.services.jobs.busy
    return encode([shown(s, busy=busy(s.id)) for s in app.store.sessions.all()])


async def run(app: InProcess, steps: list[tuple]) -> None:
    sids: list[str] = []
    for step in steps:
        try:
            await apply(app, sids, step)
        except (RequestError, NameTaken):
            pass  # refused (a name taken): nothing changed, and the list must say so too
        for _ in range(3):
            await asyncio.sleep(0)
        for _ in range(20):  # a turn's commit may land (in the writer thread) between the
            listed, now = await app.call(requests.SessionList()), fresh(app)  # two reads
            if encode(listed.sessions) == now:
                break
            await asyncio.sleep(0.01)  # a stale cache stays stale; a race passes
        assert encode(listed.sessions) == now, step  # the cached list is never stale
    app.backend.release()  # type: ignore[attr-defined]
    await app.services.jobs.drain(30)
    assert msgspec.json.decode(encode((await app.call(requests.SessionList())).sessions)) \
        == msgspec.json.decode(fresh(app))


async def apply(app: InProcess, sids: list[str], step: tuple) -> None:
    pick = lambda i: sids[i % len(sids)]
    kind = step[0]
    if kind == "create":
        sids.append((await app.call(requests.SessionCreate(model=MODEL, name=step[1]))).session.id)
    elif kind == "release":
        app.backend.release()  # type: ignore[attr-defined]
    elif kind == "list" or not sids:
        pass
    elif kind == "rename":
        await app.call(requests.SessionRename(session=pick(step[1]), name=step[2]))
    elif kind == "delete" and not app.services.jobs.busy(pick(step[1])):
        await app.call(requests.SessionDelete(session=sids.pop(step[1] % len(sids))))
    elif kind in ("send", "hold"):
        if kind == "hold":
            app.backend.hold()  # type: ignore[attr-defined]
        await app.call(requests.Send(session=pick(step[1]), text="hi"))

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=14))
def test_the_kept_list_always_equals_a_fresh_one(steps):
    root = Path(tempfile.mkdtemp(prefix="cklisting"))
    app = InProcess(root, MemoryBackend())
    try:
        asyncio.run(run(app, steps))
    finally:
        app.close()
        shutil.rmtree(root, ignore_errors=True)
