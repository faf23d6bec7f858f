"""The errors each request can be answered with, beyond the ones every request can get
(docs/protocol.md lists them under each request)."""

from . import requests

_SESSION_ERRORS = [("unknown_session", "no session has that id, name or id prefix"),
                   ("ambiguous_session", "an id prefix of 4+ characters matches several sessions")]
_STORE = [("storage_error", "the store could not write (disk full?); nothing was changed")]

#: The error codes each request can answer, beyond the frame errors every request can get
#: (`bad_frame`, `frame_too_large`, `bad_json`, `unknown_type`, `invalid_request`,
#: `unsupported_version`, `internal`).
ERRORS: dict[type, list[tuple[str, str]]] = {
    requests.Hello: [], requests.Ping: [], requests.Status: [],
    requests.SessionCreate: [("invalid_argument", "the name is taken"),
                             ("model_not_found", "Ollama does not have the model (the message names "
                                                 "the installed ones); `force` skips the check"), *_STORE],
    requests.SessionList: [],
    requests.SessionGet: _SESSION_ERRORS,
    requests.SessionRename: [*_SESSION_ERRORS, ("invalid_argument", "the name is taken"), *_STORE],
    requests.SessionDelete: [*_SESSION_ERRORS, ("busy", "the session has a job queued or running: "
                                                "cancel it, or wait for its terminal event"), *_STORE],
    requests.History: _SESSION_ERRORS,
    requests.Edit: [*_SESSION_ERRORS, ("busy", "a turn or compaction of the session is queued or "
                                               "running"),
                    ("invalid_argument", "`seq` is not a question of the session, or the text is "
                                         "empty"), ("shutting_down", "the daemon is stopping"), *_STORE],
    requests.Alternative: [*_SESSION_ERRORS, ("busy", "a turn or compaction of the session is queued "
                                                      "or running"),
                           ("invalid_argument", "`seq` is not a whole answer to the last question, "
                                                "or that question's turn failed"), *_STORE],
    requests.Regenerate: [*_SESSION_ERRORS, ("busy", "a turn or compaction of the session is "
                                                     "queued or running"),
                          ("invalid_argument", "no answered question ends the session, or its "
                                               "answer was compacted away"),
                          ("shutting_down", "the daemon is stopping")],
    requests.Send: [*_SESSION_ERRORS, ("invalid_argument", "the text is empty; or `tool_results` come "
                                                           "with text, or the session's last message "
                                                           "is not an answer calling those tools"),
                    ("busy", "`tool_results` while the session's turn is still running"),
                    ("shutting_down", "the daemon is stopping"), *_STORE],
    requests.Cancel: _SESSION_ERRORS,
    requests.SetSystem: [*_SESSION_ERRORS, *_STORE],
    requests.SetTools: [*_SESSION_ERRORS, *_STORE],
    requests.ImageGet: [("invalid_argument", "no image c414cd0e204d… is stored: take the hash from a "
                                             "message's `images` (history)")],
    requests.SetModel: [*_SESSION_ERRORS, ("invalid_argument", "thresholds are not three rising "
                                                               "fractions"),
                        ("model_not_found", "Ollama does not have the model; `force` skips the check"),
                        *_STORE],
    requests.Files: _SESSION_ERRORS,
    requests.Pin: [*_SESSION_ERRORS, ("invalid_argument", "the session has no such message"), *_STORE],
    requests.GoalsGet: _SESSION_ERRORS,
    requests.GoalsSet: [*_SESSION_ERRORS, *_STORE],
    requests.SnapshotCreate: [*_SESSION_ERRORS, *_STORE],
    requests.SnapshotList: _SESSION_ERRORS,
    requests.SnapshotRestore: [*_SESSION_ERRORS, ("busy", "the session has a job queued or running"),
                               ("invalid_argument", "no such snapshot, or (undo) no compaction "
                                                    "left to undo"), *_STORE],
    requests.SnapshotDelete: [*_SESSION_ERRORS, ("invalid_argument", "no such snapshot"), *_STORE],
    requests.Usage: _SESSION_ERRORS,
    requests.Prompt: _SESSION_ERRORS,
    requests.Compact: [*_SESSION_ERRORS, ("busy", "a compaction of the session is already queued "
                                                  "or running (other jobs do not block it: it queues)"),
                       ("shutting_down", "the daemon is stopping"),
                       ("ollama_unreachable, model_not_found, ollama_error",
                        "`dry_run` only: the compaction model's window could not be asked")],
    requests.ModelsList: [("ollama_unreachable, ollama_error", "Ollama could not be asked")],
    requests.Search: _SESSION_ERRORS,
    requests.MemorySearch: _SESSION_ERRORS,
    requests.MemoryForget: [*_SESSION_ERRORS, ("invalid_argument", "the session has no message with that seq"),
                            *_STORE],
    requests.ModelsDefault: [("model_not_found", "Ollama does not have the model; `force` skips "
                                                 "the check"),
                             ("invalid_argument", "config.toml, as it is on disk, does not load "
                                                  "(the message says where); it was not changed"),
                             ("storage_error", "config.toml could not be written")],
    requests.ModelsPull: [("shutting_down", "the daemon is stopping")],
    requests.Branch: [*_SESSION_ERRORS, ("invalid_argument", "the session has no such message, "
                                                             "or the name is taken"),
                      ("busy", "a question at or before `at` is still being answered"), *_STORE],
    requests.SessionImport: [("invalid_argument", "the name is taken"),
                             ("model_not_found", "Ollama does not have the model; `force` skips "
                                                 "the check"),
                             *_SESSION_ERRORS, ("busy", "`session` has a job queued or running"),
                             *_STORE],
}
