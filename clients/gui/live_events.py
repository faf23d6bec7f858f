"""What the open session's live events do to its view: each question and its recall line in
order, an answer streamed then stored in its place, compactions and usage on the gauge."""

from collections.abc import Callable

from ...protocol.events import (
    CompactionRequest,
    CompactionResult,
    ContextUsage,
    ContextWarning,
    GenerationError,
    GenerationRecalled,
    GenerationToken,
    QueryReceived,
    ResponseGeneration,
)
from .chatlog import ChatLog
from .entries import Entry, entries_of, recall_entry, recalled_details
from .gauge import ContextGauge
from .history_pages import HistoryPages
from .message_actions import MessageActions
from .words import compaction_outcome, stopped


class LiveEvents:
    """Applies one session's events to its log and gauge; `busy` shows or hides Stop,
    `usage_changed` rewrites the token count, `model` names who answers."""

    def __init__(self, log: ChatLog, pages: HistoryPages, actions: MessageActions, gauge: ContextGauge,
                 status: Callable[[str], None], busy: Callable[[bool], None],
                 usage_changed: Callable[[], None], model: Callable[[], str]) -> None:
        self.log, self.pages, self.actions, self.gauge = log, pages, actions, gauge
        self.status, self.busy, self.usage_changed, self.model = status, busy, usage_changed, model
        #: Generations whose question is shown, recall lines waiting for theirs, and the
        #: answers being written.
        self.received: set[str] = set()
        self.recalls: dict[str, Entry] = {}
        self.streaming: set[str] = set()

    def reset(self) -> None:
        """Another session is opened: nothing of the last one is waited for."""
        self.received, self.recalls, self.streaming = set(), {}, set()

    def on_event(self, event: object) -> None:
        if not self.pages.newest and isinstance(event, (QueryReceived, GenerationRecalled, GenerationToken)):
            return  # reading around an older message: the new ones come when scrolled to
        if isinstance(event, QueryReceived):
            self._question(event)
        elif isinstance(event, GenerationRecalled):
            self._recalled(event)
        elif isinstance(event, GenerationToken):
            self.streaming.add(event.generation_id)
            self.busy(True)
            self.log.stream(event.generation_id, event.text, self.model())
        elif isinstance(event, (ResponseGeneration, GenerationError)):
            self._answer_ended(event)
        elif isinstance(event, (CompactionRequest, CompactionResult)):
            self._compaction(event)
        elif isinstance(event, ContextUsage):
            self.gauge.set_window(event.usage.window)
            self.gauge.set_tokens(event.usage.next_tokens or event.usage.tokens, exact=event.usage.exact)
            self.usage_changed()
        elif isinstance(event, ContextWarning):
            self.status(event.message)

    def _question(self, event: QueryReceived) -> None:
        if event.message.seq >= self.pages.end:
            self.log.add_entry(entries_of([event.message], [])[0])
            self.pages.end = event.message.seq + 1
        self.received.add(event.generation_id)
        if event.generation_id in self.recalls:  # told before the question was stored
            self.log.add_entry(self.recalls.pop(event.generation_id))

    def _recalled(self, event: GenerationRecalled) -> None:
        """The recall line goes under its question (held until the question is shown)."""
        line = recall_entry(len({p.seq for p in event.recalled if not p.session_id}),
                            recalled_details(event.recalled),
                            len({(p.session_id, p.seq) for p in event.recalled if p.session_id}), event.recalled,
                            event.cut)
        if event.generation_id in self.received:
            self.log.add_entry(line)
        else:
            self.recalls[event.generation_id] = line

    def _compaction(self, event: CompactionRequest | CompactionResult) -> None:
        if isinstance(event, CompactionRequest):
            self.gauge.set_compacting(True)
            self.busy(True)  # a compaction can be stopped too
            self.status(f"Compacting {event.messages} messages…")
            return
        self.gauge.set_compacting(False)
        self.busy(bool(self.streaming))
        if event.status == "ok":
            self.log.add_entry(Entry("marker", event.marker))
            self.gauge.set_tokens(event.tokens_after, exact=False)
            self.usage_changed()
            self.status("Compacted")
        else:
            self.status(compaction_outcome(event.status, event.reason))

    def _answer_ended(self, event: ResponseGeneration | GenerationError) -> None:
        """An answer is stored whole, or stopped: in its place in the log, with its actions."""
        self.streaming.discard(event.generation_id)
        self.busy(bool(self.streaming))
        if not self.pages.newest:  # reading around an older message: only the numbers change
            if isinstance(event, ResponseGeneration):
                self.gauge.set_tokens(event.next_tokens or event.token_count, exact=event.token_count_exact)
            return
        if isinstance(event, ResponseGeneration):
            self._answered(event)
            return
        if 0 <= event.stored_seq < self.pages.end:  # the page shown already has it
            self.log.drop_stream(event.generation_id)
        else:
            self.log.end_stream(event.generation_id, event.partial,
                                note=stopped(event.code, event.message), who=self.model(), seq=event.stored_seq)
            self.pages.end = max(self.pages.end, event.stored_seq + 1)
        if event.code != "cancelled":
            self.status(f"The answer stopped: {stopped(event.code, event.message)}")

    def _answered(self, event: ResponseGeneration) -> None:
        m = event.message
        if m.seq >= self.pages.end and self.actions.answered(event.generation_id, m):
            self.pages.end = m.seq + 1
        elif m.seq >= self.pages.end:
            self.log.end_stream(event.generation_id, m.content, who=m.model, seq=m.seq,
                                reply_to=m.reply_to, created=m.created)
            self.pages.end = m.seq + 1
        else:  # the page shown already has it
            self.log.drop_stream(event.generation_id)
        self.gauge.set_window(event.window)
        self.gauge.set_tokens(event.next_tokens or event.token_count, exact=event.token_count_exact)
        self.usage_changed()
