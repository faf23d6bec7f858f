"""A session's history as the chat log shows it, in pages: the newest when the session
opens, or one from just before a message a search found (newer ones then as the reader
scrolls down, never the whole rest of a long chat at once); older ones as the reader
scrolls up, gathered until they reach what is shown and then put above it."""

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...protocol import requests
from ...protocol.replies import HistoryReply
from ...protocol.structs import CompactionMark, MessageInfo, SessionInfo
from .entries import entries_of

if TYPE_CHECKING:
    from .chatlog import ChatLog
    from .message_actions import MessageActions

#: Messages per history page.
PAGE = 40


class HistoryPages:
    """Which seqs the log shows (`first` to `end`), and the pages on their way."""

    def __init__(self, submit: Callable[[requests.Request], None], log: "ChatLog",
                 actions: "MessageActions") -> None:
        self.submit = submit
        self.log = log
        self.actions = actions
        self.session_id = ""
        self.first = self.end = 0  # the seqs shown: [first, end)
        #: A message to show once the history is in: (its seq, words to select in it).
        self.target: tuple[int, str] | None = None
        self.older: list[MessageInfo] = []
        self.older_marks: list[CompactionMark] = []
        #: Whether the first pages of the session opened last are in.
        self.opened = False

    def start(self, session: SessionInfo, at: int = -1, find: str = "") -> None:
        """Ask for the session's last page, or (`at`) a page from just before that message
        (the pages after it come as the reader scrolls down)."""
        self.session_id = session.id
        self.opened = False
        self.target = (at, find) if at >= 0 else None
        self.first = self.end = max(0, session.message_count - PAGE) if at < 0 else max(0, at - 2)
        self.older, self.older_marks = [], []  # an older page of another session in flight
        self.submit(requests.History(session=session.id, start=self.first, limit=PAGE))

    @property
    def newest(self) -> bool:
        """Whether the log reaches the session's newest message (live events go there)."""
        return not self.log.has_newer

    def on_page(self, request: requests.History, reply: HistoryReply) -> bool:
        """Show a page; True when it completed the first pages (the log is then ready)."""
        if request.start >= self.end:  # the newest pages, or the window around a match
            for entry in entries_of(reply.messages, reply.compactions, self.actions.pinned):
                self.log.add_entry(entry, follow=not self.opened)  # a newer page: the reader stays
            self.end = reply.next if reply.next is not None else request.start + len(reply.messages)
            more = reply.next is not None and reply.next < reply.total
            opening, around_match = not self.opened, self.target is not None
            if more and opening and not around_match:  # a page cut short: on to the end
                self.submit(requests.History(session=reply.session_id, start=self.end, limit=PAGE))  # = reply.next
                return False
            self.log.has_newer, self.log.loading_newer = more, False
            if not more:
                self.end = max(self.end, reply.total)
            if not opening:
                return False
            self.opened = True
            self.log.has_older = self.first > 0
            if self.target is not None:
                self.log.show_message(*self.target)
                self.target = None
            else:
                self.log.scroll_to_bottom()
            return True
        self.older += reply.messages
        self.older_marks += reply.compactions
        if reply.next is not None and reply.next < self.first:
            self.submit(requests.History(session=reply.session_id, start=reply.next,
                                         limit=self.first - reply.next))
            return False
        self.first = self.older[0].seq if self.older else request.start
        self.log.prepend(entries_of(self.older, self.older_marks, self.actions.pinned),
                         has_older=self.first > 0)
        self.older, self.older_marks = [], []
        return False

    def load_newer(self) -> None:
        if not self.session_id or not self.log.has_newer:
            self.log.loading_newer = False
            return
        self.submit(requests.History(session=self.session_id, start=self.end, limit=PAGE))

    def load_older(self) -> None:
        if not self.session_id or self.first <= 0:
            self.log.loading_older = False
            return
        start = max(0, self.first - PAGE)
        self.submit(requests.History(session=self.session_id, start=start, limit=self.first - start))

    def failed(self) -> None:
        """A page did not come: the reader may scroll again."""
        self.log.loading_older = self.log.loading_newer = False
