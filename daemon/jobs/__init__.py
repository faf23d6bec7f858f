"""The per-session job queue: one job at a time per session, one terminal event each."""
