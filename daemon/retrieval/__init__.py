"""What recall (a session's own history) and memory (the user's other sessions) both rank
with: passages of stored messages (passages.py, without ctxkeepd's own words: own_words.py),
word stems and a question's terms (lexical.py), BM25 over them (bm25.py), embeddings and
their encoders (semantic.py, encoders.py, query_vectors.py), time words (when.py), and what
fits a block (select.py)."""
