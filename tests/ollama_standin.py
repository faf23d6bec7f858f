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

import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SPECIAL = re.compile(r"<\|im_start\|>|<\|im_end\|>")
PIECES = re.compile(r"[A-Za-z]+|\d|\n|[^\sA-Za-z\d]")
DEFAULT_NUM_CTX = 4096


def count_tokens(text: str) -> int:
    """Tokens of `text`: special tokens 1, letters ceil(n/4) per word, digit/symbol/newline 1."""
    total = len(SPECIAL.findall(text))
    for piece in PIECES.findall(SPECIAL.sub(" ", text)):
        total += math.ceil(len(piece) / 4) if piece[0].isalpha() else 1
    return total


BPE_PIECES = re.compile(r"[A-Za-z]+|[^\x00-\x7f]|\d{1,3}|\n+|[ \t]+|[^\sA-Za-z\d]")


def count_tokens_bpe(text: str) -> int:
    """A second, differently-behaved tokenizer, closer to a BPE vocabulary: short Latin
    words 1 token, longer ones 1 per 6 letters more; every other script's character 1;
    digits in groups of 3; a run of newlines 1; a single space free (it joins the next
    word), longer runs of spaces 1 per 4; every symbol 1."""
    total = len(SPECIAL.findall(text))
    for piece in BPE_PIECES.findall(SPECIAL.sub(" ", text)):
        first = piece[0]
        if first.isascii() and first.isalpha():
            total += 1 + (len(piece) - 1) // 6
        elif first in " \t":
            total += 0 if len(piece) == 1 else math.ceil(len(piece) / 4)
        else:
            total += 1
    return total


TOKENIZERS: dict[str, Callable[[str], int]] = {"simple": count_tokens, "bpe": count_tokens_bpe}


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """The chat template: ChatML (as qwen2.5's: the tools in a system block, an answer's
    calls and a tool's results in tags), ending with the assistant's open turn."""
    out = [f"<|im_start|>system\n# Tools\n{json.dumps(tools)}<|im_end|>\n"] if tools else []
    for m in messages:
        content = m.get("content", "") or ""
        calls = "".join(f"\n<tool_call>{json.dumps(c.get('function', c))}</tool_call>"
                        for c in m.get("tool_calls") or ())
        if m.get("role") == "tool":
            content = f"<tool_response>{m.get('tool_name', '')}: {content}</tool_response>"
        out.append(f"<|im_start|>{m.get('role', 'user')}\n{content}{calls}<|im_end|>\n")
    return "".join(out) + "<|im_start|>assistant\n"


def orphan(messages: list[dict[str, Any]]) -> str:
    """Why the template refuses the messages ("" if it does not): a tool result that no
    call before it asked for, or calls with no result after them (as strict templates
    refuse them)."""
    for i, m in enumerate(messages):
        before = messages[i - 1] if i else {}
        if m.get("role") == "tool" and not (before.get("tool_calls") or before.get("role") == "tool"):
            return f"messages[{i}]: a tool message that answers no tool call"
        if before.get("tool_calls") and m.get("role") != "tool":
            return f"messages[{i - 1}]: tool calls with no tool message after them"
    return ""


def split_stream(text: str) -> list[str]:
    """A reply split into streamed pieces: each word with its following whitespace."""
    return re.findall(r"\S+\s*|\s+", text) or [""]


@dataclass
class Model:
    """A model the stand-in serves."""

    name: str
    context_length: int = 32768
    parameter_size: str = "7.6B"
    family: str = "qwen2"
    thinking: bool = False
    embedding: bool = False
    #: Tokens one image costs in a prompt (0: no vision; /api/show lists "vision" otherwise).
    image_tokens: int = 0


def images_of(messages: list[dict[str, Any]]) -> int:
    return sum(len(m.get("images") or ()) for m in messages)


@dataclass
class Fault:
    """What goes wrong with the next matching request."""

    kind: str  # "delay" | "http500" | "drop"
    seconds: float = 0.0  # delay before the first byte
    after_chunks: int = 0  # drop: chunks sent before the connection is cut
    path: str = "/api/chat"


@dataclass
class ChatRecord:
    """A /api/chat request as received and what the stand-in made of it."""

    body: dict[str, Any]
    num_ctx: int
    num_ctx_sent: bool
    prompt_tokens: int
    kept_messages: int
    truncated: bool
    refused: bool
    status: int = 200


DEFAULT_MODELS = (
    Model("qwen2.5:7b"),
    Model("small:1b", context_length=4096, parameter_size="1.2B", family="llama"),
    Model("thinker:8b", thinking=True, parameter_size="8.2B"),
    Model("vision:4b", parameter_size="4.3B", family="gemma3", image_tokens=256),
    Model("nomic-embed-text", context_length=2048, parameter_size="137M",
          family="nomic-bert", embedding=True),
    Model("all-minilm:latest", context_length=512, parameter_size="23M", family="bert", embedding=True),
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

        self._server = _Server(("127.0.0.1", port), Handler)
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
        return _Handler

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


class _Server(ThreadingHTTPServer):
    """The HTTP server, quiet about clients that hang up (a cancel, a killed daemon)."""

    allow_reuse_address = True
    daemon_threads = True

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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def embed_vector(text: str, dims: int = 64) -> list[float]:
    """A deterministic unit vector: hashed bag of lower-cased words."""
    vec = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec[h % dims] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class _Handler(BaseHTTPRequestHandler):
    owner: OllamaStandin
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as Go's net/http (Ollama) does: no 40 ms delayed-ACK stalls

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    # -- helpers --------------------------------------------------------------

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        return json.loads(raw or b"{}")

    def _chunk(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _fault(self, path: str) -> Fault | None:
        fault = self.owner.take_fault(path)
        if fault and fault.kind == "delay":
            time.sleep(fault.seconds)
            return None
        if fault and fault.kind == "http500":
            self._error(500, "llama runner process has terminated: exit status 2")
        return fault

    # -- routes ---------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        owner = self.owner
        if self.path == "/":
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path == "/api/version":
            self._json(200, {"version": owner.version})
        elif self.path == "/api/tags":
            self._json(200, {"models": [self._model_entry(m) for m in owner.models]})
        elif self.path == "/api/ps":
            models = []
            for name, num_ctx in owner.loaded.items():
                m = owner.model(name)
                if m:
                    entry = self._model_entry(m)
                    entry.update(expires_at=_now(), size_vram=entry["size"], context_length=num_ctx)
                    models.append(entry)
            self._json(200, {"models": models})
        else:
            self._error(404, "404 page not found")

    def do_POST(self) -> None:  # noqa: N802
        try:
            body = self._body()
        except (ValueError, UnicodeDecodeError) as exc:
            self._error(400, f"invalid JSON: {exc}")
            return
        with self.owner._lock:
            self.owner.posts.append(self.path)
        routes = {"/api/chat": self._chat, "/api/show": self._show, "/api/embed": self._embed,
                  "/api/pull": self._pull}
        handler = routes.get(self.path)
        if handler is None:
            self._error(404, "404 page not found")
            return
        fault = self._fault(self.path)
        if fault and fault.kind == "http500":
            return
        handler(body, fault)

    def _model_entry(self, m: Model) -> dict[str, Any]:
        return {
            "name": m.name, "model": m.name, "modified_at": _now(), "size": 4_700_000_000,
            "digest": hashlib.sha256(m.name.encode()).hexdigest(),
            "details": self._details(m),
        }

    def _details(self, m: Model) -> dict[str, Any]:
        return {"parent_model": "", "format": "gguf", "family": m.family, "families": [m.family],
                "parameter_size": m.parameter_size, "quantization_level": "Q4_K_M"}

    def _show(self, body: dict[str, Any], fault: Fault | None) -> None:
        name = body.get("model") or body.get("name") or ""
        m = self.owner.model(name)
        if m is None:
            self._error(404, f"model '{name}' not found")
            return
        capabilities = ["embedding"] if m.embedding else ["completion"] + (
            ["thinking"] if m.thinking else []) + (["vision"] if m.image_tokens else [])
        self._json(200, {
            "license": "", "modelfile": f"FROM {m.name}\n", "parameters": "",
            "template": "{{ .Prompt }}", "details": self._details(m),
            "model_info": {"general.architecture": m.family,
                           "general.parameter_count": 7_615_616_512,
                           f"{m.family}.context_length": m.context_length,
                           f"{m.family}.embedding_length": 3584},
            "capabilities": capabilities, "modified_at": _now(),
        })

    def _pull(self, body: dict[str, Any], fault: Fault | None) -> None:
        """Ollama's /api/pull, streamed: the manifest, one layer in a few steps, success
        (the model is then listed). A name starting with "nosuch" is not in the registry:
        the stream ends with an error line, as Ollama's does."""
        owner = self.owner
        name = body.get("model") or body.get("name") or ""
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk({"status": "pulling manifest"})
        if name.startswith("nosuch"):
            self._chunk({"error": "pull model manifest: file does not exist"})
        else:
            digest = "sha256:" + hashlib.sha256(name.encode()).hexdigest()
            total = 4_000_000
            for done in (0, 1_000_000, 2_500_000, total):
                self._chunk({"status": f"pulling {digest[7:19]}", "digest": digest,
                             "total": total, "completed": done})
            for step in ("verifying sha256 digest", "writing manifest", "success"):
                self._chunk({"status": step})
            with owner._lock:
                if owner.model(name) is None:
                    owner.models = (*owner.models, Model(name if ":" in name else f"{name}:latest"))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _embed(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner = self.owner
        name = body.get("model", "")
        m = owner.model(name)
        if m is None:
            self._error(404, f"model \"{name}\" not found, try pulling it first")
            return
        inputs = body.get("input", "")
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        owner.embeds.append(body)
        vectors = owner.embedder(texts) if owner.embedder else [embed_vector(t) for t in texts]
        self._json(200, {"model": m.name, "embeddings": vectors,
                         "total_duration": 1000, "load_duration": 100,
                         "prompt_eval_count": sum(owner.count(t) for t in texts)})

    def _chat(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner = self.owner
        name = body.get("model", "")
        m = owner.model(name)
        if m is None:
            self._error(404, f"model \"{name}\" not found, try pulling it first")
            return
        messages = body.get("messages") or []
        options = body.get("options") or {}
        num_ctx = min(int(options.get("num_ctx", DEFAULT_NUM_CTX)), m.context_length)
        num_predict = int(options.get("num_predict") or 0)
        tools = body.get("tools") or None
        refused_why = orphan(messages)
        if refused_why:
            owner.orphans.append(refused_why)
            self._error(400, f"template: {refused_why}")
            return
        if images_of(messages) and not m.image_tokens:
            self._error(400, f"{m.name} does not support images: choose a model with vision")
            return
        full_tokens = owner.prompt_tokens(messages, tools, m.image_tokens)
        overflow = full_tokens > num_ctx
        refuse = overflow and body.get("truncate") is False
        # the runner keeps num_predict free for the answer: what does not fit beside it is lost
        limit = num_ctx - num_predict if 0 < num_predict < num_ctx else num_ctx
        cut = full_tokens > limit and not refuse
        keep_from, prompt_tokens = owner.fit(messages, limit, tools, m.image_tokens) if cut else (0, full_tokens)
        record = ChatRecord(body=body, num_ctx=num_ctx, num_ctx_sent="num_ctx" in options,
                            prompt_tokens=min(prompt_tokens, num_ctx), kept_messages=len(messages) - keep_from,
                            truncated=cut, refused=refuse)
        with owner._lock:
            owner.chats.append(record)
            owner.loaded[m.name] = num_ctx
        if refuse:
            record.status = 400
            self._error(400, f"the input length ({full_tokens} tokens) exceeds the "
                             f"context length ({num_ctx} tokens)")
            return
        kept = messages[keep_from:]
        # a one-token read (how ctxkeepd counts a prompt) is no answer: the script waits
        reply = "The" if num_predict == 1 else owner.next_reply(kept, bool(tools), bool(body.get("format")))
        calls: list[dict[str, Any]] = []
        if isinstance(reply, dict):  # a scripted tool call
            calls, reply = reply["tool_calls"], reply.get("content", "")
        done_reason = "stop"
        if num_predict > 0 and owner.count(reply) > num_predict:  # generation stops there
            words = reply.split(" ")
            while words and owner.count(" ".join(words)) > num_predict:
                words = words[:max(0, len(words) * 9 // 10)] if len(words) > 20 else words[:-1]
            reply, done_reason = " ".join(words), "length"
        thinking = f"Thinking about: {kept[-1].get('content', '')[:40]}" if (
            m.thinking and body.get("think")) else ""
        eval_count = owner.count(reply)
        final = {
            "model": m.name, "created_at": _now(), "done": True, "done_reason": done_reason,
            "total_duration": 5_000_000 + 1000 * eval_count, "load_duration": 1_000_000,
            "prompt_eval_count": record.prompt_tokens, "prompt_eval_duration": 100 * record.prompt_tokens,
            "eval_count": eval_count, "eval_duration": 1000 * eval_count,
        }
        final.update(owner.cache_counts(render(kept, body.get("tools") or None), record.prompt_tokens))
        if final["prompt_eval_count"] is None:  # omitted, as those versions did
            del final["prompt_eval_count"]
        if body.get("stream", True) is False:
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            if calls:
                message["tool_calls"] = calls
            if thinking:
                message["thinking"] = thinking
            self._json(200, {**final, "message": message})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = [("thinking", p) for p in split_stream(thinking)] if thinking else []
        pieces += [("content", p) for p in split_stream(reply)]
        pieces += [("tool_calls", c) for c in calls]  # whole, in a chunk of their own
        for sent, (kind, piece) in enumerate(pieces):
            if fault and fault.kind == "drop" and sent >= fault.after_chunks:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if sent == 0 and owner.first_token_delay is not None:
                time.sleep(owner.first_token_delay)
            elif owner.chunk_delay:
                time.sleep(owner.chunk_delay)
            message = {"role": "assistant", "content": piece if kind == "content" else ""}
            if kind == "thinking":
                message["thinking"] = piece
            if kind == "tool_calls":
                message["tool_calls"] = [piece]
            try:
                self._chunk({"model": m.name, "created_at": _now(), "message": message, "done": False})
            except (BrokenPipeError, ConnectionResetError):
                return  # the client went away (a cancel)
        try:
            self._chunk({**final, "message": {"role": "assistant", "content": ""}})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return


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

    class Handler(_Handler):
        owner = standin

    server = _Server(("127.0.0.1", args.port), Handler)
    print(f"Ollama stand-in on http://127.0.0.1:{args.port} "
          f"(models: {', '.join(m.name for m in standin.models)})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
