"""A session's goal record: the goal, its checkpoints, locked decisions, artifacts and
next steps, as the daemon sends it and as a client sets it."""

from typing import Literal

import msgspec


class GoalCheckpoint(msgspec.Struct, kw_only=True):
    """A step toward the goal (`[CHECKPOINT] text - COMPLETED`)."""

    description: str
    status: Literal["pending", "in-progress", "completed"] = "pending"


class Decision(msgspec.Struct, kw_only=True):
    """A decision (`[DECISION] text - LOCKED`); locked ones are never compressed."""

    description: str
    locked: bool = False


class Goals(msgspec.Struct, kw_only=True):
    """A session's goal record, updated from markers in the model's answers,
    kept verbatim at the top of every prompt and handed to every summarizer."""

    goal: str = ""
    checkpoints: list[GoalCheckpoint] = []
    decisions: list[Decision] = []
    artifacts: list[str] = []
    next_steps: list[str] = []
    updated: float = 0.0


class GoalCheckpointInput(GoalCheckpoint, forbid_unknown_fields=True):
    """A goal checkpoint as a client sends it: an unknown field is an error (a typo)."""


class DecisionInput(Decision, forbid_unknown_fields=True):
    """A decision as a client sends it: an unknown field is an error (a typo)."""


class GoalsInput(Goals, forbid_unknown_fields=True):
    """The goal record as a client sends it (`goals.set`): unknown fields, here and in its
    checkpoints and decisions, are refused, so a typo never passes silently. (What the
    daemon sends back is a `Goals`, which a client reads leniently.)"""

    # the stricter item types of the input (lists are invariant, but a GoalsInput is read
    # only as the Goals it is)
    checkpoints: list[GoalCheckpointInput] = []  # type: ignore[assignment]
    decisions: list[DecisionInput] = []  # type: ignore[assignment]
