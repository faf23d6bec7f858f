"""Counting a text's features (what every estimate starts from) against their definition, the
regular expressions, on texts of several kinds, in the same run.

    python bench/features.py [--n 300]

Each text is about 5,000 characters: what a turn's checkpoints hold in a long chat (their block
is estimated again each turn) or a long message. One JSON line per text: the fast path's and the
expressions' median time per text, and whether the two counts are the same.
"""

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from common import emit

from ctxkeep.daemon.tokens import by_expressions, text_features

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def texts() -> dict[str, str]:
    """Texts of each kind, ~5,000 characters each."""
    ascii_prose = README.encode("ascii", "ignore").decode()[:5000]
    return {
        "ascii prose": ascii_prose,
        "prose with dashes and quotes (a model's summary)": README[:5000],
        "accented Latin (German, French)": ("Größe und Übermaß für die Straße, 42 € — "
                                            "un café naïf à côté de l'hôtel. ") * 60,
        "Cyrillic": "Привет! Как дела? Это сообщение номер 123, и оно довольно длинное. " * 75,
        "Chinese": "我们今天去公园散步，天气很好，然后在湖边吃了午饭。" * 200,
    }


def timed(count: Callable[[str], object], text: str, n: int) -> float:
    """The median seconds of one count."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        count(text)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="counts of each text by each way")
    args = parser.parse_args()
    for kind, text in texts().items():
        fast, expressions = timed(text_features, text, args.n), timed(by_expressions, text, args.n)
        emit(bench="features", text=kind, chars=len(text), fast_us=round(fast * 1e6, 1),
             expressions_us=round(expressions * 1e6, 1), speedup=round(expressions / fast, 1),
             same=text_features(text) == by_expressions(text))


if __name__ == "__main__":
    main()
