"""Work that takes time: the per-session job queue and generations."""
