"""The trained detector's linear model: load the weights, score a window (pure Python, no numpy).

Features are named by strings (``ichor.detect_features``) and looked up by a stable 20-bit hash of the
name, so a profile's recorded decisions keep hashed feature ids only, never the text they came from.
The model file holds one linear model per input shape: ``reply`` (the assistant's reply to the
message is known, as in the Hermes hook) and ``no_reply`` (only the message and the turn before).
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from functools import lru_cache
from pathlib import Path

from . import datadir
from .package_data import load_json

HASH_BITS = 20
SHIPPED = "detector.json"  # in ichor/data
_MAPS = ("weights", "precision")  # per-feature maps, keyed by hashed id


def feature_id(name: str) -> int:
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) & ((1 << HASH_BITS) - 1)


def feature_ids(names: list[str]) -> list[int]:
    """Distinct hashed ids of a window's features (binary features: a repeat counts once)."""
    return sorted({feature_id(n) for n in names})


def score(ids: list[int], linear: dict) -> float:
    """P(correction) of a window's hashed features under one linear model."""
    weights = linear["weights"]
    z = linear["bias"] + sum(weights.get(i, 0.0) for i in ids)
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def parse(model: dict) -> dict:
    """JSON keys are strings: turn each linear model's weight keys back into hashed ids."""
    out = dict(model)
    out["models"] = {
        name: dict(linear, **{key: {int(k): float(v) for k, v in linear.get(key, {}).items()} for key in _MAPS})
        for name, linear in model["models"].items()
    }
    return out


def dump(model: dict, path: Path) -> None:
    """Write a model with its weights keyed by id, in id order (stable diffs)."""
    out = dict(model)
    out["models"] = {
        name: dict(linear, **{key: {str(k): round(v, 6) for k, v in sorted(linear[key].items())} for key in _MAPS})
        for name, linear in model["models"].items()
    }
    # Readable by all: the shipped model is package data (a profile's sits in its private folder).
    datadir.write_file(path, json.dumps(out, sort_keys=True, ensure_ascii=False) + "\n", mode=0o644)


@lru_cache(maxsize=1)
def shipped() -> dict:
    return parse(load_json(SHIPPED))


def fingerprint(model: dict) -> str:
    """Names a model's weights and thresholds: what a profile's refit was made from."""
    canonical = json.dumps(model["models"], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=1)
def shipped_fingerprint() -> str:
    return fingerprint(shipped())


def is_stale(model: dict) -> bool:
    """A profile's refit of an older shipped model: a new release's model (and features) replace it."""
    refit = model.get("refit")
    return isinstance(refit, dict) and refit.get("base") != shipped_fingerprint()


@lru_cache(maxsize=8)
def _from_file(path: str, mtime_ns: int) -> dict:
    return parse(json.loads(Path(path).read_text(encoding="utf-8")))


def load(path: str | Path | None = None) -> dict:
    """A profile's refitted model when ``path`` names a readable one refitted from this release's shipped
    model, else the shipped model."""
    if path is not None:
        try:
            model = _from_file(str(path), Path(path).stat().st_mtime_ns)
            if _complete(model) and not is_stale(model):
                return model
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    return shipped()


_LINEAR_KEYS = ("bias", "weights", "families", "thresholds")


def _complete(model: dict) -> bool:
    """Whether a model file has every entry and operating point the shipped model has."""
    linears = model["models"]
    return all(
        all(key in linears[name] for key in _LINEAR_KEYS)
        and set(shipped()["models"][name]["thresholds"]) <= set(linears[name]["thresholds"])
        for name in shipped()["models"]
    )


def threshold(linear: dict, point: str | float) -> float:
    """A named operating point ("standalone" | "candidate") or an explicit probability."""
    if isinstance(point, str):
        return float(linear["thresholds"][point])
    return float(point)
