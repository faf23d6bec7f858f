"""What the OpenAI-compatible stand-in (openai_standin.py) shares between its chat and its
counting pages: OpenAI's messages as the template reads them, and llama.cpp's and vLLM's
pages that count a prompt before it is sent (`/apply-template`, `/tokenize`)."""

from __future__ import annotations

import json
from typing import Any

from ollama_standin import Fault, render


def ollama_shaped(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """OpenAI's messages as the template reads them (Ollama's shape: text, base64 images,
    calls with object arguments, tool results named), and why they are refused ("")."""
    out, names = [], {}
    for i, m in enumerate(messages):
        content = m.get("content")
        images = []
        if isinstance(content, list):
            images = [p["image_url"]["url"].split(",", 1)[1] for p in content if p.get("type") == "image_url"]
            content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        shaped: dict[str, Any] = {"role": m.get("role", "user"), "content": content or ""}
        if images:
            shaped["images"] = images
        if m.get("tool_calls"):
            shaped["tool_calls"] = []
            for call in m["tool_calls"]:
                names[call["id"]] = call["function"]["name"]
                shaped["tool_calls"].append({"function": {"name": call["function"]["name"],
                                                          "arguments": json.loads(call["function"]["arguments"])}})
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in names:
                return [], f"messages[{i}]: tool_call_id {m.get('tool_call_id')!r} answers no call"
            shaped["tool_name"] = names[m["tool_call_id"]]
        out.append(shaped)
    return out, ""


class CountingPages:
    """The counting pages of the stand-in's request handler (mixed into it)."""

    def _templated(self, body: dict[str, Any]) -> str | None:
        """The prompt the chat template writes for the body's messages (None: refused)."""
        messages, why = ollama_shaped(body.get("messages") or [])
        if why:
            self._oerror(400, why)
            return None
        if self.owner.drops_system:
            messages = [m for m in messages if m.get("role") != "system"]
        return render(messages, body.get("tools") or None)

    def _apply_template(self, body: dict[str, Any], fault: Fault | None) -> None:
        prompt = self._templated(body)
        if prompt is not None:
            self._json(200, {"prompt": prompt})

    def _tokenize(self, body: dict[str, Any], fault: Fault | None) -> None:
        """llama.cpp's (`content`: its tokens; no content: none) or vLLM's (`messages`:
        the templated prompt's `count` and tokens)."""
        owner = self.owner
        if owner.flavor == "vllm" and "messages" in body:
            prompt = self._templated(body)
            if prompt is not None:
                n = owner.count(prompt)
                owner.counted.append(n)
                self._json(200, {"count": n, "max_model_len": owner.n_ctx, "tokens": list(range(n))})
            return
        content = body.get("content")
        n = owner.count(content) if isinstance(content, str) and content else 0
        if n:
            owner.counted.append(n)
        self._json(200, {"tokens": list(range(n))})
