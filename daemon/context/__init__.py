"""The context window: estimates, usage, prompt assembly, compaction."""
