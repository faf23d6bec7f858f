"""A stateful property test: random interleavings of what clients do, against the real
daemon and the stand-in, with the lifecycle invariants checked after every step.

After every step: no job has two terminal events; no session's history shrinks.
At each `settle` (and at the end): every accepted job has exactly one terminal event;
no session is busy; every question has an answer (complete or interrupted); the
active context references only stored messages; the last `context.usage` of each
session says what a fresh `usage` request says.

CI runs a bounded number of examples, each restarting the daemon at most once (a start is
most of an example's CPU); bench/soak_states.py runs many more, and longer, with no bound
on restarts (CTXKEEP_STATE_EXAMPLES, CTXKEEP_STATE_STEPS, CTXKEEP_STATE_RESTARTS).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ctxkeep.clients import Client, CtxkeepError
from ctxkeep.protocol.events import (
    CompactionResult,
    ContextUsage,
    DaemonStatusEvent,
    Event,
    GenerationError,
    ResponseGeneration,
    SessionUpdated,
)
from ctxkeep.protocol.goals import Goals
from harness import DaemonProcess
from ollama_standin import OllamaStandin

EXAMPLES = int(os.environ.get("CTXKEEP_STATE_EXAMPLES", "10"))
STEPS = int(os.environ.get("CTXKEEP_STATE_STEPS", "14"))
RESTARTS = int(os.environ.get("CTXKEEP_STATE_RESTARTS", "1"))
MODEL = "qwen2.5:7b"
TEXTS = st.sampled_from([
    "hello", "explain the plan in detail " * 8, "def f(x):\n    return [x, {'k': x}]\n" * 4,
    "Größenordnung und Übersicht der Änderungen " * 5, '{"a": [1, 2, 3], "b": {"c": null}}' * 6,
])
#: Errors a request may answer in a random interleaving: not a violation.
EXPECTED = {"busy", "invalid_argument", "unknown_session"}


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="cksm"))
        self.standin = OllamaStandin(chunk_delay=0.002).start()
        self.standin.reply_fn = lambda msgs: "answer " + "word " * 40
        self.daemon = DaemonProcess(self.root, self.standin.url)
        self.daemon.write_config("drain_timeout = 0.3\n")
        self.daemon.start()
        self.client = self._connect()
        self.events: list[Event] = []
        self.accepted: dict[str, str] = {}  # job id -> session id
        self.counts: dict[str, int] = {}
        self.sessions: list[str] = []
        self.restarts = 0

    def _connect(self) -> Client:
        client = self.daemon.client(timeout=10)
        client.subscribe("")
        return client

    def pump(self, timeout: float = 0.0) -> None:
        while (item := self.client.next_event(timeout=timeout)) is not None:
            self.events.append(item[1])
            timeout = 0.0

    def terminals(self) -> dict[str, int]:
        seen: dict[str, int] = {}
        for e in self.events:
            key = getattr(e, "generation_id", None) if isinstance(e, (ResponseGeneration, GenerationError)) \
                else getattr(e, "compaction_id", None) if isinstance(e, CompactionResult) else None
            if key in self.accepted:
                seen[key] = seen.get(key, 0) + 1
        return seen

    def call(self, fn):
        try:
            return fn()
        except CtxkeepError as exc:
            assert exc.code in EXPECTED, f"{exc.code}: {exc.message}"
            return None

    @initialize()
    def create_sessions(self) -> None:
        for num_ctx in (1024, 4096):
            self.sessions.append(self.client.create_session(model=MODEL, num_ctx=num_ctx).session.id)

    # -- what clients do ------------------------------------------------------------------

    @rule(i=st.integers(0, 1), text=TEXTS)
    def send(self, i: int, text: str) -> None:
        acc = self.call(lambda: self.client.send(self.sessions[i], text))
        if acc is not None:
            self.accepted[acc.generation_id] = self.sessions[i]

    @rule(i=st.integers(0, 1))
    def regenerate(self, i: int) -> None:
        acc = self.call(lambda: self.client.regenerate(self.sessions[i]))
        if acc is not None:
            self.accepted[acc.generation_id] = self.sessions[i]

    @rule(i=st.integers(0, 1), seq=st.integers(0, 8), text=TEXTS)
    def edit(self, i: int, seq: int, text: str) -> None:
        acc = self.call(lambda: self.client.edit(self.sessions[i], seq, text))
        if acc is not None and acc.session_id == self.sessions[i]:  # else asked in a branch
            self.accepted[acc.generation_id] = self.sessions[i]

    @rule(i=st.integers(0, 1), seq=st.integers(0, 12))
    def alternative(self, i: int, seq: int) -> None:
        self.call(lambda: self.client.alternative(self.sessions[i], seq))

    @rule(i=st.integers(0, 1), at=st.integers(0, 8))
    def branch(self, i: int, at: int) -> None:
        made = self.call(lambda: self.client.branch(self.sessions[i], at=at))
        if made is not None:  # the branch holds the source's history up to `at`
            assert (made.session.message_count, made.session.branched_from) == (at + 1, self.sessions[i])
            source = self.client.history(self.sessions[i], limit=at + 1).messages
            copied = self.client.history(made.session.id, limit=at + 1).messages
            assert [(m.seq, m.content) for m in copied] == [(m.seq, m.content) for m in source]

    @rule(i=st.integers(0, 1))
    def cancel_first(self, i: int) -> None:
        self.call(lambda: self.client.cancel(self.sessions[i]))

    @rule(i=st.integers(0, 1))
    def cancel_last(self, i: int) -> None:
        mine = [j for j, s in self.accepted.items() if s == self.sessions[i]]
        if mine:
            self.call(lambda: self.client.cancel(self.sessions[i], mine[-1]))

    @rule(i=st.integers(0, 1), tail=st.integers(0, 3))
    def compact(self, i: int, tail: int) -> None:
        acc = self.call(lambda: self.client.compact(self.sessions[i], tail_turns=tail))
        if acc is not None:
            self.accepted[acc.compaction_id] = self.sessions[i]

    @rule(i=st.integers(0, 1))
    def undo(self, i: int) -> None:
        self.call(lambda: self.client.restore(self.sessions[i]))

    @rule(i=st.integers(0, 1), text=st.sampled_from(["", "Be brief.", "You are careful. " * 30]))
    def set_system(self, i: int, text: str) -> None:
        self.call(lambda: self.client.set_system(self.sessions[i], text))

    @rule(i=st.integers(0, 1), num_ctx=st.sampled_from([1024, 2048, 4096]),
          thresholds=st.sampled_from([[], [0.05, 0.1, 0.15], [0.5, 0.65, 0.8]]))
    def set_model(self, i: int, num_ctx: int, thresholds: list[float]) -> None:
        self.call(lambda: self.client.set_model(self.sessions[i], num_ctx=num_ctx, thresholds=thresholds))

    @rule(i=st.integers(0, 1), seq=st.integers(0, 6), pinned=st.booleans())
    def pin(self, i: int, seq: int, pinned: bool) -> None:
        self.call(lambda: self.client.pin(self.sessions[i], seq, pinned))

    @rule(i=st.integers(0, 1), goal=st.sampled_from(["", "Ship it", "Write the report " * 5]))
    def goals(self, i: int, goal: str) -> None:
        self.call(lambda: self.client.set_goals(self.sessions[i], Goals(goal=goal, next_steps=["next"])))

    @precondition(lambda self: self.restarts < RESTARTS)
    @rule()
    def restart(self) -> None:
        """SIGTERM: running work gets the drain time, then ends as shutting_down."""
        self.restarts += 1
        self.daemon.stop(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the last events, up to the stopping status
            item = self.client.next_event(timeout=0.2)
            if item is None:
                break
            self.events.append(item[1])
            if isinstance(item[1], DaemonStatusEvent) and item[1].stopping:
                break
        self.client.close()
        self.daemon.start()
        self.client = self._connect()

    @precondition(lambda self: self.accepted)
    @rule()
    def settle(self) -> None:
        self.check_quiescent()

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def at_most_one_terminal_event_per_job(self) -> None:
        self.pump()
        assert all(n == 1 for n in self.terminals().values()), self.terminals()

    @invariant()
    def history_only_grows(self) -> None:
        for sid in self.sessions:
            count = self.client.session(sid).session.message_count
            assert count >= self.counts.get(sid, 0)
            self.counts[sid] = count

    def check_quiescent(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.pump(timeout=0.05)
            if len(self.terminals()) == len(self.accepted) and not any(
                    s.busy for s in self.client.sessions().sessions):
                break
        ends = self.terminals()
        missing = [j for j in self.accepted if j not in ends]
        assert not missing, f"jobs with no terminal event: {missing}"
        assert all(n == 1 for n in ends.values())
        self.pump(timeout=0.1)  # the session.updated / context.usage that follow the last ends
        for sid in self.sessions:
            info = self.client.session(sid).session
            assert not info.busy
            history = self.client.history(sid, limit=1000).messages
            stored = {m.seq for m in history}
            active = self.client.history(sid, active=True, limit=1000).messages
            assert {m.seq for m in active} <= stored
            assert len(active) == len({m.seq for m in active})
            questions = {m.seq for m in history if m.role == "user" and m.kind == "message"}
            answered = {m.reply_to for m in history if m.role == "assistant"}
            assert questions <= answered, f"unanswered questions: {sorted(questions - answered)}"
            usages = [e.usage for e in self.events if isinstance(e, ContextUsage) and e.session_id == sid]
            fresh = self.client.usage(sid).usage
            if usages:
                last = usages[-1]
                assert (last.tokens, last.exact, last.window, last.messages) == \
                    (fresh.tokens, fresh.exact, fresh.window, fresh.messages), (last, fresh)
            busy = [e.session.busy for e in self.events if isinstance(e, SessionUpdated)
                    and e.session_id == sid]
            assert not busy or busy[-1] is False
        assert not self.standin.truncations

    def teardown(self) -> None:
        try:
            if self.accepted:
                self.check_quiescent()
        finally:
            self.client.close()
            self.daemon.stop(signal.SIGKILL)
            self.standin.stop()
            shutil.rmtree(self.root, ignore_errors=True)


Lifecycle.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=not os.environ.get(
        "CTXKEEP_STATE_RANDOM"), suppress_health_check=list(HealthCheck), print_blob=True)
TestLifecycle = pytest.mark.early(Lifecycle.TestCase)
