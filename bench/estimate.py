"""Token estimate error: the calibrated estimator vs chars/4, on a long mixed transcript.

    python bench/estimate.py [--turns 200]

The transcript alternates English prose (this repository's docs) and code (its
Python sources), user and assistant; the exact count of every prompt comes
from the stand-in's tokenizer over the rendered chat template, as Ollama's
prompt_eval_count would. Before each turn the next prompt is estimated as the
daemon does (anchored on the last exact count), and its new message alone as a
fresh session would; then the estimator learns the exact counts. Prints one JSON
line per method and content mix.
"""

import argparse
import random
import statistics
import tempfile
from pathlib import Path

from common import emit

from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.features import prompt_features
from ctxkeep.daemon.store.prompt_count import Anchor
from ctxkeep.daemon.store.store import Store
from ollama_standin import count_tokens, render

REPO = Path(__file__).resolve().parent.parent


def corpus() -> tuple[list[str], list[str]]:
    prose = [p for f in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
             for p in f.read_text().split("\n\n") if len(p) > 100 and not p.startswith(("|", "```", "<", ">"))]
    code = [c for f in sorted(REPO.glob("*/*.py")) for c in f.read_text().split("\n\n\n") if len(c) > 100]
    return prose, code


def run(mix: str, turns: int, seed: int) -> dict[str, list[float]]:
    """One session's turns as the daemon estimates them: each prompt anchored on the last
    exact count (only the answer and the new question estimated), and each new question
    alone as a fresh session would estimate it (no anchor), against chars/4."""
    prose, code = corpus()
    pick = {"prose": lambda r, i: r.choice(prose), "code": lambda r, i: r.choice(code),
            "mixed": lambda r, i: r.choice(prose if i % 2 else code)}[mix]
    rng = random.Random(seed)
    store = Store.open(Path(tempfile.mkdtemp(prefix="ckest")) / "store")
    estimator = Estimator(store)
    session = store.sessions.create(name="bench", model="m", system="You are a helpful assistant.",
                                   options={}, num_ctx=32768)
    messages = [{"role": "system", "content": session.system}]
    errors: dict[str, list[float]] = {"anchored prompt": [], "new message alone": [], "chars/4": []}
    for i in range(turns):
        question = pick(rng, i)[:1200]
        messages.append({"role": "user", "content": question})
        exact = count_tokens(render(messages))
        features = prompt_features(messages)
        estimate = estimator.of_features(session, features)
        alone = [{"role": "user", "content": question}]
        if i >= 5:  # after a few turns of calibration
            errors["anchored prompt"].append(abs(estimate.tokens - exact) / exact)
            single = count_tokens(render(alone))
            errors["new message alone"].append(abs(estimator.prompt("m", alone) - single) / single)
            chars = sum(len(m["content"]) for m in messages) / 4
            errors["chars/4"].append(abs(chars - exact) / exact)
        answer = pick(rng, i + 1)[:1200]
        estimator.save(estimator.observe(session, features, exact, estimate,
                                         [(answer, count_tokens(answer))]))
        session.anchor = Anchor(tokens=exact, features=list(features), model="m")
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
