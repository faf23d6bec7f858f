"""An OpenAI-compatible server stand-in (llama.cpp's server, vLLM, llama-cpp-python), for
tests: real HTTP on 127.0.0.1, the same models, tokenizers, scripted replies, faults and
records as the Ollama stand-in (`OllamaStandin`), speaking OpenAI's API as those servers do:

- `POST /v1/chat/completions`: server-sent events (`data: {...}` chunks, `data: [DONE]`),
  or one object; `stream_options.include_usage` adds a last chunk with `usage` (not with
  `usage_in_stream=False`, as llama-cpp-python's server); tool calls streamed in pieces
  with ids; `reasoning_content` for a thinking model. A tool message must name, by
  `tool_call_id`, a call made before it (400 otherwise).
- The window is the server's (`n_ctx`, as `--ctx-size`), never the request's. A prompt
  over it is refused with HTTP 400 in the flavor's words (llama.cpp's
  exceed_context_size_error; vLLM's "maximum context length", which also counts
  `max_tokens`); an answer that reaches the window stops there ("length"). Nothing is
  ever cut: `truncations` stays empty, `refusals` records each 400.
- What says the window: `GET /props` (flavor "llamacpp": `default_generation_settings.n_ctx`),
  `max_model_len` in `GET /v1/models` (flavor "vllm"), nothing (flavor "plain").
- Counting before sending (`tokenizer_pages`, not llama-cpp-python's): llama.cpp's
  `POST /apply-template` (`prompt`, the template's text) and `POST /tokenize` (`content`:
  `tokens`); vLLM's `POST /tokenize` with `messages` (`count`). `counted` records each.
- `POST /v1/embeddings`, `GET /v1/models`, `GET /health`.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ollama_standin import ChatRecord, Fault, Model, OllamaStandin, embed_vector, split_stream
from openai_counting import CountingPages, ollama_shaped
from standin_http import StandinHandler

CHAT = "/v1/chat/completions"


@dataclass
class OpenAIStandin(OllamaStandin):
    """The server. `start()` it, point a backend of kind "openai" at `url`, `stop()` it."""

    #: The window of every model (llama.cpp's --ctx-size).
    n_ctx: int = 4096
    #: "llamacpp" (GET /props), "vllm" (max_model_len), "plain" (says no window).
    flavor: str = "llamacpp"
    #: Whether include_usage is honoured in streams (llama-cpp-python's server does not).
    usage_in_stream: bool = True
    #: List each model by the path of its file, as llama.cpp's server does without --alias.
    listed_as_paths: bool = False
    #: A chat template that drops system messages (llama-cpp-python's `gemma` format).
    drops_system: bool = False
    #: Slots (/props `total_slots`); with one, a request that comes while an answer streams
    #: cuts that answer short, as llama-cpp-python's server does (`interrupt_requests`).
    #: Flavor "vllm" batches whatever comes, as vLLM does: nothing is cut.
    slots: int = 1
    #: Requests that came while an answer streamed: (path, whether the answer was cut).
    beside_streams: list = field(default_factory=list)
    #: Whether /tokenize (and llama.cpp's /apply-template) are served; the prompts counted.
    tokenizer_pages: bool = True
    counted: list = field(default_factory=list)
    #: What flavor "llamacpp" says its reading and writing took (`timings.prompt_ms`,
    #: `predicted_ms`), in milliseconds a token: 500 and 50 tokens a second.
    ms_per_read: float = 2.0
    ms_per_write: float = 20.0
    _streaming: int = 0
    _interrupts: int = 0

    def model(self, name: str) -> Model | None:
        """A model by name, or by the path it is listed as."""
        if self.listed_as_paths and name.endswith(".gguf"):
            name = name.rsplit("/", 1)[-1][:-5]
        return super().model(name)

    def prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                      image_tokens: int = 0) -> int:
        if self.drops_system:
            messages = [m for m in messages if m.get("role") != "system"]
        return super().prompt_tokens(messages, tools, image_tokens)

    def handler_base(self) -> type:
        return _OpenAIHandler

    def fail_next(self, kind: str, **kwargs: Any) -> None:
        """Queue a fault for the next chat (or the request to `path`)."""
        kwargs.setdefault("path", CHAT)
        super().fail_next(kind, **kwargs)


class _OpenAIHandler(CountingPages, StandinHandler):
    owner: OpenAIStandin

    def _oerror(self, status: int, message: str, kind: str = "invalid_request_error", **extra: Any) -> None:
        if self.owner.flavor == "vllm":
            self._json(status, {"object": "error", "message": message, "type": kind, "param": None,
                                "code": status})
        else:
            self._json(status, {"error": {"code": status, "message": message, "type": kind, **extra}})

    def do_GET(self) -> None:
        owner = self.owner
        if self.path == "/v1/models":
            items = [{"id": f"/models/{m.name}.gguf" if owner.listed_as_paths else m.name, "object": "model",
                      "created": 0, "owned_by": "standin"} for m in owner.models]
            if owner.flavor == "vllm":
                for item in items:
                    item["max_model_len"] = owner.n_ctx
            self._json(200, {"object": "list", "data": items})
        elif self.path == "/props" and owner.flavor == "llamacpp":
            self._json(200, {"default_generation_settings": {"n_ctx": owner.n_ctx}, "total_slots": owner.slots,
                             "modalities": {"vision": any(m.image_tokens for m in owner.models)}})
        elif self.path == "/health":
            self._json(200, {"status": "ok"})
        else:
            self._oerror(404, "File Not Found", "not_found_error")

    def do_POST(self) -> None:
        try:
            body = self._body()
        except (ValueError, UnicodeDecodeError) as exc:
            self._oerror(400, f"invalid JSON: {exc}")
            return
        with self.owner._lock:
            self.owner.posts.append(self.path)
            if self.owner._streaming:  # another request while an answer streams
                cut = self.owner.slots <= 1 and self.owner.flavor != "vllm"
                self.owner.beside_streams.append((self.path, cut))
                self.owner._interrupts += cut
        routes = {CHAT: self._completion, "/v1/embeddings": self._embeddings}
        if self.owner.tokenizer_pages and self.owner.flavor in ("llamacpp", "vllm"):
            routes["/tokenize"] = self._tokenize
        if self.owner.tokenizer_pages and self.owner.flavor == "llamacpp":
            routes["/apply-template"] = self._apply_template
        handler = routes.get(self.path)
        if handler is None:
            self._oerror(404, "File Not Found", "not_found_error")
            return
        fault = self._fault(self.path)
        if fault and fault.kind == "http500":
            return
        handler(body, fault)

    def _embeddings(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner, name = self.owner, body.get("model", "")
        if owner.model(name) is None:
            self._oerror(404, f"The model `{name}` does not exist.", code="model_not_found")
            return
        texts = [body["input"]] if isinstance(body.get("input"), str) else list(body.get("input") or [])
        owner.embeds.append(body)
        count = sum(owner.count(t) for t in texts)
        self._json(200, {"object": "list", "model": name, "usage": {"prompt_tokens": count, "total_tokens": count},
                         "data": [{"object": "embedding", "index": i, "embedding": embed_vector(t)}
                                  for i, t in enumerate(texts)]})

    def _refused(self, record: ChatRecord, prompt: int, max_tokens: int) -> bool:
        """Whether the prompt is over the window (answered 400 in the flavor's words)."""
        n_ctx = self.owner.n_ctx
        wanted = prompt + (max_tokens if self.owner.flavor == "vllm" else 0)
        if wanted <= n_ctx and prompt < n_ctx:
            return False
        record.refused, record.status = True, 400
        if self.owner.flavor == "vllm":
            self._oerror(400, f"This model's maximum context length is {n_ctx} tokens. However, you requested "
                              f"{wanted} tokens ({prompt} in the messages, {max_tokens} in the completion). "
                              "Please reduce the length of the messages or completion.", "BadRequestError")
        else:
            self._oerror(400, "the request exceeds the available context size, try increasing it",
                         "exceed_context_size_error", n_prompt_tokens=prompt, n_ctx=n_ctx)
        return True

    def _completion(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner, name = self.owner, body.get("model", "")
        m = owner.model(name)
        if m is None:
            self._oerror(404, f"The model `{name}` does not exist.", code="model_not_found")
            return
        messages, why = ollama_shaped(body.get("messages") or [])
        if why:
            owner.orphans.append(why)
            self._oerror(400, why)
            return
        if any(msg.get("images") for msg in messages) and not m.image_tokens:
            self._oerror(400, "image input is not supported by this model")
            return
        tools = body.get("tools") or None
        prompt = owner.prompt_tokens(messages, tools, m.image_tokens)
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        record = ChatRecord(body=body, num_ctx=owner.n_ctx, num_ctx_sent=False, prompt_tokens=prompt,
                            kept_messages=len(messages), truncated=False, refused=False)
        with owner._lock:
            owner.chats.append(record)
        if self._refused(record, prompt, max_tokens):
            return
        # a one-token read (how ctxkeepd counts a prompt) is no answer: the script waits
        reply = "The" if max_tokens == 1 else owner.next_reply(messages, bool(tools), bool(body.get("response_format")))
        calls: list[dict[str, Any]] = []
        if isinstance(reply, dict):
            calls, reply = reply["tool_calls"], reply.get("content", "")
        room = owner.n_ctx - prompt if not max_tokens else min(max_tokens, owner.n_ctx - prompt)
        finish = "tool_calls" if calls else "stop"
        if owner.count(reply) > room:
            words = reply.split(" ")
            while words and owner.count(" ".join(words)) > room:
                words = words[:-1]
            reply, finish = " ".join(words), "length"
        thinking = f"Thinking about: {messages[-1].get('content', '')[:40]}" if m.thinking else ""
        usage = {"prompt_tokens": prompt, "completion_tokens": owner.count(reply),
                 "total_tokens": prompt + owner.count(reply)}
        # the prompt cache, as each server says it: vLLM (and OpenAI) in usage, llama.cpp's
        # server as `timings` on the last chunk
        cached = owner.cache_counts(json.dumps(messages), prompt).get("prompt_eval_cached_count", 0)
        if owner.flavor == "vllm":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}  # type: ignore[assignment]
        written = owner.count(reply)
        self.timings = {"cache_n": cached, "prompt_n": prompt - cached, "prompt_ms": (prompt - cached) * owner.ms_per_read,
                        "predicted_n": written, "predicted_ms": written * owner.ms_per_write} \
            if owner.flavor == "llamacpp" else None
        ids = [f"call_{uuid.uuid4().hex[:8]}" for _ in calls]
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            if calls:
                message["tool_calls"] = [{"id": i, "type": "function", "function": {
                    "name": c["function"]["name"], "arguments": json.dumps(c["function"]["arguments"])}}
                    for i, c in zip(ids, calls)]
            if thinking:
                message["reasoning_content"] = thinking
            self._json(200, {"id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
                             "model": m.name, "usage": usage,
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                             **({"timings": self.timings} if self.timings else {})})
            return
        self._stream(m.name, reply, thinking, calls, ids, finish,
                     usage if (body.get("stream_options") or {}).get("include_usage") else None, fault)

    def _event(self, payload: Any) -> None:
        data = b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, model: str, reply: str, thinking: str, calls: list[dict[str, Any]], ids: list[str],
                finish: str, usage: dict[str, int] | None, fault: Fault | None) -> None:
        owner = self.owner
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"reasoning_content": p} for p in (split_stream(thinking) if thinking else [])]
        deltas += [{"content": p} for p in split_stream(reply) if p]
        for n, (call, cid) in enumerate(zip(calls, ids)):
            arguments = json.dumps(call["function"]["arguments"])
            half = len(arguments) // 2
            deltas.append({"tool_calls": [{"index": n, "id": cid, "type": "function",
                                           "function": {"name": call["function"]["name"], "arguments": arguments[:half]}}]})
            deltas.append({"tool_calls": [{"index": n, "function": {"arguments": arguments[half:]}}]})
        base = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        with owner._lock:
            owner._streaming += 1
            interrupts = owner._interrupts
        try:
            for sent, delta in enumerate(deltas):
                if fault and fault.kind == "drop" and sent >= fault.after_chunks or owner._interrupts != interrupts:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if sent == 1 and owner.first_token_delay is not None:
                    time.sleep(owner.first_token_delay)
                elif owner.chunk_delay:
                    time.sleep(owner.chunk_delay)
                self._event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            last = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
            self._event({**last, "timings": self.timings} if getattr(self, "timings", None) else last)
            if usage is not None and owner.usage_in_stream:
                self._event({**base, "choices": [], "usage": usage})
            self._event(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        finally:
            with owner._lock:
                owner._streaming -= 1
