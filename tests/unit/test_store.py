"""The LMDB store on a real environment: append-only history, paging, growth, schema versions."""

import shutil
from pathlib import Path

import lmdb
import pytest

from ctxkeep.daemon.store import environment as store_module
from ctxkeep.daemon.store import migrations
from ctxkeep.daemon.store.prompt_count import Anchor, CacheTally, PromptCount
from ctxkeep.daemon.store.records import NewMessage
from ctxkeep.daemon.store.store import Store, StoreTooNew, UnknownSession


def make(tmp_path, **kw) -> Store:
    return Store.open(tmp_path / "store", **kw)


def test_append_history_and_active_context(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    _, (u,) = st.history.append(s.id, [NewMessage(role="user", content="q")])
    assert st.history.active_messages(s.id) == []  # stored, not yet active
    rec, (a,) = st.history.append(s.id, [NewMessage(role="assistant", content="a")],
                          activate_seqs=[u.seq], activate=[0], count=PromptCount(tokens=42))
    assert [m.content for m in st.history.active_messages(s.id)] == ["q", "a"]
    assert rec.count.tokens == 42 and rec.message_count == 2
    msgs, nxt, total = st.history.page(s.id)
    assert [m.seq for m in msgs] == [0, 1] and nxt is None and total == 2


def test_history_keys_do_not_mix_sessions(tmp_path):
    st = make(tmp_path)
    a = st.sessions.create(name="a", model="m", system="", options={}, num_ctx=8192)
    b = st.sessions.create(name="b", model="m", system="", options={}, num_ctx=8192)
    for i in range(300):  # past one byte of sequence number
        st.history.append(a.id, [NewMessage(role="user", content=f"a{i}")])
    st.history.append(b.id, [NewMessage(role="user", content="b0")])
    msgs, nxt, total = st.history.page(a.id, start=250, limit=100)
    assert [m.content for m in msgs] == [f"a{i}" for i in range(250, 300)] and nxt is None
    assert [m.content for m in st.history.page(b.id)[0]] == ["b0"]
    st.sessions.delete(a.id)
    assert [m.content for m in st.history.page(b.id)[0]] == ["b0"]
    with pytest.raises(UnknownSession):
        st.history.page(a.id)


def test_map_grows_when_full(tmp_path):
    st = make(tmp_path, map_size=64 * 1024)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    for _ in range(200):
        st.history.append(s.id, [NewMessage(role="user", content="x" * 2000)])
    assert st.env.env.info()["map_size"] > 64 * 1024
    assert st.sessions.get(s.id).message_count == 200


def test_reopen_keeps_everything(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="kept", model="m", system="sys", options={"temperature": 0.5},
                          num_ctx=4096)
    st.history.append(s.id, [NewMessage(role="user", content="hello")], activate=[0])
    st.close()
    st = make(tmp_path)
    again = st.sessions.get("kept")
    assert (again.system, again.options, again.num_ctx) == ("sys", {"temperature": 0.5}, 4096)
    assert [m.content for m in st.history.active_messages(s.id)] == ["hello"]


def test_newer_schema_is_refused(tmp_path):
    st = make(tmp_path)
    st.env.write(lambda txn: txn.put(b"schema_version", b"99", db=st.env.dbs["meta"]))
    st.close()
    with pytest.raises(StoreTooNew, match="schema version 99"):
        make(tmp_path)


def test_upgrade_backs_up_then_migrates(tmp_path, monkeypatch):
    st = make(tmp_path)
    s = st.sessions.create(name="old", model="m", system="", options={}, num_ctx=8192)
    st.close()

    def add_marker(txn, dbs):
        txn.put(b"migrated", b"yes", db=dbs["meta"])
    now = migrations.SCHEMA_VERSION
    step = migrations.Migration(now, now + 1, "add a marker", add_marker)
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", now + 1)
    monkeypatch.setattr(store_module, "MIGRATIONS", [*migrations.MIGRATIONS, step])
    st = make(tmp_path)
    assert st.env.schema_version() == now + 1
    assert st.env.read(lambda txn: txn.get(b"migrated", db=st.env.dbs["meta"])) == b"yes"
    backups = list((tmp_path / "backups").iterdir())
    assert len(backups) == 1 and backups[0].name.startswith(f"schema-v{now}-")
    old = lmdb.open(str(backups[0]), max_dbs=8, readonly=True)
    meta = old.open_db(b"meta", create=False)
    with old.begin() as txn:
        assert txn.get(b"schema_version", db=meta) == str(now).encode()
    old.close()
    assert st.sessions.get("old").id == s.id


def test_a_store_written_by_schema_2_keeps_its_counts_whole(tmp_path):
    """tests/data/store-schema-2 was written by the code of schema 2 (a session with two
    counted turns, the first with a recall block and a cache figure, and a snapshot between
    them): its loose count fields become the structs, nothing else changes."""
    shutil.copytree(Path(__file__).parent.parent / "data" / "store-schema-2", tmp_path / "store")
    st = make(tmp_path)
    try:
        assert st.env.schema_version() == migrations.SCHEMA_VERSION
        (s,) = st.sessions.all()
        assert s.name == "written by schema 2" and s.message_count == 4
        assert s.count == PromptCount(tokens=150, exact=True, answer=4, recalled=0, cached=-1)
        assert s.anchor == Anchor(tokens=150, features=[1.5, 2.5, 3.5], model="gemma3:270m", recall=[])
        assert s.cache == CacheTally(prompt=120, served=100) and s.cache.hit_rate == 0.8333
        assert s.count.next_prompt == 154
        (snapshot,) = st.snapshots.all(s.id)
        assert snapshot.count == PromptCount(tokens=120, exact=True, answer=6, recalled=9)
        assert [m.content for m in st.history.active_messages(s.id)][0] == "My locker code is 4417."
        assert list((tmp_path / "backups").iterdir())[0].name.startswith("schema-v2-")
    finally:
        st.close()


def test_failed_write_changes_nothing(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)

    def boom(txn):
        txn.put(b"half", b"written", db=st.env.dbs["meta"])
        raise RuntimeError("crash mid-transaction")
    with pytest.raises(RuntimeError):
        st.env.write(boom)
    assert st.env.read(lambda txn: txn.get(b"half", db=st.env.dbs["meta"])) is None
    assert st.sessions.get(s.id).message_count == 0


def test_compaction_records_are_never_overwritten(tmp_path):
    from ctxkeep.daemon.store.context_records import CompactionRecord
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    st.history.append(s.id, [NewMessage(role="user", content=f"q{i}") for i in range(4)])

    def record(n: int) -> CompactionRecord:
        return CompactionRecord(time=float(n), level=3, strategy="checkpoint", tokens_before=10,
                                tokens_after=5, tokens_freed=5, summarized=[], kept=[],
                                summary_seq=-1, model="m")
    for n in range(5):  # automatic ones write through update_context, manual through compact
        st.context.update(s.id, lambda c, r: None, audit=record(n))
    st.context.compact(s.id, expected=[], summary=NewMessage(role="user", content="[SUMMARY] s", kind="summary"),
               keep=[], record=record(5), token_estimate=3)
    snapshot = st.snapshots.save(s.id, "before compaction (manual)")
    st.snapshots.restore(s.id, snapshot.id, undo=True)  # an undo resets the counter it used to key by
    st.context.update(s.id, lambda c, r: None, audit=record(6))
    assert [r.time for r in st.context.compactions(s.id)] == [float(n) for n in range(7)]


def test_append_keeps_the_kind_and_the_answer_link(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    _, (u,) = st.history.append(s.id, [NewMessage(role="user", content="q")], pending=True)
    assert st.sessions.get(s.id).pending == [u.seq]
    _, (a,) = st.history.append(s.id, [NewMessage(role="assistant", content="a", kind="summary", reply_to=u.seq)],
                        answered=[u.seq])
    (stored,) = st.history.messages(s.id, [a.seq])
    assert stored.kind == "summary" and stored.reply_to == u.seq
    assert st.sessions.get(s.id).pending == []


def test_recovery_marks_every_pending_question(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    st.history.append(s.id, [NewMessage(role="user", content=f"q{i}") for i in range(3)], pending=True)
    assert st.history.recover("daemon_restarted") == [(s.id, [0, 1, 2])]
    answers = [m for m in st.history.page(s.id)[0] if m.role == "assistant"]
    assert [(m.reply_to, m.status, m.error) for m in answers] == [
        (q, "interrupted", "daemon_restarted") for q in range(3)]
    assert st.history.recover("daemon_restarted") == []  # nothing left to do


def test_undo_walks_back_and_keeps_later_turns(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    _, msgs = st.history.append(s.id, [NewMessage(role="user", content=f"m{i}") for i in range(6)], activate=range(6))
    first = st.snapshots.save(s.id, "before compaction (automatic: x)")
    st.context.update(s.id, lambda c, r: setattr(c, "seqs", [4, 5]))  # a pass dropped 0-3
    second = st.snapshots.save(s.id, "before compaction (automatic: y)")
    st.context.update(s.id, lambda c, r: setattr(c, "seqs", [5]))  # another dropped 4
    st.history.append(s.id, [NewMessage(role="user", content="later")], activate=[0])  # a later turn: #6
    st.snapshots.restore(s.id, second.id, undo=True)
    assert st.context.get(s.id).seqs == [4, 5, 6]
    st.snapshots.restore(s.id, first.id, undo=True)
    assert st.context.get(s.id).seqs == [0, 1, 2, 3, 4, 5, 6]
    assert [x.undone for x in st.snapshots.all(s.id)] == [True, True]
    assert not st.sessions.get(s.id).count.exact  # a later turn makes the snapshot's count stale


def test_only_the_newest_snapshots_are_kept_per_session(tmp_path):
    st = make(tmp_path)
    a = st.sessions.create(name="a", model="m", system="", options={}, num_ctx=8192)
    b = st.sessions.create(name="b", model="m", system="", options={}, num_ctx=8192)
    other = st.snapshots.save(b.id, "b's own")
    saved = [st.snapshots.save(a.id, f"pass {i}", keep=3).id for i in range(7)]
    assert [x.id for x in st.snapshots.all(a.id)] == saved[::-1][:3]  # newest first, 3 kept
    assert [x.id for x in st.snapshots.all(b.id)] == [other.id]  # another session's are untouched
    st.snapshots.restore(a.id, saved[-3], undo=True)  # the oldest kept one still restores


def test_the_store_is_composed_of_layers_each_with_one_job(tmp_path):
    """No inheritance tower: the store is its members, each a class of its own over the
    one environment, sharing it (and no state of each other's but the message cache)."""
    store = Store.open(tmp_path)
    try:
        members = {name: value for name, value in vars(store).items()
                   if name in {"sessions", "history", "context", "snapshots", "search", "caches"}}
        assert len(members) == 6 and Store.__mro__[1:] == (object,)
        for member in members.values():
            assert type(member).__mro__[1:] == (object,) and member.env is store.env
    finally:
        store.close()


def test_search_finds_every_word_in_any_session_and_follows_deletes(tmp_path):
    st = make(tmp_path)
    a = st.sessions.create(name="a", model="m", system="", options={}, num_ctx=8192)
    b = st.sessions.create(name="b", model="m", system="", options={}, num_ctx=8192)
    st.history.append(a.id, [NewMessage(role="user", content="The LMDB store keeps every message"),
                     NewMessage(role="assistant", content="Größe: the store grows its map")])
    st.history.append(b.id, [NewMessage(role="user", content="A store of LMDB pages, elsewhere")])
    hits, total = st.search.find("lmdb STORE")
    assert total == 2 and {(sid, m.seq) for sid, m in hits} == {(a.id, 0), (b.id, 0)}
    assert [m.seq for _, m in st.search.find("größe", a.id)[0]] == [1]  # any script, any case
    assert st.search.find("store", b.id)[1] == 1 and st.search.find("the")[1] == 0  # stop words are not kept
    assert st.search.find("lmdb nowhere")[1] == 0
    st.sessions.delete(b.id)
    assert st.search.find("lmdb")[1] == 1
    assert st.env.read(lambda txn: txn.stat(st.env.dbs["search"])["entries"]) == len(
        {"lmdb", "store", "keeps", "every", "message"}) + len({"größe", "store", "grows", "its", "map"}) - 1


def test_a_question_joins_the_search_index_when_its_turn_ends_however_it_ends(tmp_path):
    """The commit that `accepted` waits for leaves the question's words out; the answer's
    commit, a failure's, or recovery after a crash puts them in."""
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    _, (q0, q1) = st.history.append(s.id, [NewMessage(role="user", content="walrus tusks"),
                                   NewMessage(role="user", content="narwhal horns")], pending=True)
    entries = lambda: st.env.read(lambda txn: txn.stat(st.env.dbs["search"])["entries"])
    assert entries() == 0 and st.search.find("walrus")[1] == 0
    st.history.append(s.id, [NewMessage(role="assistant", content="ivory", reply_to=q0.seq)],
              answered=[q0.seq])
    assert st.search.find("walrus")[1] == 1 and st.search.find("narwhal")[1] == 0
    assert entries() == 3  # walrus, tusks, ivory
    assert st.history.recover("daemon_restarted") == [(s.id, [q1.seq])]
    assert [m.seq for _, m in st.search.find("narwhal horns")[0]] == [q1.seq]
    assert entries() == 5


def test_the_search_index_is_built_for_a_store_written_before_it(tmp_path):
    st = make(tmp_path)
    s = st.sessions.create(name="old", model="m", system="", options={}, num_ctx=8192)
    st.history.append(s.id, [NewMessage(role="user", content="remember the walrus")])

    def as_version_1(txn):  # what a store of schema 1 had: no index
        txn.drop(st.env.dbs["search"], delete=False)
        txn.put(b"schema_version", b"1", db=st.env.dbs["meta"])
    st.env.write(as_version_1)
    assert st.search.find("walrus")[1] == 0
    st.close()
    st = make(tmp_path)
    assert st.env.schema_version() == migrations.SCHEMA_VERSION and st.search.find("walrus")[1] == 1


def test_a_crash_during_a_regenerate_or_an_edit_puts_the_old_exchange_back(tmp_path):
    st = Store.open(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    st.history.append(s.id, [NewMessage(role="user", content="Name a colour"),
                             NewMessage(role="assistant", content="Blue.", reply_to=0)], activate=[0, 1])
    st.context.reopen(s.id, 0, (0, 1))  # a regenerate's turn took them out, then the crash
    assert st.context.get(s.id).seqs == [] and st.sessions.get(s.id).pending == [0]
    st.history.recover("daemon_restarted")
    assert st.context.get(s.id).seqs == [0, 1]
    st.context.reopen(s.id, 0, (0, 1), NewMessage(role="user", content="Name a fruit", alternative_of=0))
    st.history.recover("daemon_restarted")  # an edit's, likewise
    assert st.context.get(s.id).seqs == [0, 1]
    assert [m.status for m in st.history.page(s.id)[0]] == ["complete"] * 2 + ["interrupted", "complete",
                                                                               "interrupted"]
    st.close()


@pytest.mark.parametrize("model", ["", "m" * 200, "é" * 200, "\U0001f600" * 200])
def test_any_model_name_keys_its_calibrations_and_embeddings(tmp_path, model):
    """LMDB takes keys of 1 to 511 bytes: a name it cannot take is kept under its digest."""
    from ctxkeep.daemon.store.context_records import Calibration
    st = make(tmp_path)
    s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
    st.caches.save_calibration(model, Calibration(samples=2.0))
    st.history.append(s.id, [NewMessage(role="user", content="q")],
                      calibrations=[(f"{model}\0{s.id}", Calibration(samples=3.0))])
    st.caches.save_embeddings(model, {"d" * 64: [0.5, 0.25]})
    assert st.caches.calibration(model).samples == 2.0
    assert st.caches.calibration(f"{model}\0{s.id}").samples == 3.0
    assert st.caches.embedding(model, "d" * 64) == [0.5, 0.25]


def test_an_append_run_again_as_the_store_grows_activates_each_message_once(tmp_path):
    """A full map makes the environment grow it and run the append again from the start: what
    the append joins to the active context must not carry over from the first run."""
    st = Store.open(tmp_path / "store", map_size=256 << 10)
    try:
        s = st.sessions.create(name="", model="m", system="", options={}, num_ctx=8192)
        _, (u,) = st.history.append(s.id, [NewMessage(role="user", content="q")], pending=True)
        big = "an answer long enough to fill the map " * 20_000  # ~780 KB: past 256 KB
        rec, (a, note) = st.history.append(s.id, [NewMessage(role="assistant", content="a"),
                                                  NewMessage(role="user", content=big)],
                                           activate_seqs=[u.seq], activate=[0, 1], answered=[u.seq],
                                           count=PromptCount(tokens=99))  # the second fills the map
        assert st.context.get(s.id).seqs == [u.seq, a.seq, note.seq] and rec.count.tokens == 99
    finally:
        st.close()
