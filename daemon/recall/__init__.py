"""Recall: the turns of a session's whole history that a new message needs, found and put
in the room the window leaves (passages.py what is recalled, lexical.py and semantic.py
how it is ranked, select.py what fits, recaller.py the service a turn asks)."""
