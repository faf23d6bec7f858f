"""What compaction asks its summarizing model: the instructions of each kind of summary
(a manual compaction's, a checkpoint's, the user's share, an aging, a merge), a message as a
line of the transcript it is given, and the calls that carry them."""

from ctxkeep.daemon.context.prompt import Message
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.protocol.tools import calls_text

#: The summarizer's instructions of a manual compaction.
COMPACTION_SYSTEM = (
    "You are a conversation summarizer. "
    "Produce a concise factual summary of the conversation below. "
    "Capture: the user's goals, key facts established, decisions made, "
    "open questions, and any user preferences or constraints stated. "
    "Be terse. Omit pleasantries and filler. "
    "Output only the summary — no preamble, no 'Here is a summary:'."
)
MERGE_SYSTEM = (
    "You merge summaries of consecutive parts of one conversation into a single "
    "concise factual summary. Keep every goal, fact, decision, open question and "
    "stated preference; drop repetition. Output only the merged summary."
)
SUMMARY_PREFIX = "[SUMMARY] "


def transcript_line(message: MessageRecord) -> str:
    """One message as a line of the transcript given to the summarizer."""
    who = "Earlier summary" if message.kind == "summary" else message.role.capitalize()
    text = message.content.removeprefix(SUMMARY_PREFIX) if message.kind == "summary" else message.content
    attached = ", ".join(f"{f.path} ({f.mode})" for f in message.files if not f.error)
    called = f" [called: {calls_text(message.tool_calls)}]" if message.tool_calls else ""
    return f"{who}: {text}" + (f" [attached: {attached}]" if attached else "") + called + "\n\n"


def summary_call(system: str, instructions: str, body: str, header: str) -> list[Message]:
    """A one-shot summarization request: instructions, then the text to summarize."""
    if instructions:
        system = f"{system}\n\nAlso: {instructions}"
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"{header}\n\n{body}".rstrip()}]


def continuation(system: str, instructions: str, body: str, header: str) -> str:
    """The request of a summary asked after the opening of the prompt the model's server read
    last (so read from its cache): what to summarize, then how."""
    parts = [f"{header}\n\n{body}".rstrip(), system] + ([f"Also: {instructions}"] if instructions else [])
    return "\n\n".join(parts)


CHECKPOINT_SYSTEM = (
    "You compress the older part of a conversation into a checkpoint that replaces it. "
    "Keep decisions, facts established, code changes, file names, open questions and next "
    "steps; drop pleasantries and repetition. Output only the checkpoint text."
)
USER_SUMMARY_SYSTEM = (
    "You summarize the user's own earlier messages in a conversation, because they no longer "
    "fit word for word. Keep every request, fact, constraint, preference, decision, file name "
    "and question the user stated, in the user's terms. Output only the summary."
)
CHECKPOINT_WITH_USER_SYSTEM = (
    "You compress the older part of a conversation, the user's own earlier messages among it, "
    "into a checkpoint that replaces it. Keep every request, fact, constraint, preference, "
    "decision, file name and question the user stated, in the user's terms, and the answers' "
    "decisions, facts established, code changes, open questions and next steps; drop "
    "pleasantries and repetition. Output only the checkpoint text."
)
AGE_SYSTEM = (
    "You shorten a summary of an older part of a conversation. Keep only what matters for "
    "continuing the work: decisions, facts, file names, open questions. Output only the "
    "shortened summary."
)
