"""A protocol-faithful Ollama stand-in for tests and benchmarks.

Real HTTP on 127.0.0.1 (a random port), speaking the documented Ollama API:
`/api/chat` (NDJSON streaming over chunked transfer, and non-streaming),
`/api/show`, `/api/ps`, `/api/tags`, `/api/version`, `/api/embed`, `/api/pull`.

- `prompt_eval_count` comes from a deterministic tokenizer that is *not*
  chars/4 (letters cost one token per 4, every digit, symbol and newline one),
  counted over the rendered ChatML-style template, special tokens included;
  `tokenizer="bpe"` picks a second, differently-behaved one (`count_tokens_bpe`)
  to catch bugs that only an estimate fitted to the first would hide.
- The context window is `options.num_ctx` (default 4096 when not sent, as
  Ollama's default was), capped by the model's context_length. An overflowing
  prompt is cut the way Ollama's `chatPrompt` does it: the oldest non-system
  messages are dropped, the last message always kept; with `truncate: false`
  the request gets HTTP 400 instead. A prompt that fits but leaves less than
  `options.num_predict` for the answer is cut the same way whatever `truncate`
  says, as the runner's context shift would lose it. Both are recorded in
  `truncations` / `refusals`, so a test can assert they never happened.
- Images (`images` of a message, base64) cost a fixed number of tokens each for a
  model with vision (`vision:4b`: 256; /api/show lists "vision"); a model without
  answers HTTP 400.
- Replies are scripted (`script()`), else derived from the last user message; a
  one-token read (`num_predict: 1`, how ctxkeepd counts a prompt) leaves the script.
- Faults (`fail_next()`): delay, HTTP 500, connection dropped mid-stream.
  An unknown model gets 404 as from Ollama.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from standin_http import StandinHandler
from standin_parts import (  # noqa: F401 - what tests import from here
    DEFAULT_MODELS,
    DEFAULT_NUM_CTX,
    TOKENIZERS,
    ChatRecord,
    Fault,
    Model,
    count_tokens,
    count_tokens_bpe,
    embed_vector,
    images_of,
    orphan,
    render,
    split_stream,
)


@dataclass
class OllamaStandin:
    """The server. `start()` it, point OLLAMA_HOST at `url`, `stop()` it."""

    models: tuple[Model, ...] = DEFAULT_MODELS
    version: str = "0.12.6"
    #: Seconds before each streamed chunk (the first one's: see first_token_delay).
    chunk_delay: float = 0.0
    #: Seconds before the first chunk instead, when set (a real model's prompt processing).
    first_token_delay: float | None = None
    #: "simple" or "bpe": how prompt_eval_count and eval_count are counted.
    tokenizer: str = "simple"
    #: How prompt_eval_count counts a prompt whose start the last prompt shared (a prompt
    #: cache): "whole" (Ollama today: cached tokens included, and `prompt_eval_cached_count`
    #: says how many), "uncached" (some older versions: only what was not cached), "omit"
    #: (older still: no prompt_eval_count at all when the whole prompt was cached).
    count_mode: str = "whole"
    #: The last prompt's rendered text (what the cache holds).
    _cached_prompt: str = ""
    replies: deque[str] = field(default_factory=deque)
    tool_replies: deque[dict[str, Any]] = field(default_factory=deque)
    reply_fn: Callable[[list[dict[str, Any]]], str] | None = None
    faults: deque[Fault] = field(default_factory=deque)
    chats: list[ChatRecord] = field(default_factory=list)
    #: The path of every POST received, in order (before any fault's delay).
    posts: list[str] = field(default_factory=list)
    embeds: list[dict[str, Any]] = field(default_factory=list)
    #: What /api/embed answers with: a hash of the words (embed_vector) unless a real
    #: embedder is given (texts → unit vectors; bench/recall.py --embed minilm).
    embedder: Callable[[list[str]], list[list[float]]] | None = None
    #: Why each chat the template refused for an orphaned tool call or result was refused.
    orphans: list[str] = field(default_factory=list)
    loaded: dict[str, int] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- control --------------------------------------------------------------

    def start(self, port: int = 0) -> "OllamaStandin":
        """Serve on `port` (0: a free one)."""
        standin = self

        class Handler(self.handler_base()):  # type: ignore[misc]
            owner = standin

        self._server = StandinServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        # shutdown() waits for the serving loop to notice it: poll often (default 0.5 s)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True, name="ollama-standin").start()
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, as a killed server would."""
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server.kill_connections()
            self._server = None

    def handler_base(self) -> type:
        """The request handler's class (another server's API in a subclass)."""
        return StandinHandler

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the stand-in first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: str) -> None:
        """Queue replies for the next chat requests, in order."""
        with self._lock:
            self.replies.extend(replies)

    def script_tool_call(self, name: str, arguments: dict[str, Any], content: str = "") -> None:
        """Queue an answer that calls the tool `name` (Ollama's `message.tool_calls`), for
        the next chat that offers tools (a summary's call offers none)."""
        with self._lock:
            self.tool_replies.append({"content": content, "tool_calls": [
                {"function": {"name": name, "arguments": arguments}}]})

    def fail_next(self, kind: str, **kwargs: Any) -> None:
        """Queue a fault for the next request to `path` (default /api/chat)."""
        with self._lock:
            self.faults.append(Fault(kind, **kwargs))

    @property
    def truncations(self) -> list[ChatRecord]:
        """Chat requests whose prompt Ollama would have cut silently."""
        return [c for c in self.chats if c.truncated]

    @property
    def refusals(self) -> list[ChatRecord]:
        """Chat requests refused for overflowing with truncate: false."""
        return [c for c in self.chats if c.refused]

    @property
    def overflowed(self) -> list[ChatRecord]:
        """Requests for an answer whose prompt was cut or refused: the truncations, and the
        refusals but those of a count (ctxkeepd asks for one token to learn a prompt's size,
        and a refusal there tells it the prompt does not fit: nothing is lost)."""
        return [c for c in self.chats if c.truncated or (c.refused and (c.body.get("options") or {}).get("num_predict") != 1)]

    # -- behaviour ------------------------------------------------------------

    def cache_counts(self, prompt: str, tokens: int) -> dict[str, int]:
        """The prompt counts as the server of `count_mode` reports them, the tokens of the
        start this prompt shares with the last one counted as read from the cache."""
        with self._lock:
            shared = 0
            for a, b in zip(self._cached_prompt, prompt):
                if a != b:
                    break
                shared += 1
            self._cached_prompt = prompt
        cached = min(tokens, self.count(prompt[:shared]))
        if self.count_mode == "uncached":
            return {"prompt_eval_count": tokens - cached}
        if self.count_mode == "omit":
            return {"prompt_eval_count": tokens - cached} if cached < tokens else {"prompt_eval_count": None}
        return {"prompt_eval_cached_count": cached}

    def model(self, name: str) -> Model | None:
        """The model called `name` (a bare name means its `:latest` tag)."""
        wanted = name if ":" in name else f"{name}:latest"
        return next((m for m in self.models if m.name in (name, wanted)), None)

    def take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for fault in list(self.faults):
                if fault.path == path:
                    self.faults.remove(fault)
                    return fault
        return None

    def next_reply(self, messages: list[dict[str, Any]], tools: bool = False, shaped: bool = False) -> Any:
        """The next scripted reply (a dict with `tool_calls` when the chat offers tools and
        one is scripted), else one made from the last user message (`shaped`: as JSON)."""
        with self._lock:
            if tools and self.tool_replies:
                return self.tool_replies.popleft()
            if self.replies:
                return self.replies.popleft()
        if self.reply_fn:
            return self.reply_fn(messages)
        last = next((m.get("content", "") for m in reversed(messages)
                     if m.get("role") == "user"), "")
        words = last.split()[:12]
        made = f"You said {len(last.split())} words, starting: {' '.join(words)}."
        return json.dumps({"answer": made}) if shaped else made

    def count(self, text: str) -> int:
        return TOKENIZERS[self.tokenizer](text)

    def prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                      image_tokens: int = 0) -> int:
        """A prompt's tokens: its rendered text's, and a fixed cost per image."""
        return self.count(render(messages, tools)) + image_tokens * images_of(messages)

    def fit(self, messages: list[dict[str, Any]], num_ctx: int,
            tools: list[dict[str, Any]] | None = None, image_tokens: int = 0) -> tuple[int, int]:
        """Ollama's chatPrompt: (first kept index, prompt tokens) for the window."""
        n = len(messages) - 1
        keep_from = n
        for i in range(n, -1, -1):
            if i == n:
                continue
            system = [m for m in messages[:i] if m.get("role") == "system"]
            if self.prompt_tokens(system + messages[i:], tools, image_tokens) > num_ctx:
                break
            keep_from = i
        system = [m for m in messages[:keep_from] if m.get("role") == "system"]
        return keep_from, self.prompt_tokens(system + messages[max(keep_from, 0):], tools, image_tokens)


class StandinServer(ThreadingHTTPServer):
    """The HTTP server, quiet about clients that hang up (a cancel, a killed daemon)."""

    allow_reuse_address = True
    daemon_threads = True
    #: Go's listener (Ollama's) takes the system's whole backlog; socketserver's 5 would let
    #: a burst of connections overflow it, and the kernel resets those that overflowed once
    #: their request is sent (a ReadError mid-answer under 50 concurrent chats).
    request_queue_size = 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.open_connections: set[socket.socket] = set()
        super().__init__(*args, **kwargs)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        self.open_connections.add(conn)
        return conn, address

    def kill_connections(self) -> None:
        """Cut every open connection, as a killed server's are (kept-alive ones too)."""
        for conn in list(self.open_connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.open_connections.clear()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main() -> None:
    """Serve the stand-in on a fixed port, for trying ctxkeep by hand without Ollama."""
    import argparse

    parser = argparse.ArgumentParser(description="A stand-in for Ollama, for tests and demos.")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--chunk-delay", type=float, default=0.02,
                        help="seconds before each streamed chunk (default: 0.02)")
    parser.add_argument("--first-token-ms", type=float, default=None,
                        help="milliseconds before the first chunk of an answer, instead of "
                             "--chunk-delay (default: --chunk-delay)")
    args = parser.parse_args()
    standin = OllamaStandin(chunk_delay=args.chunk_delay, first_token_delay=(
        None if args.first_token_ms is None else args.first_token_ms / 1000))

    class Handler(StandinHandler):
        owner = standin

    server = StandinServer(("127.0.0.1", args.port), Handler)
    print(f"Ollama stand-in on http://127.0.0.1:{args.port} "
          f"(models: {', '.join(m.name for m in standin.models)})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
