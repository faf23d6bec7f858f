"""Recall blocks kept after their messages, on a real store: they stay while the prompt
before them is unchanged, and go with any change before them (context_records.still_kept)."""

from ctxkeep.daemon.store.context_records import KeptBlock
from ctxkeep.daemon.store.prompt_count import PromptCount
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.daemon.store.store import Store
from ctxkeep.protocol.goals import Goals


def turns(tmp_path, n: int) -> tuple[Store, str]:
    """A store with a session of `n` answered turns, each question's recall block kept."""
    st = Store.open(tmp_path / "store")
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    for i in range(n):
        _, (q,) = st.history.append(s.id, [NewMessage(role="user", content=f"q{i}")], pending=True)
        st.history.append(s.id, [NewMessage(role="assistant", content=f"a{i}")], activate_seqs=[q.seq],
                          activate=[0], answered=[q.seq], count=PromptCount(tokens=10 * i),
                          block=KeptBlock(seq=q.seq, text=f"<recalled>\nq{i - 1}\n</recalled>", passages=[q.seq - 2]))
    return st, s.id


def kept(st: Store, sid: str) -> list[int]:
    return [k.seq for k in st.context.get(sid).kept]


def test_blocks_stay_while_turns_only_add_to_the_context(tmp_path):
    st, sid = turns(tmp_path, 3)
    assert kept(st, sid) == [0, 2, 4]
    st.context.update(sid, lambda c, r: setattr(c, "pinned", [2]))  # a pin changes no prompt
    assert kept(st, sid) == [0, 2, 4]
    st.close()


def test_any_change_before_them_takes_them_all(tmp_path):
    for change in (lambda c, r: setattr(c, "seqs", c.seqs[2:]),  # a pass: the oldest exchange gone
                   lambda c, r: setattr(c, "file_summaries", [4]),  # level 1: a message shown short
                   lambda c, r: setattr(c, "goals", Goals(goal="ship it")),  # the system message
                   lambda c, r: setattr(c, "seqs", [*c.seqs[:2], *c.seqs[4:]])):  # recall took an exchange's room
        st, sid = turns(tmp_path / str(id(change)), 3)
        st.context.update(sid, change)
        assert kept(st, sid) == []
        st.close()


def test_a_restored_snapshot_has_its_blocks_back_as_its_count_had_them(tmp_path):
    st, sid = turns(tmp_path, 2)
    snapshot = st.snapshots.save(sid, "before compaction (automatic: x)")
    st.context.update(sid, lambda c, r: setattr(c, "seqs", c.seqs[2:]))
    assert kept(st, sid) == []
    st.snapshots.restore(sid, snapshot.id)
    assert kept(st, sid) == [0, 2]
    st.close()
