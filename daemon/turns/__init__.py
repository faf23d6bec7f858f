"""A user's turn through the model: prepare (prepare.py), stream and end (generation.py),
complete (complete.py); how it ends otherwise (endings.py)."""
