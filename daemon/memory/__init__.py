"""Memory across sessions (protocol/memory.py says what a user sees of it)."""
