"""Memory's precision: what it adds to a prompt must be about the question.

    python bench/memory_precision.py [--window 4096] [--per-kind N] [--config LINE ...]

For each question of LongMemEval's development split (../shared/bench-data/longmemeval/),
its ~48 haystack sessions are imported as sessions of their own (bench/memory.py), then in a
new session:

(a) the question itself: the tokens memory and recall add, the share of them that come from
    the question's evidence sessions, and the evidence turns found;
(b) requests that no session is about — everyday requests asked in a new session, and
    follow-ups of the chat just held (tests/unrelated.py, written for this bench): the
    tokens memory and recall add to each, and the share of them that get nothing.

Goals (issue 58): (b) nothing added in ≥ 95 %; (a) ≥ 80 % of the added tokens from evidence
sessions, with evidence recall no lower than before.
"""

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from common import emit

import recall_lme
from harness import DaemonProcess
from memory import MODEL, undated
from ollama_standin import OllamaStandin
from unrelated import FOLLOW_UPS, UNRELATED

_MEMORY_LINE = re.compile(r'^\[[^\]\n]+\] in "([^"]*)" ')
_NEXT_LINE = re.compile(r'\n(?=\[[^\]\n]+\] in ")')


def entries(memory: str) -> list[tuple[str, str]]:
    """(conversation name, text) of each passage in memory's block, its text whole: a
    passage of many lines (an answer's paragraphs) is one entry."""
    inner = "\n".join(memory.splitlines()[1:-1])
    return [(m.group(1), e) for e in _NEXT_LINE.split(inner) if (m := _MEMORY_LINE.match(e))]


def blocks(prompt: str) -> tuple[str, str]:
    """(memory's block, recall's block) of the last message's text."""
    from ctxkeep.daemon.memory.block import OPENING as MEMORY
    from ctxkeep.daemon.retrieval.select import CLOSING
    from ctxkeep.daemon.retrieval.select import OPENING as RECALL
    out = []
    for opening in (MEMORY, RECALL):
        found = prompt.split(opening, 1)
        out.append(opening + found[1].split(CLOSING, 1)[0] + CLOSING if len(found) == 2 else "")
    return out[0], out[1]


def asked(c, standin: OllamaStandin, sid: str, text: str) -> str:
    c.turn(sid, text)
    chat = [ch for ch in standin.chats if ch.body.get("stream", True)][-1]
    return chat.body["messages"][-1]["content"]


def run(window: int, questions: list[recall_lme.Question], config: str, embedded: bool = False,
        dump: str = "") -> None:
    """`embedded`: each question waits until every passage has its vector (the built-in
    embedder's, or the server's), as it would some minutes after the imports. `dump`: a
    folder for each question's memory block, its evidence sessions named first."""
    standin = OllamaStandin().start()
    root = Path(tempfile.mkdtemp(prefix="ckprec", dir="/tmp"))
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    daemon.write_config(config)
    added, evidence_tokens, unrelated, rows = [], [], [], recall_lme.new_rows()
    try:
        daemon.start()
        with daemon.client(timeout=120) as c:
            c.subscribe("")
            for n_q, q in enumerate(questions):
                made = [c.import_session(name=f"{q.qid}-{n}", model=MODEL, num_ctx=window, messages=[
                    {"role": t.role, "content": t.content, "created": t.created} for t in q.turns if t.session == n
                ]).session.id for n in sorted({t.session for t in q.turns})]
                asker = c.create_session(model=MODEL, num_ctx=window).session.id
                asked(c, standin, asker, "Hello!")  # memory catches up with the imports
                recall_lme.wait_remembered(c)
                if embedded:
                    recall_lme.wait_embedded(c, standin)
                last = asked(c, standin, asker, q.text)
                memory, recall = blocks(last)
                recall_lme.tally(rows, q, [("ctxkeepd", last)])
                ours = sum(standin.count(text) for name, text in entries(memory)
                           if int(name.rsplit("-", 1)[1]) in q.evidence_sessions)
                added.append(standin.count(memory) + standin.count(recall))
                if dump:
                    Path(dump).mkdir(parents=True, exist_ok=True)
                    (Path(dump) / f"{window}-{q.qid}.txt").write_text(
                        f"{q.text}\nevidence sessions: {sorted(q.evidence_sessions)}\n\n{memory}\n{recall}\n")
                evidence_tokens.append(ours)
                def unasked(sid: str, text: str) -> None:  # a request no session is about
                    got = blocks(asked(c, standin, sid, text))
                    unrelated.append(sum(map(standin.count, got)))
                    if dump and unrelated[-1]:
                        with (Path(dump) / f"{window}-unrelated.txt").open("a") as f:
                            f.write(f"\n### {text}\n{got[0]}\n{got[1]}\n")
                for text in FOLLOW_UPS[n_q % len(FOLLOW_UPS):][:1]:
                    unasked(asker, text)
                for text in UNRELATED[n_q % len(UNRELATED):][:3]:
                    fresh = c.create_session(model=MODEL, num_ctx=window).session.id
                    unasked(fresh, text)
                    c.delete(fresh)
                for sid in [*made, asker]:
                    c.delete(sid)
                standin.chats.clear()
                emit(bench="memory_precision", question=q.qid, kind=q.kind, added=added[-1], from_evidence=ours,
                     progress=f"{n_q + 1}/{len(questions)}")
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="memory_precision", window=window, questions=len(questions),
         related_added_tokens_mean=round(statistics.fmean(added)) if added else 0,
         related_evidence_share_pct=round(100 * sum(evidence_tokens) / max(1, sum(added)), 1),
         unrelated_asked=len(unrelated), unrelated_nothing_added_pct=round(
             100 * sum(1 for u in unrelated if u == 0) / max(1, len(unrelated)), 1),
         unrelated_added_tokens_mean=round(statistics.fmean(unrelated)) if unrelated else 0,
         unrelated_added_tokens_max=max(unrelated, default=0))
    recall_lme.emit_rows(emit, rows, bench="memory_precision", window=window)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=4096)
    parser.add_argument("--per-kind", type=int, default=2, help="questions of each type (0: all)")
    parser.add_argument("--config", action="append", default=[], metavar="LINE",
                        help="a config.toml line for the daemon (repeatable)")
    parser.add_argument("--embed", choices=["none", "builtin"], default="none",
                        help="by words alone, or with the built-in embedder (multilingual-e5-small; each "
                             "question waits until its sessions are embedded: about a minute each)")
    parser.add_argument("--dump", default="", metavar="DIR",
                        help="write each question's memory and recall blocks there, to read what was added")
    args = parser.parse_args()
    from recall import pick
    questions = [undated(q) for q in pick("s", 0, args.per_kind, "")]
    embed = 'embed_model = ""\n' + ("embed_builtin = true\n" if args.embed == "builtin" else "")
    run(args.window, questions, embed + "".join(f"{line}\n" for line in args.config), args.embed == "builtin", args.dump)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    main()
