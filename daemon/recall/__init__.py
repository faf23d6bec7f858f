"""Recall: the turns of a session's whole history that a new message needs, found and put
in the room the window leaves (session_index.py a session's passages ranked, room.py the room
a message that reaches back takes, recaller.py the service a turn asks; what they rank with is
retrieval/'s, shared with memory)."""
