"""Context fidelity: a scripted long conversation against the stand-in's second tokenizer.

    python bench/fidelity.py [--turns 150] [--window 2048] [--tokenizer bpe]

A session in a small window talks for many turns of 100-300-word messages of
every kind (prose, Python, JSON, German), with a goal and a locked decision
from the model's markers, a pinned message and @file references. The
stand-in counts with a tokenizer the estimator was not designed around, and
cuts any prompt that leaves less than `num_predict` for the answer. Then
every compaction pass is undone, newest first, and compared with the state
recorded before it; then single messages of each kind measure the calibrated
estimate's error by kind.

Prints JSON lines: `fidelity` (truncated requests, refused sends, max usage
after compaction, share of user messages that reached the model verbatim
until a shown summary, passes and level counts), `undo` (passes undone
exactly), and `estimate` per content kind (median and p95 relative error).
Goals: 0 truncated; 100 % verbatim; every level fires; undo exact for every
pass; estimate p95 <= 5 % on every kind.
"""

import argparse
import random
import shutil
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from common import emit

from ctxkeep.protocol.events import (
    CompactionResult,
    ContextWarning,
    GenerationError,
    ResponseGeneration,
)
from harness import DaemonProcess
from ollama_standin import OllamaStandin

MODEL = "small:1b"
WORDS = ("context window model token budget summary checkpoint parser grammar request answer "
         "session daemon history compaction estimate decision goal refactor module").split()
GERMAN = ("Größe Übersicht Änderung Straße Lösung Prüfung Qualität Schlüssel Gebäude Fähigkeit "
          "Entscheidung Zusammenfassung Verlauf Fenster").split()
GOAL = ("Let us begin.\n[GOAL] Keep a long design conversation coherent\n"
        "[DECISION] Use LMDB for storage - LOCKED\n[NEXT] Sketch the modules")


def text_of(kind: str, rng: random.Random, words: int) -> str:
    """A message of one content kind, about as many tokens as `words` words of prose."""
    if kind == "prose":
        return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."
    if kind == "german":  # a word of this vocabulary is ~4 tokens: about as many as prose
        return " ".join(rng.choice(GERMAN) for _ in range(words // 3)) + "."
    if kind == "python":
        lines = [f"def step_{i}(value, limit={i}):\n    if value > limit:\n        return value - {i}\n"
                 f"    return [value, {{'k': {i}}}]\n" for i in range(max(1, words // 25))]
        return "Here is the code:\n" + "\n".join(lines)
    items = [f'{{"id": {i}, "name": "{rng.choice(WORDS)}", "tags": ["{rng.choice(WORDS)}"], '
             f'"score": {rng.random():.3f}}}' for i in range(max(1, words // 14))]
    return "The data: [" + ", ".join(items) + "]"


KINDS = ("prose", "python", "json", "german")


@dataclass
class PassRecord:
    """The active context just before a compaction pass, and the history length then."""

    before: list[int]
    next_seq: int


@dataclass
class Report:
    truncated: int = 0
    refused: int = 0
    turns: int = 0
    max_usage_after: float = 0.0
    levels: Counter = field(default_factory=Counter)
    passes: list[PassRecord] = field(default_factory=list)
    user_total: int = 0
    user_lost: list[int] = field(default_factory=list)
    user_summarized: int = 0
    errors_by_kind: dict[str, list[float]] = field(default_factory=dict)


def converse(daemon: DaemonProcess, standin: OllamaStandin, workdir: Path, turns: int,
             window: int, seed: int) -> tuple[Report, str]:
    rng = random.Random(seed)
    report = Report()
    with daemon.client(timeout=30) as c:
        c.subscribe("")
        s = c.create_session(model=MODEL, num_ctx=window, system="You are a careful engineer.").session
        standin.script(GOAL)
        in_prompt: dict[str, int] = {}  # user text -> seq, while it is in the prompts verbatim
        for i in range(turns):
            kind = KINDS[i % len(KINDS)]
            text = text_of(kind, rng, rng.randint(100, 300) // (3 if i == 0 else 1))
            if i % 15 == 7:
                text += "\nSee @module.py:full"
            active_before = [m.seq for m in c.history(s.id, active=True, limit=1000).messages]
            acc = c.send(s.id, text, cwd=str(workdir))
            last_after = None
            history_len = c.history(s.id, limit=1, start=10**9).total  # the question is stored

            def seen(event) -> None:
                nonlocal last_after
                if isinstance(event, CompactionResult) and event.status == "ok":
                    report.levels[event.level] += 1
                    last_after = event.tokens_after
                elif isinstance(event, ContextWarning) and event.kind == "user_summary":
                    report.user_summarized += 1
            end = c.follow(acc.generation_id, seen, session=s.id, timeout=60)
            result = end if isinstance(end, ResponseGeneration) else None
            if isinstance(end, GenerationError):
                report.refused += end.code == "context_overflow"
                if end.code == "context_overflow" and report.refused <= 3:
                    print("refused:", i, end.message, flush=True)
            c.settle(s.id, seen, timeout=60)
            report.turns += 1
            if last_after is not None:  # once the turn's compactions are all done
                report.max_usage_after = max(report.max_usage_after, last_after / window)
            _record_passes(c, s.id, report, active_before, result, history_len)
            if i == 3:
                c.pin(s.id, 1)
            if result is None:
                continue
            report.user_total += 1
            in_prompt[text] = result.message.reply_to
            sent = [ch.body for ch in standin.chats if ch.body.get("stream", True)][-1]["messages"]
            system = sent[0]["content"] if sent[0]["role"] == "system" else ""
            for earlier, seq in list(in_prompt.items()):
                if any(m["role"] == "user" and earlier in m["content"] for m in sent):
                    continue
                del in_prompt[earlier]
                if "a summary of the user's own messages" not in system:
                    report.user_lost.append(seq)
            report.errors_by_kind.setdefault("conversation", []).append(
                abs(result.prompt_estimate - result.token_count) / result.token_count)
        report.truncated = len(standin.truncations)
    return report, s.id


_pass_ids: set[str] = set()


def _record_passes(c, sid: str, report: Report, active_before: list[int], result, history_len: int) -> None:
    """The passes of this turn, from the snapshots it created: each with the active context
    just before it (before the turn's prompt, or after its answer)."""
    snapshots = [x for x in c.snapshots(sid).snapshots if x.reason.startswith("before compaction")]
    new = [x for x in snapshots if x.id not in _pass_ids and not x.undone]  # rolled back: no pass
    for snap in sorted(new, key=lambda x: x.created):
        _pass_ids.add(snap.id)
        if "would not fit" in snap.reason or result is None:
            report.passes.append(PassRecord(active_before, history_len))
        else:
            answered = [*active_before, result.message.reply_to, result.message.seq]
            report.passes.append(PassRecord(answered, result.message.seq + 1))


def undo_all(daemon: DaemonProcess, sid: str, report: Report) -> tuple[int, int]:
    """Undo every pass whose snapshot is still kept (`snapshots_kept`, 50 by default),
    newest first; (exact, undone)."""
    exact = 0
    with daemon.client(timeout=30) as c:
        kept = [x for x in c.snapshots(sid).snapshots
                if x.reason.startswith("before compaction") and not x.undone]
        undoable = report.passes[len(report.passes) - len(kept):]
        for record in reversed(undoable):
            current = c.history(sid, active=True, limit=1000).messages
            c.restore(sid)
            now = [m.seq for m in c.history(sid, active=True, limit=1000).messages]
            # the turns that joined since stay; what passes wrote (summaries) does not
            later = [m.seq for m in current if m.seq not in record.before and m.kind == "message"]
            exact += now == [*record.before, *later]
    return exact, len(undoable)


def estimate_by_kind(daemon: DaemonProcess, rng: random.Random, per_kind: int) -> dict[str, list[float]]:
    """Single messages of each kind in fresh sessions of the calibrated model."""
    out: dict[str, list[float]] = {}
    with daemon.client(timeout=30) as c:
        c.subscribe("")
        for kind in KINDS:
            for _ in range(per_kind):
                s = c.create_session(model=MODEL, num_ctx=8192).session
                e = c.follow(c.send(s.id, text_of(kind, rng, rng.randint(100, 300))).generation_id, timeout=30)
                if isinstance(e, ResponseGeneration):
                    out.setdefault(kind, []).append(abs(e.prompt_estimate - e.token_count) / e.token_count)
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--window", type=int, default=2048)
    parser.add_argument("--tokenizer", default="bpe", choices=("bpe", "simple"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ckf", dir="/tmp"))
    (root / "module.py").write_text("\n".join(
        f"def handler_{i}(request, session):\n    \"\"\"Handle request {i}.\"\"\"\n"
        f"    return session.reply(request, code={i})\n" for i in range(12)))
    rng = random.Random(args.seed)
    standin = OllamaStandin(tokenizer=args.tokenizer)

    def reply(messages):
        last = messages[-1]["content"]
        if last.startswith(("Conversation to summarize", "Summary to shorten", "Summaries of")):
            return "Summary: " + " ".join(rng.choice(WORDS) for _ in range(max(8, len(last.split()) // 8)))
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 160))) + "."
    standin.reply_fn = reply
    standin.start()
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    try:
        daemon.start()
        report, sid = converse(daemon, standin, root, args.turns, args.window, args.seed)
        exact, passes = undo_all(daemon, sid, report)
        kinds = estimate_by_kind(daemon, rng, 8)
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    verbatim = 1 - len(report.user_lost) / report.user_total if report.user_total else 1.0
    emit(bench="fidelity", turns=report.turns, window=args.window, tokenizer=args.tokenizer,
         truncated=report.truncated, refused=report.refused,
         max_usage_after_compaction=round(report.max_usage_after, 3),
         user_messages=report.user_total, verbatim_until_shown_summary=round(verbatim, 4),
         user_summaries=report.user_summarized, passes=len(report.passes),
         levels={str(k): v for k, v in sorted(report.levels.items())})
    emit(bench="undo", passes=len(report.passes), undone=passes, exact=exact)
    errors = {"conversation": report.errors_by_kind.get("conversation", [])[5:], **kinds}
    for kind, values in errors.items():
        emit(bench="estimate", kind=kind, n=len(values),
             median=round(statistics.median(values), 4) if values else None, p95=round(p95(values), 4))


if __name__ == "__main__":
    main()
