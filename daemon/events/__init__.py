"""The engine's event bus: events numbered and handed to whoever listens (the transports)."""
