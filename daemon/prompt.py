"""The message lists sent to the model: chat turns and summarization calls."""

from .records import MessageRecord, SessionRecord

Message = dict[str, str]


def normalize(messages: list[Message]) -> list[Message]:
    """A list every chat template accepts: system messages first (merged into one),
    then no two consecutive messages of the same role (merged, blank line between)."""
    system = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    out: list[Message] = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    for m in messages:
        if m["role"] == "system":
            continue
        if out and out[-1]["role"] == m["role"] and out[-1]["role"] != "system":
            out[-1] = {"role": m["role"], "content": f"{out[-1]['content']}\n\n{m['content']}"}
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def context_messages(session: SessionRecord, active: list[MessageRecord]) -> list[Message]:
    """The system prompt and the active context, as the model will see them."""
    messages = [{"role": "system", "content": session.system}] if session.system else []
    messages += [{"role": m.role, "content": m.prompt_content()} for m in active]
    return normalize(messages)


def build_messages(session: SessionRecord, active: list[MessageRecord],
                   user: MessageRecord) -> list[Message]:
    """A turn's prompt: system prompt, active context, then the new user message."""
    messages = [{"role": "system", "content": session.system}] if session.system else []
    messages += [{"role": m.role, "content": m.prompt_content()} for m in active]
    messages.append({"role": "user", "content": user.prompt_content()})
    return normalize(messages)


#: Seed 000's summarizer instructions.
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
    return f"{who}: {text}" + (f" [attached: {attached}]" if attached else "") + "\n\n"


def summary_call(system: str, instructions: str, body: str, header: str) -> list[Message]:
    """A one-shot summarization request: instructions, then the text to summarize."""
    if instructions:
        system = f"{system}\n\nAlso: {instructions}"
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"{header}\n\n{body}".rstrip()}]
