"""The systemd user units, shipped as package data (`ctxkeep daemon install` writes them)."""
