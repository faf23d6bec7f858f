"""ctxkeepd's own words are never recalled: the blocks it adds to prompts (recall's and
memory's, their lines), and the instructions of its summary calls, are taken out of a
message's text before it is indexed — in the user's messages and in answers that repeat
them (a small model often echoes the block it was given), so that no later turn recalls the
echo and the junk does not grow with each one."""

import re

#: A recall or memory block (`<recalled from …>` … `</recalled>`; one cut short: to the end).
_BLOCK = re.compile(r"<recalled from [^>\n]*>.*?(?:</recalled>|\Z)", re.S)
#: One line of such a block, wherever it stands: `[2026-11-23 17:23] user: …`, memory's
#: `[…] in "name" assistant (part 2 of 3): …`.
_LINE = re.compile(r'^[ \t]*\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\](?: in (?:"[^"\n]*"|another conversation))? '
                   r"(?:user|assistant)(?: \(part \d+ of \d+\))?: .*$\n?", re.M)
#: The instructions compaction gives its summarizer (compaction/prompts.py; a test keeps the
#: two in step): each opens its paragraph with one of these, and ends it.
_INSTRUCTIONS = re.compile(r"(?:You are a conversation summarizer|You merge summaries|You compress the older part|"
                           r"You summarize the user's own earlier messages|You shorten a summary)[^\n]*?"
                           r"(?:Output only [^.\n]*\.|$)", re.M)


def without_own_words(text: str) -> str:
    """`text` without ctxkeepd's blocks, their lines and its summary instructions."""
    if "[" not in text and "<recalled" not in text and "You " not in text:
        return text  # the common case: nothing to look for
    return _INSTRUCTIONS.sub("", _LINE.sub("", _BLOCK.sub("", text)))
