"""Goal markers: `[GOAL] [CHECKPOINT] [DECISION] [ARTIFACT] [NEXT]` in the model's answers.

    [GOAL] Implement user authentication
    [CHECKPOINT] Design the login flow - COMPLETED
    [DECISION] Use JWT for authentication - LOCKED
    [ARTIFACT] Created src/auth/login.ts
    [NEXT] Add token refresh

They update the session's goal record, which is put verbatim at the top of
every prompt and given to every summarizer, so it survives compaction.
"""

import re
import time

import msgspec

from ctxkeep.protocol.goals import Decision, GoalCheckpoint, Goals

#: A marker and what follows it: the rest of its line, or where the line holds nothing more,
#: the next line that does (its blanks at the end included). The blanks are taken at once
#: (`*+`), and before the marker never cross a line end: an answer of thousands of blank
#: lines, as a small model may loop on, is read in one pass (with `\s*` each line start tried
#: every split of all that followed: 4,000 newlines took 39 s).
_MARKER = re.compile(r"^[^\S\n]*+[-*]?[^\S\n]*+\[(GOAL|CHECKPOINT|DECISION|ARTIFACT|NEXT)\]\s*+(.+)$", re.M)
#: A status after a dash or colon, from the start of a run of blanks (not every blank of it).
_STATUS = re.compile(r"(?<!\s)\s+[-–—:]\s*(COMPLETED|DONE|IN[ -]PROGRESS|PENDING|LOCKED)\s*$", re.I)


def markers(text: str) -> list[tuple[str, str]]:
    """The (kind, text) of each marker line in `text`, in order."""
    return [(kind, body.rstrip()) for kind, body in _MARKER.findall(text)]


def apply_markers(goals: Goals, text: str) -> Goals | None:
    """The goal record updated by the markers in `text`, or None when it has none."""
    found = markers(text)
    if not found:
        return None
    new = msgspec.structs.replace(goals, checkpoints=list(goals.checkpoints),
                                  decisions=list(goals.decisions), artifacts=list(goals.artifacts),
                                  next_steps=list(goals.next_steps))
    next_steps: list[str] = []
    for kind, body in found:
        status_match = _STATUS.search(body)
        flag = status_match.group(1).upper().replace(" ", "-") if status_match else ""
        description = body[:status_match.start()].strip() if status_match else body.strip()
        if kind == "GOAL":
            new.goal = description
        elif kind == "CHECKPOINT":
            status = {"COMPLETED": "completed", "DONE": "completed", "IN-PROGRESS": "in-progress"}.get(
                flag, "pending")
            existing = next((c for c in new.checkpoints if c.description == description), None)
            if existing:
                existing.status = status  # type: ignore[assignment]
            else:
                new.checkpoints.append(GoalCheckpoint(description=description, status=status))  # type: ignore[arg-type]
        elif kind == "DECISION":
            existing_d = next((d for d in new.decisions if d.description == description), None)
            if existing_d:
                existing_d.locked = existing_d.locked or flag == "LOCKED"
            else:
                new.decisions.append(Decision(description=description, locked=flag == "LOCKED"))
        elif kind == "ARTIFACT":
            if description not in new.artifacts:
                new.artifacts.append(description)
        else:
            next_steps.append(description)
    if next_steps:
        new.next_steps = next_steps
    new.updated = time.time()
    return new


def render(goals: Goals) -> str:
    """The goal block for the system prompt ("" when there is no goal record)."""
    if not (goals.goal or goals.checkpoints or goals.decisions or goals.artifacts or goals.next_steps):
        return ""
    mark = {"completed": "[x]", "in-progress": "[~]", "pending": "[ ]"}
    lines = ["ACTIVE GOAL: " + (goals.goal or "(none stated)")]
    if goals.checkpoints:
        lines.append("Checkpoints:")
        lines += [f"  {mark[c.status]} {c.description}" for c in goals.checkpoints]
    if goals.decisions:
        lines.append("Decisions:")
        lines += [f"  {'(locked) ' if d.locked else ''}{d.description}" for d in goals.decisions]
    if goals.artifacts:
        lines.append("Artifacts: " + "; ".join(goals.artifacts))
    if goals.next_steps:
        lines.append("Next: " + "; ".join(goals.next_steps))
    return "\n".join(lines)


def summarizer_context(goals: Goals) -> str:
    """What every summarization prompt is told about the goal (so that a summary keeps the goal, decisions and next steps)."""
    block = render(goals)
    if not block:
        return ""
    return (f"{block}\n\nFocus the summary on progress toward the goal. PRESERVE: decisions, "
            "completed checkpoints, files created or modified, blockers, technical details "
            "relevant to the goal, next steps. SUMMARIZE AGGRESSIVELY: off-topic discussion, "
            "exploration, debugging that succeeded, repetition.")
