"""The prose of `docs/protocol.md` (protocol/docgen.py puts it around the tables and
examples it generates from the Structs), kept as data so that the generator is only code."""

#: From the sockets to a whole client in Python: everything before the guarantees.
INTRO = """\
ctxkeepd speaks JSON over two ZeroMQ sockets. Anything with a ZeroMQ binding can be
a client: this page is all you need.

## Sockets

| socket | daemon side | client side | default endpoint |
|---|---|---|---|
| control | ROUTER (bind) | DEALER or REQ (connect) | `ipc://$XDG_RUNTIME_DIR/ctxkeep/ctl` |
| events | XPUB (bind) | SUB (connect) | `ipc://$XDG_RUNTIME_DIR/ctxkeep/events` |

Without `XDG_RUNTIME_DIR` the folder is `/tmp/ctxkeep-<uid>`. The environment
variables `CTXKEEP_CONTROL` and `CTXKEEP_EVENTS` override the endpoints (the
daemon and the clients both read them). The socket folder is mode 0700.

## Requests and replies

A request is **one frame** holding one JSON object (UTF-8). From a DEALER, send
just that frame; a REQ socket adds its empty delimiter frame itself, and the
daemon answers the same way. Every request has:

- `type`: which request (the sections below);
- `id`: a string you choose, echoed in the reply, so you may send several
  requests before reading the replies (pipelining); replies to one
  connection come back in the order sent;
- `v`: the protocol version you speak (default 1). A request with a newer
  `v` than the daemon's gets the error `unsupported_version`.

A missing or mistyped field — `type` included — is `invalid_request`; a `type` no
daemon knows is `unknown_type`. Unknown fields are refused (`invalid_request`), so
typos never pass silently. A session is named by its id, a prefix of its id of at
least 4 characters that no other id starts with, or its name.

Every request gets exactly one reply: its usual reply type, or an `error`
reply with a `code` from the table below and a `message` that says what to
do. Long work (a generation) is accepted at once (`accepted`) and then
reported on the event socket. A frame over the daemon's limit
(`max_frame_bytes`, default 8 MiB) is answered with `frame_too_large`; a frame
over 8 times that (64 MiB by default) makes ZeroMQ drop the connection, with no
reply (reconnect, and send less).

**Busy sessions.** A session runs one job at a time (a generation or a compaction).
`send` and `compact` queue behind the session's running work (`ahead` in the reply
says how many jobs wait before it; only one compaction may be queued or running per
session, a second answers `busy`). `snapshot.restore` (undo included), `session.delete`
and `session.import` into an existing session answer `busy` while the session has work
queued or running. Every other request is answered at once, whatever runs. While the
daemon stops (after SIGTERM), `send`, `compact` and `models.pull` answer
`shutting_down`; other requests, `session.create` included, are answered until its
sockets close.

## Events

Each event is **two frames**: the topic, then the JSON body.

- The topic is `<subject>/<session_id>`, or `<subject>` alone for
  daemon-wide events. Subscribe by prefix: `""` for everything,
  `generation.` for all generation events, `generation.token/<id>` for one
  session's tokens.
- The body has `type` (the subject), `seq`, `time` (Unix seconds) and
  `session_id` (`""` when daemon-wide). `seq` counts up by one for every
  event the daemon publishes: a subscriber to everything that sees a jump
  has missed events (ZeroMQ drops when a subscriber falls 64 MiB behind:
  `event_buffer_bytes`; text streams in batches of at most 4 KiB) and
  should re-read what it shows with requests. After a restart the
  numbering begins again at 1.
- Each new subscription is greeted with a `daemon.status` event; seeing it
  tells you the subscription is live (subscribe to `daemon.status` too if
  your other prefixes do not cover it). A subscription past 256 held by one
  connection, or past 4,096 held at once by all subscribers, is refused: it gets no
  greeting and no events (`max_subscriptions_per_client` and `max_subscriptions` in
  the daemon's configuration). A prefix longer than 64 bytes (every topic is under
  40) closes the subscriber's connection unread (over TCP it is refused), and so do
  32 refused subscriptions.
- Every job ends with exactly one terminal event: `response.generation` or
  `generation.error` for a generation, `compaction.result` for a compaction (see
  below).
- Ignore event types you do not know: new ones may be added in a minor version;
  new fields always have defaults.

## A session from a script

Runnable as it is: it uses the model named by `MODEL` (default `llama3.2`), and
prints the daemon's error when that model is not installed.

```python
import json, os, zmq
run = os.environ.get("XDG_RUNTIME_DIR", f"/tmp/ctxkeep-{os.getuid()}") + "/ctxkeep"
ctx = zmq.Context()
sub = ctx.socket(zmq.SUB); sub.connect(f"ipc://{run}/events"); sub.subscribe(b"")
sub.recv_multipart()                                   # the daemon.status greeting
ctl = ctx.socket(zmq.DEALER); ctl.connect(f"ipc://{run}/ctl")
model = os.environ.get("MODEL", "llama3.2")
ctl.send(json.dumps({"type": "session.create", "id": "1", "model": model}).encode())
sid = json.loads(ctl.recv())["session"]["id"]
ctl.send(json.dumps({"type": "send", "id": "2", "session": sid, "text": "Hello"}).encode())
gen = json.loads(ctl.recv())["generation_id"]
while True:
    topic, body = sub.recv_multipart(); event = json.loads(body)
    if event.get("generation_id") != gen: continue
    if event["type"] == "generation.token": print(event["text"], end="", flush=True)
    if event["type"] == "generation.error": print(event["code"], event["message"])
    if event["type"] in ("response.generation", "generation.error"): break
```
"""

#: What `>`, `<` and `*` mean in the exchanges.
EXCHANGE_KEY = ("In the exchanges, `>` is a frame the client sends on the control socket, `<` a frame "
                "it receives, and `*` an event frame pair on the event socket.")

TOOLS = ("A turn offers tools (`tools` of `send`, or the session's, `session.set_tools`); an answer "
         "that calls them ends its generation with `message.tool_calls`. The client runs each "
         "call and sends what it returned as `tool_results` (a `tool` message; no text), which "
         "starts the next generation. Tokens and other events are left out below.")

IMAGES = ("Images: `send`'s `images` (base64, each with a name) are stored once per content hash; "
          "history's messages give `images` as references (`hash`, `media_type`, `size`, `name`) and "
          "`image.get` returns the bytes. A model with vision (`/api/show` capabilities) sees them; "
          "one without reads `[image: name]` in their place, as do summaries and level 1 after "
          "`image_turns` questions.")

#: What each error code means, as the table says it.
ERROR_MEANINGS = {
    "bad_frame": "empty frame, or not exactly one body frame",
    "frame_too_large": "the frame is over `max_frame_bytes`",
    "bad_json": "not UTF-8 JSON, or not a JSON object",
    "unknown_type": "no request has that `type`; the message lists them",
    "invalid_request": "a field is missing, unknown, or of the wrong type (the message gives its path)",
    "unsupported_version": "`v` is newer than the daemon's protocol",
    "unknown_session": "no session has that id, name or id prefix",
    "ambiguous_session": "an id prefix matches several sessions",
    "invalid_argument": "a value is not allowed (an empty message, a taken name)",
    "busy": "the session has work queued or running (restore, delete) or is already compacting (compact); wait for its terminal event or cancel",
    "ollama_unreachable": "no Ollama answers at the configured host",
    "model_not_found": "the model is not installed in Ollama (`ollama pull`)",
    "ollama_error": "Ollama answered with an error",
    "model_server_error": "an OpenAI-compatible model server (llama.cpp's, vLLM, LM Studio) answered with an error, "
                          "or ctxkeepd could not read what it answered",
    "stream_interrupted": "the answer stream broke off; the partial answer is kept, marked interrupted",
    "ollama_not_answering": "Ollama took the request but sent nothing back: a loaded model silent for "
                            "`first_token_timeout`, or nothing at all for `read_timeout` (see "
                            "`generation.waiting`)",
    "context_overflow": "the prompt does not fit the window",
    "cancelled": "a client cancelled the job (queued or running)",
    "storage_error": "the store could not write (disk full?); nothing was changed",
    "shutting_down": "the daemon stopped before the job finished (queued ones never started)",
    "daemon_restarted": "ctxkeepd stopped (a crash, a kill) while the answer was being written: "
                        "found and marked at the next start",
    "internal": "a bug: see the daemon's log",
}
