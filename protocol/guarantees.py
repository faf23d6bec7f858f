"""The section of docs/protocol.md on jobs: what `accepted` means, queues, `busy`, and
how every job ends."""

GUARANTEES = """
## Jobs: accepted, queued, busy, and how every job ends

`send` and `compact` start *jobs*. The reply (`accepted`, `compaction.accepted`) comes at
once; the work is reported on the event socket.

- **Accepted means stored.** When `accepted` leaves the daemon, the question is committed
  and synced to disk, whether it runs at once or waits (`ahead` > 0: jobs of the session
  before it). A session runs its jobs one at a time, in order; sessions run at once.
- **Every accepted job ends with exactly one terminal event**, whatever happens: a
  generation with `response.generation` or `generation.error`, a compaction with
  `compaction.result`. This holds for a job cancelled while queued (its terminal event
  comes at once, its body never runs), cancelled while running, failing with any error,
  or cut by the daemon stopping (`shutting_down`). If the daemon is killed, the next start
  marks every question left without an answer with an empty answer of status
  `interrupted` and error `daemon_restarted`.
- **Every question gets an answer record.** An answer (complete or interrupted) names its
  question in `reply_to`. A queued question is stored before earlier questions are
  answered, so history may read question, question, answer, answer; the active context
  (what the model sees) always pairs them.
- **`busy` follows the queue.** A session is busy while it has a job queued or running.
  `session.updated` is published with `busy: true` when its first job is accepted and
  with `busy: false` after the terminal event (and any automatic compaction) of its last
  job. `session.delete` and `snapshot.restore` answer `busy` meanwhile; `send` and
  `compact` queue instead.
- **Every change to what the model would see is announced**: `session.updated` and
  `context.usage` after a turn, a compaction, an undo or restore, `session.set_system`,
  `session.set_model`, `goals.set` and `pin`. After anything but a turn, `usage.exact` is
  `false` and `usage.tokens` is a fresh estimate of the prompt as it now stands, until the
  next turn's exact count.
- **Compaction is the daemon's**: a client asks for one with `compact`; only the daemon
  publishes `compaction.request`, `compaction.progress` and `compaction.result`. Every
  `compaction.request` is followed by exactly one `compaction.result`, a manual one even
  when there is nothing to do (`skipped`). Automatic compaction runs inside a turn's job
  (before its prompt when the prompt would not fit, after its answer when the budget
  crossed a threshold), one `compaction.request`/`compaction.result` pair per level.
  A result `ok` always made the context smaller (`tokens_after` < `tokens_before`); a step
  that would not shrink it is `failed` and changed nothing.
- **No prompt is sent that does not fit**: with its estimate raised by the estimator's
  measured error, plus room for the answer (`num_predict` is set to the room left), or
  the turn ends with `context_overflow` — decided before anything is compacted when no
  compaction could make it fit.

## Naming a session

Wherever a request has `session`, it may be the session's id, its name, or a prefix of
its id of at least 4 characters that matches exactly one session (else
`ambiguous_session`).

## Frame sizes

A frame up to `max_frame_bytes` (configurable, default 8 MiB) is read and answered. A
frame above it, up to 8 × `max_frame_bytes`, is answered with `frame_too_large` and
otherwise ignored. A frame above 8 × `max_frame_bytes` is dropped by ZeroMQ itself, which
also closes that client's connection: no reply comes, and the client must reconnect.
JSON nested deeper than 64 arrays or objects is answered with `bad_json`. Replies
are kept under the cap too: a `history` page is cut short, with `next` pointing on.

## Compaction markers

A client shows a compaction where it happened with the `marker` of its `compaction.result`:

- manual: `── compacted: 6,120 → ~1,480 tokens (4,640 freed) ──`
- automatic, with the level in words: `── compacted (files as summaries): …`,
  `── compacted (older messages set aside): …`, `── compacted (checkpoint): …`

`~` marks the estimate: the next turn's exact count replaces it.

## What the fields mean

| field | meaning |
|---|---|
| `response.generation.token_count`, `session.token_count` | Ollama's `prompt_eval_count`: the exact size of the last *prompt* sent, without the answer (the answer's tokens are `eval_count`) |
| `session.token_count_exact`, `usage.exact` | false when the prompt changed since that count: `token_count`/`tokens` is then the daemon's estimate of the prompt as it now stands |
| `response.generation.prompt_estimate` | the daemon's estimate of that prompt, made before it was sent (calibrated per model from earlier counts) |
| `response.generation.truncated` | true when the count shows Ollama cut the prompt anyway (at or over the window, or far below the estimate): the answer may have missed the oldest messages |
| `usage.budget`, `usage.budget_fill` | the conversation's budget — window − reply room − system − goals/pins − checkpoints — and its messages' tokens over it: what automatic compaction watches (thresholds apply to it) |
| `compaction.*.level`, `strategy` | 0 / `summary`: a manual compaction; 1 / `file_compress`: @file references shown as summaries; 2 / `message_prune`: low-relevance messages left the active context; 3 / `checkpoint`: older messages summarized into a checkpoint, older checkpoints re-compressed |
| `AttachedFile.mode` | `full` (the file as it is), `summary` (its outline), `lines` (a range), `element` (one function or class), `listing` (a folder's entries) |
| `context.warning.kind` | `reliability` (the score fell below 40 % after compactions), `user_summary` (the user's own oldest messages passed half the budget and are now kept as a summary, shown as such) |
| `ollama.checked`, `ollama.reachable` | `checked` is false until the first check or model call; after that `reachable` says whether the last one got an answer |
"""
