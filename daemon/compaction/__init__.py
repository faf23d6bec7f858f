"""Compaction, manual and automatic, in one place: the planner decides (pure), the
summarizer writes summaries within the compaction model's window, the applier commits
a change (with the snapshot before it and the audit record) and tells clients; manual.py
runs a client's request, automatic.py the graduated levels (checkpoints.py: level 3)."""
