"""Token estimate error: the calibrated estimator vs chars/4, on a long mixed transcript.

    python bench/estimate.py [--turns 200]

The transcript alternates English prose (this repository's docs) and code (its
Python sources), user and assistant; the exact count of every prompt comes
from the stand-in's tokenizer over the rendered chat template, as Ollama's
prompt_eval_count would. Before each turn the next prompt is estimated, then
the estimator sees the exact counts (as the daemon does after every turn).
Prints one JSON line per method and content mix.
"""

import argparse
import random
import statistics
import tempfile
from pathlib import Path

from common import emit
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.features import prompt_features
from ctxkeep.daemon.store.store import Store
from ollama_standin import count_tokens, render

REPO = Path(__file__).resolve().parent.parent


def corpus() -> tuple[list[str], list[str]]:
    prose = [p for f in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
             for p in f.read_text().split("\n\n") if len(p) > 100 and not p.startswith(("|", "```", "<", ">"))]
    code = [c for f in sorted(REPO.glob("*/*.py")) for c in f.read_text().split("\n\n\n") if len(c) > 100]
    return prose, code


def run(mix: str, turns: int, seed: int) -> dict[str, list[float]]:
    prose, code = corpus()
    pick = {"prose": lambda r, i: r.choice(prose), "code": lambda r, i: r.choice(code),
            "mixed": lambda r, i: r.choice(prose if i % 2 else code)}[mix]
    rng = random.Random(seed)
    estimator = Estimator(Store(Path(tempfile.mkdtemp(prefix="ckest")) / "store"))
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    errors: dict[str, list[float]] = {"calibrated": [], "chars/4": []}
    for i in range(turns):
        messages.append({"role": "user", "content": pick(rng, i)[:1200]})
        exact = count_tokens(render(messages))
        estimate = estimator.prompt("m", messages)
        if i >= 5:  # after a few turns of calibration
            errors["calibrated"].append(abs(estimate - exact) / exact)
            chars = sum(len(m["content"]) for m in messages) / 4
            errors["chars/4"].append(abs(chars - exact) / exact)
        answer = pick(rng, i + 1)[:1200]
        estimator.observe("m", prompt_features(messages), exact, estimate,
                          [(answer, count_tokens(answer))])
        messages.append({"role": "assistant", "content": answer})
        if count_tokens(render(messages)) > 24000:  # keep it a plausible window: drop the oldest turn
            del messages[1:3]
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for mix in ("mixed", "prose", "code"):
        for method, errs in run(mix, args.turns, args.seed).items():
            emit(bench="estimate", content=mix, method=method, turns=len(errs),
                 mean_error_pct=round(100 * statistics.fmean(errs), 2),
                 p95_error_pct=round(100 * sorted(errs)[int(0.95 * len(errs))], 2),
                 max_error_pct=round(100 * max(errs), 2))


if __name__ == "__main__":
    main()
