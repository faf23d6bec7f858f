"""The message list sent to the model for a turn."""

from .records import MessageRecord, SessionRecord


def build_messages(session: SessionRecord, active: list[MessageRecord],
                   user: MessageRecord) -> list[dict[str, str]]:
    """System prompt first, then the active context, then the new user message."""
    messages = [{"role": "system", "content": session.system}] if session.system else []
    messages += [{"role": m.role, "content": m.content} for m in active]
    messages.append({"role": "user", "content": user.content})
    return messages
