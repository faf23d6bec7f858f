"""The Ollama stand-in's request handler: one method per endpoint of Ollama's API, answering
from the state of its owner, an `OllamaStandin` (ollama_standin.py)."""

from __future__ import annotations

import hashlib
import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from standin_parts import (
    DEFAULT_NUM_CTX,
    ChatRecord,
    Fault,
    Model,
    embed_vector,
    images_of,
    model_details,
    model_entry,
    now,
    orphan,
    render,
    split_stream,
)
from standin_shapes import shape_error

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin


class StandinHandler(BaseHTTPRequestHandler):
    owner: OllamaStandin
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as Go's net/http (Ollama) does: no 40 ms delayed-ACK stalls

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
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

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
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
            self._json(200, {"models": [model_entry(m) for m in owner.models]})
        elif self.path == "/api/ps":
            models = []
            for name, num_ctx in owner.loaded.items():
                m = owner.model(name)
                if m:
                    entry = model_entry(m)
                    entry.update(expires_at=now(), size_vram=entry["size"], context_length=num_ctx)
                    models.append(entry)
            self._json(200, {"models": models})
        else:
            self._error(404, "404 page not found")

    def do_POST(self) -> None:
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
        if refused := shape_error(self.path, body):
            self._error(400, refused)
            return
        handler(body, fault)

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
            "template": "{{ .Prompt }}", "details": model_details(m),
            "model_info": {"general.architecture": m.family,
                           "general.parameter_count": 7_615_616_512,
                           f"{m.family}.context_length": m.context_length,
                           f"{m.family}.embedding_length": 3584},
            "capabilities": capabilities, "modified_at": now(),
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

    def _model_or_404(self, body: dict[str, Any]) -> Model | None:
        """The model the request names, or None once it was answered 404 as Ollama does."""
        name = body.get("model") or ""
        if not name:
            self._error(400, "model is required")
            return None
        m = self.owner.model(name)
        if m is None:
            self._error(404, f"model \"{name}\" not found, try pulling it first")
        return m

    def _embed(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner = self.owner
        if fault and fault.kind == "drop":  # cut before any answer, as a crashed server's
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        m = self._model_or_404(body)
        if m is None:
            return
        inputs = body.get("input") or []  # none: no embeddings, as Ollama answers it
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        owner.embeds.append(body)
        vectors = owner.embedder(texts) if owner.embedder else [embed_vector(t) for t in texts]
        self._json(200, {"model": m.name, "embeddings": vectors,
                         "total_duration": 1000, "load_duration": 100,
                         "prompt_eval_count": sum(owner.count(t) for t in texts)})

    def _chat(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner = self.owner
        m = self._model_or_404(body)
        if m is None:
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
            "model": m.name, "created_at": now(), "done": True, "done_reason": done_reason,
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
                self._chunk({"model": m.name, "created_at": now(), "message": message, "done": False})
            except (BrokenPipeError, ConnectionResetError):
                return  # the client went away (a cancel)
        try:
            self._chunk({**final, "message": {"role": "assistant", "content": ""}})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
