"""What the Ollama stand-in (ollama_standin.py) serves and how it reads a prompt: its models,
the chat template, its two tokenizers (neither chars/4), the faults it can be told to make,
and what it records of each chat request."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

SPECIAL = re.compile(r"<\|im_start\|>|<\|im_end\|>")
DEFAULT_NUM_CTX = 4096


#: A word of n letters is ceil(n/4) tokens: as many as its runs of up to four letters.
LETTER_RUNS = re.compile(r"[A-Za-z]{1,4}")
#: Every other character but a blank is a token: a digit, a symbol, a newline, another script's.
SINGLES = re.compile(r"[^\sA-Za-z]|\n")


def count_tokens(text: str) -> int:
    """Tokens of `text`: special tokens 1, letters ceil(n/4) per word, digit/symbol/newline 1.
    What lies between special tokens is counted apart (no word spans one) and remembered:
    the stand-in counts every prompt it is sent, each mostly the messages of the one before."""
    between = SPECIAL.split(text)
    return len(between) - 1 + sum(map(_count_plain, between))


@functools.lru_cache(maxsize=2048)
def _count_plain(text: str) -> int:
    return len(LETTER_RUNS.findall(text)) + len(SINGLES.findall(text))


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


def model_details(m: Model) -> dict[str, Any]:
    """A model's `details`, as /api/tags and /api/show give them."""
    return {"parent_model": "", "format": "gguf", "family": m.family, "families": [m.family],
            "parameter_size": m.parameter_size, "quantization_level": "Q4_K_M"}


def model_entry(m: Model) -> dict[str, Any]:
    """A model as /api/tags lists it."""
    return {"name": m.name, "model": m.name, "modified_at": now(), "size": 4_700_000_000,
            "digest": hashlib.sha256(m.name.encode()).hexdigest(), "details": model_details(m)}


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def embed_vector(text: str, dims: int = 64) -> list[float]:
    """A deterministic unit vector: hashed bag of lower-cased words."""
    vec = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec[h % dims] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]
