"""What the model is shown of a stored message: its text with its expanded @file
references and image notes, or, where level-1 compaction shortened it, its short form."""

from ctxkeep.daemon.context.shorten import shortened
from ctxkeep.daemon.store.records import MessageRecord
from ctxkeep.protocol.tools import ToolResult, results_text


def short_results(m: MessageRecord) -> list[str]:
    """Level 1's short form of each of a `tool` message's results: its outline, or its head
    and tail."""
    outlines = m.result_outlines + [""] * (len(m.tool_results) - len(m.result_outlines))
    return [o or shortened(r.content) for o, r in zip(outlines, m.tool_results)]


def prompt_content(m: MessageRecord, file_summaries: bool = False, images_seen: bool = False) -> str:
    """The text the model sees: the message, then its expanded @file references (as
    summaries, where level-1 compaction made them so), then, unless the model sees its
    images, each one's note ("[image: name]"); a `tool` message's results (head and tail,
    where level-1 compaction shortened them); an answer too long for the window's last
    turns, as its head and tail where compaction shortened it."""
    if m.tool_results and file_summaries:
        return results_text([ToolResult(tool_name=r.tool_name, content=short)
                             for r, short in zip(m.tool_results, short_results(m))])
    if file_summaries and m.role == "assistant" and not m.files:
        return shortened(m.content)
    notes = [] if images_seen else [i.note() for i in m.images]
    if not m.files and not notes:
        return m.content
    blocks = [f.summary if file_summaries and f.summary else f.block for f in m.files]
    return "\n\n".join([m.content, *blocks, *notes])
