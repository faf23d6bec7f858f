"""An agent loop: what a long run of tool calls leaves in the window.

    python bench/agent.py [--steps 200] [--window 8192] [--seed 1]

A session offers one tool; every step the model (the stand-in, scripted) calls it, and the
bench sends back a result of 2,000–8,000 characters (test output, a file, a listing, in
words: about 500–2,000 tokens by the stand-in's tokenizer; results of 2–8k *tokens* would
not let three of them fit an 8,192 window at all), through the real daemon, a process of its own.
After every step the prompt the stand-in received is checked: truncated or refused prompts
(must be 0), tool calls or results sent without their partner (0: the stand-in's template
refuses them), whether the last result (always) and the last three (whenever they fit
beside the reply room) are verbatim, and the tokens level 1 saved
by giving older results as head and tail. Same-run baseline: the same loop sent whole, as
a bare agent would send it — its prompt size per step, and the steps at which Ollama would
have cut it. One JSON line per figure.
"""

import argparse
import random
import shutil
import tempfile
from pathlib import Path

from common import emit

from ctxkeep.daemon.context.shorten import shortened
from ctxkeep.protocol.events import ResponseGeneration
from ctxkeep.protocol.tools import FunctionSpec, ToolResult, ToolSpec
from harness import DaemonProcess
from ollama_standin import OllamaStandin, render

MODEL = "qwen2.5:7b"
RUN = ToolSpec(function=FunctionSpec(name="run", description="Run a shell command",
                                     parameters={"type": "object", "properties": {"cmd": {"type": "string"}}}))
KINDS = ("collected test case number {j} of step {i} and it passed without any warning",
         "    return the handler for request {j} when the step is {i} and the cache is warm",
         "directory listing entry {j} of step {i} owned by the build user with read access")


def result(step: int, rng: random.Random) -> str:
    """A tool's output of 2,000–8,000 characters, its step named on its first line."""
    size, kind, lines = rng.randint(2000, 8000), rng.choice(KINDS), [f"step {step}"]
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(kind.format(i=step, j=len(lines)))
    return "\n".join(lines)


def turn(client, sid: str, **send) -> object:
    """One generation, and whatever compaction follows it: its terminal event."""
    end = client.follow(client.send(sid, **send).generation_id, timeout=60)
    client.settle(sid, timeout=600)
    return end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    standin = OllamaStandin().start()
    root = Path(tempfile.mkdtemp(prefix="ckag", dir="/tmp"))
    daemon = DaemonProcess(root, standin.url, log_level="warning")
    sent: list[str] = []
    verbatim = own = saved = shortened_results = failed = ran = 0
    whole: list[dict] = [{"role": "user", "content": "Find out why the build is slow."}]
    bare_tokens, bare_cut, misses = [], 0, []
    try:
        daemon.start()
        with daemon.client(timeout=60) as c:
            c.subscribe("")
            sid = c.create_session(model=MODEL, name="agent", num_ctx=args.window).session.id
            c.set_tools(sid, [RUN])
            for step in range(args.steps):
                standin.script_tool_call("run", {"cmd": f"step {step}"})
                end = turn(c, sid, text=whole[0]["content"]) if step == 0 else turn(
                    c, sid, tool_results=[ToolResult(tool_name="run", content=sent[-1])])
                if not isinstance(end, ResponseGeneration):  # say why, and stop: the loop is broken
                    emit(bench="agent", failed_at_step=step, code=end.code, message=end.message)
                    failed += 1
                    break
                prompt = [ch for ch in standin.chats if ch.body.get("tools")][-1].body["messages"]
                tools = [m["content"] for m in prompt if m["role"] == "tool"]
                expected = sent[-3:]
                verbatim += tools[-len(expected):] == expected if expected else 1
                own += tools[-1:] == sent[-1:]
                misses.append(end.token_count - end.prompt_estimate)
                ran += 1
                for text in tools:
                    original = next((s for s in sent if s.split("\n", 1)[0] == text.split("\n", 1)[0]), text)
                    if text != original and text == shortened(original):
                        shortened_results += 1
                        saved += standin.count(original) - standin.count(text)
                sent.append(result(step, rng))
                whole += [{"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "run", "arguments": {"cmd": f"step {step}"}}}]},
                    {"role": "tool", "content": sent[-1], "tool_name": "run"}]
                bare_tokens.append(standin.count(render(whole)))
                bare_cut += bare_tokens[-1] > args.window
    finally:
        daemon.stop()
        standin.stop()
        shutil.rmtree(root, ignore_errors=True)
    emit(bench="agent", what="ctxkeepd", steps=ran, window=args.window, failed_turns=failed,
         truncated_prompts=len(standin.truncations), refused_prompts=len(standin.refusals),
         orphaned=len(standin.orphans), last_three_verbatim_pct=round(100 * verbatim / max(1, ran), 1),
         last_verbatim_pct=round(100 * own / max(1, ran), 1),
         level1_shortened_results=shortened_results, level1_tokens_saved=saved,
         level1_tokens_saved_per_prompt=round(saved / max(1, ran)),
         estimate_most_under=max(misses, default=0), estimate_most_over=-min(misses, default=0))
    emit(bench="agent", what="bare loop (all sent whole)", steps=args.steps, window=args.window,
         prompts_ollama_would_cut=bare_cut, last_prompt_tokens=bare_tokens[-1],
         first_cut_at_step=next((i for i, t in enumerate(bare_tokens) if t > args.window), None))


if __name__ == "__main__":
    main()
