"""Transports: each translates its wire to handler calls and the engine's events to its wire."""
