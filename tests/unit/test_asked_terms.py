"""A question's terms (retrieval/lexical.py `asked_terms`): an idiom searched for what it means."""

from ctxkeep.daemon.recall.session_index import SessionIndex
from ctxkeep.daemon.retrieval.lexical import asked_terms, query_terms
from ctxkeep.daemon.store.records import NewMessage


def test_for_a_living_asks_of_work_not_of_where_someone_lives():
    assert asked_terms("What does Nate do for a living now?") == ["nate", "work"]
    assert asked_terms("Where does Nate live?") == ["nate", "live"]  # living where: still "live"
    index = SessionIndex()
    index.add([NewMessage(role="user", content=text).record(seq, 0.0) for seq, text in enumerate([
        "This morning I repotted the plants in the living room.",
        "I live in Porto now, we like how quiet it is.",
        "I work as a vet these days."])])
    ranked = index.lexical.rank(query_terms("What does he do for a living now?"), set(), 5)
    assert [index.lexical.passages[pid].seq for pid, _ in ranked] == [2]
