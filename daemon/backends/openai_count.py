"""A prompt's exact token count from an OpenAI-compatible server before it is sent, by the
model's own tokenizer and chat template:

- vLLM: `POST /tokenize` with the messages answers their `count`;
- llama.cpp's server: `POST /apply-template` writes the prompt as the template does, and
  `POST /tokenize` of that prompt (`add_special`, `parse_special`, as a chat request is
  read) gives its tokens;
- a server with neither (llama-cpp-python, LM Studio) is asked the count by reading the
  prompt: one token of answer, `usage.prompt_tokens`. That costs one reading of the prompt,
  which stays in the server's prompt cache for the turn that follows.

Which way a server counts is found once (the first way that answers), then kept."""

import logging
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)


class PromptCounter:
    """How one server counts a prompt; `count` returns None where it cannot."""

    def __init__(self, root: str, where: str) -> None:
        #: The server's own address (where /tokenize and /apply-template are).
        self.root = root
        self.where = where
        #: "vllm", "llamacpp" or "reading" once found.
        self.way = ""

    async def count(self, client: Any, model_id: str, sent: Sequence[Mapping[str, Any]],
                    tools: list[dict[str, Any]] | None) -> int | None:
        """The prompt's tokens as the server will count them, or None (the server could not
        say: it refused the prompt, or is not there)."""
        offered = {"tools": tools} if tools else {}
        body = {"model": model_id, "messages": list(sent), **offered}
        for way in [self.way] if self.way else ["vllm", "llamacpp", "reading"]:
            try:
                found = await getattr(self, f"_{way}")(client, body)
            except Exception as exc:  # a server without the page: the next way
                log.debug("%s: counting by %s failed: %s", self.where, way, exc)
                continue
            if found is not None:
                if not self.way:
                    log.info("%s counts prompts before they are sent (%s)", self.where, way)
                self.way = way
                return found
        return None

    async def _vllm(self, client: Any, body: dict[str, Any]) -> int | None:
        found = await client.post(f"{self.root}/tokenize", body=body, cast_to=object)
        count = found.get("count") if isinstance(found, dict) else None
        return count if isinstance(count, int) and count > 0 else None

    async def _llamacpp(self, client: Any, body: dict[str, Any]) -> int | None:
        templated = await client.post(f"{self.root}/apply-template",
                                      body={k: v for k, v in body.items() if k != "model"}, cast_to=object)
        prompt = templated.get("prompt") if isinstance(templated, dict) else None
        if not isinstance(prompt, str) or not prompt:
            return None
        found = await client.post(f"{self.root}/tokenize", cast_to=object,
                                  body={"content": prompt, "add_special": True, "parse_special": True})
        tokens = found.get("tokens") if isinstance(found, dict) else None
        return len(tokens) if isinstance(tokens, list) and tokens else None

    async def _reading(self, client: Any, body: dict[str, Any]) -> int | None:
        answer = await client.chat.completions.create(**body, stream=False, max_tokens=1)
        usage = getattr(answer, "usage", None)
        count = int(usage.prompt_tokens) if usage is not None and usage.prompt_tokens else 0
        return count or None
