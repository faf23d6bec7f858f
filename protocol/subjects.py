"""Event subjects and topics.

An event crosses the PUB socket as two frames: the topic
`<subject>/<session_id>` (or `<subject>` alone for daemon-wide events), then
the JSON body. Subscribe by prefix: `compaction.` for one subject family
across all sessions, `generation.token/<id>` for one session's tokens, or the
empty string for everything.
"""

DAEMON_STATUS = "daemon.status"
SESSION_CREATED = "session.created"
SESSION_UPDATED = "session.updated"
SESSION_DELETED = "session.deleted"
QUERY_RECEIVED = "query.received"
GENERATION_TOKEN = "generation.token"
GENERATION_THINKING = "generation.thinking"
GENERATION_WAITING = "generation.waiting"
GENERATION_RECALLED = "generation.recalled"
RESPONSE_GENERATION = "response.generation"
GENERATION_ERROR = "generation.error"
CONTEXT_USAGE = "context.usage"
COMPACTION_REQUEST = "compaction.request"
COMPACTION_PROGRESS = "compaction.progress"
COMPACTION_RESULT = "compaction.result"
SNAPSHOT_CREATED = "snapshot.created"
SNAPSHOT_RESTORED = "snapshot.restored"
GOAL_UPDATED = "goal.updated"
CONTEXT_WARNING = "context.warning"
MODEL_PULL_PROGRESS = "model.pull.progress"
MODEL_PULL_RESULT = "model.pull.result"


def topic(subject: str, session_id: str = "") -> str:
    """The topic frame for an event: `<subject>/<session_id>`, or `<subject>`."""
    return f"{subject}/{session_id}" if session_id else subject


def split_topic(value: str) -> tuple[str, str]:
    """Inverse of :func:`topic`: (subject, session_id or "")."""
    subject, _, session_id = value.partition("/")
    return subject, session_id
