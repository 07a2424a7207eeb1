"""Fit the detector's learned layer (pure standard library, deterministic).

    python -m ichor.detect_fit --data ../shared/data/corrections-dev.jsonl --out ichor/data/detector.json

Logistic regression over the binary features of ``ichor.detect.features``.  To keep it from
memorising one log's phrasing, a feature is kept only if it occurs in windows from at least
``min_sources`` different source repositories.  The operating threshold is chosen from
leave-one-source-out predictions (each source scored by a model that never saw it) as the lowest
threshold whose pooled precision reaches ``target_precision``; the shipped weights are then fitted
on every window.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .detect import (
    STRONG_RULES,
    Detection,
    Window,
    decide,
    detect_with,
    features,
    gate,
    learned_only,
    rule_hits,
    rules_only,
)
from .evaluate import evaluate, format_report


@dataclass
class FitConfig:
    l2: float = 0.3
    epochs: int = 20
    learning_rate: float = 0.1
    min_sources: int = 3
    pos_weight: float = 1.0
    target_precision: float = 0.93
    seed: int = 13
    held_out_fraction: float = 0.25
    residual: bool = False  # train only on windows that no gate or strong rule decides


# ----------------------------------------------------------------------------------- data split


def load_rows(path: str | Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise ValueError(f"{path}:{n}: not JSON ({exc})") from None
    return rows


def source_of(row: dict) -> str:
    return str(row.get("source", "")).split("@", 1)[0]


def held_out_sources(rows: list[dict], fraction: float = 0.25) -> set[str]:
    """Sources in a fixed pseudo-random order (sha1 of the name); the first ones up to ``fraction`` of rows."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[source_of(row)] = counts.get(source_of(row), 0) + 1
    chosen, total = set(), 0
    for src in sorted(counts, key=lambda s: hashlib.sha1(s.encode()).hexdigest()):
        if total >= fraction * len(rows):
            break
        chosen.add(src)
        total += counts[src]
    return chosen


def split_by_source(rows: list[dict], fraction: float = 0.25) -> tuple[list[dict], list[dict]]:
    held = held_out_sources(rows, fraction)
    return [r for r in rows if source_of(r) not in held], [r for r in rows if source_of(r) in held]


# -------------------------------------------------------------------------------------- fitting


def _window(row: dict) -> Window:
    return Window.of(row.get("prev_user"), row.get("prev_assistant"), row.get("user"), row.get("assistant"))


def featurise(rows: list[dict]) -> list[list[str]]:
    out = []
    for row in rows:
        w = _window(row)
        out.append(sorted(set(features(w, rule_hits(w)))))
    return out


def _kept_features(feats: list[list[str]], rows: list[dict], min_sources: int) -> list[str]:
    seen: dict[str, set] = {}
    for fs, row in zip(feats, rows, strict=False):
        for f in fs:
            seen.setdefault(f, set()).add(source_of(row))
    return sorted(f for f, srcs in seen.items() if len(srcs) >= min_sources or f == "bias")


def _undecided(rows: list[dict]) -> list[bool]:
    """Windows left to the learned layer: no gate and no strong rule decides them."""
    out = []
    for row in rows:
        w = _window(row)
        out.append(gate(w) is None and not any(h in STRONG_RULES for h in rule_hits(w)))
    return out


def train(rows: list[dict], cfg: FitConfig, feats: list[list[str]] | None = None) -> dict[str, float]:
    """L2-regularised logistic regression by seeded Adagrad SGD; returns {feature: weight}."""
    feats = featurise(rows) if feats is None else feats
    if cfg.residual:
        keep = _undecided(rows)
        rows = [r for r, k in zip(rows, keep, strict=False) if k]
        feats = [f for f, k in zip(feats, keep, strict=False) if k]
    vocab = {f: i for i, f in enumerate(_kept_features(feats, rows, cfg.min_sources))}
    data = [
        ([vocab[f] for f in fs if f in vocab], 1.0 if row.get("is_correction") else 0.0)
        for fs, row in zip(feats, rows, strict=False)
    ]
    w = [0.0] * len(vocab)
    g2 = [1e-8] * len(vocab)
    rng = random.Random(cfg.seed)
    order = list(range(len(data)))
    for _ in range(cfg.epochs):
        rng.shuffle(order)
        for i in order:
            idx, y = data[i]
            z = max(-30.0, min(30.0, sum(w[j] for j in idx)))
            p = 1.0 / (1.0 + math.exp(-z))
            err = (p - y) * (cfg.pos_weight if y else 1.0)
            for j in idx:
                g = err + cfg.l2 * w[j]
                g2[j] += g * g
                w[j] -= cfg.learning_rate * g / math.sqrt(g2[j])
    names = sorted(vocab, key=vocab.get)
    return {f: round(w[vocab[f]], 5) for f in names if abs(w[vocab[f]]) >= 1e-4}


def oof_scores(rows: list[dict], cfg: FitConfig) -> list[float]:
    """Leave-one-source-out scores: each window scored by a model that never saw its source."""
    feats = featurise(rows)
    scores = [0.0] * len(rows)
    for src in sorted({source_of(r) for r in rows}):
        train_idx = [i for i, r in enumerate(rows) if source_of(r) != src]
        weights = train([rows[i] for i in train_idx], cfg, [feats[i] for i in train_idx])
        for i, r in enumerate(rows):
            if source_of(r) == src:
                scores[i] = _score(feats[i], weights)
    return scores


def _score(fs: list[str], weights: dict[str, float]) -> float:
    z = max(-30.0, min(30.0, sum(weights.get(f, 0.0) for f in fs)))
    return 1.0 / (1.0 + math.exp(-z))


def _prepare(rows: list[dict]) -> list[tuple]:
    prepared = []
    for row in rows:
        w = _window(row)
        prepared.append((w, gate(w), rule_hits(w)))
    return prepared


def combined_kinds(rows: list[dict], scores: list[float], threshold: float, prepared=None) -> list[str]:
    """What detect() would answer for each window, given each window's learned score."""
    prepared = _prepare(rows) if prepared is None else prepared
    return [
        gated.kind if gated else decide(w, hits, score, threshold).kind
        for (w, gated, hits), score in zip(prepared, scores, strict=False)
    ]


def pick_threshold(rows: list[dict], scores: list[float], target: float) -> float:
    """The lowest threshold at which the whole detector's pooled precision still reaches ``target``."""
    labels = [bool(r.get("is_correction")) for r in rows]
    prepared = _prepare(rows)
    best = 0.99
    for t in sorted({round(s, 4) for s in scores if s >= 0.05}, reverse=True):
        kinds = combined_kinds(rows, [s + 1e-9 for s in scores], t, prepared)
        chosen = [y for k, y in zip(kinds, labels, strict=False) if k != "none"]
        if chosen and sum(chosen) / len(chosen) >= target:
            best = t
    return best


def fit(rows: list[dict], cfg: FitConfig) -> dict:
    """Threshold from grouped CV, weights from every row."""
    scores = oof_scores(rows, cfg)
    threshold = pick_threshold(rows, scores, cfg.target_precision)
    return {
        "version": 1,
        "threshold": round(threshold, 4),
        "config": asdict(cfg),
        "trained_on": len(rows),
        "weights": train(rows, cfg),
    }


def held_out_model(rows: list[dict], cfg: FitConfig) -> tuple[dict, list[dict]]:
    """A model fitted (threshold included) without the held-out sources, and those held-out rows."""
    train_rows, test_rows = split_by_source(rows, cfg.held_out_fraction)
    return fit(train_rows, cfg), test_rows


def _learned_threshold(rows: list[dict], scores: list[float], target: float) -> float:
    """Threshold for the learned layer on its own (gates + score, no rules)."""
    labels = [bool(r.get("is_correction")) for r in rows]
    best = 0.99
    for t in sorted({round(s, 4) for s in scores if s >= 0.05}, reverse=True):
        chosen = [y for s, y in zip(scores, labels, strict=False) if s >= t]
        if chosen and sum(chosen) / len(chosen) >= target:
            best = t
    return best


def _fixed(kinds: list[str]):
    """A detector replaying precomputed answers in row order (for pooled cross-validation figures)."""
    answers = iter(kinds)

    def run(*_):
        k = next(answers)
        return Detection(k, None if k == "none" else "x", 0.0)

    return run


def layer_report(rows: list[dict], cfg: FitConfig) -> dict[str, dict]:
    """Rules alone, learned alone and combined: on the held-out sources and in leave-one-source-out CV."""
    out = {}
    held, test_rows = held_out_model(rows, cfg)
    train_rows = [r for r in rows if r not in test_rows]
    alone = dict(held, threshold=_learned_threshold(train_rows, oof_scores(train_rows, cfg), cfg.target_precision))
    out["held-out: rules alone"] = evaluate(test_rows, rules_only)
    out["held-out: learned alone"] = evaluate(test_rows, learned_only(alone))
    out["held-out: combined"] = evaluate(test_rows, detect_with(held))
    scores = oof_scores(rows, cfg)
    prepared = _prepare(rows)
    combined_t = pick_threshold(rows, scores, cfg.target_precision)
    alone_t = _learned_threshold(rows, scores, cfg.target_precision)
    alone_kinds = [
        g.kind if g else ("correction" if s >= alone_t else "none")
        for (w, g, h), s in zip(prepared, scores, strict=False)
    ]
    out["grouped CV: rules alone"] = evaluate(rows, rules_only)
    out["grouped CV: learned alone"] = evaluate(rows, _fixed(alone_kinds))
    out["grouped CV: combined"] = evaluate(rows, _fixed(combined_kinds(rows, scores, combined_t, prepared)))
    return out


# ------------------------------------------------------------------------------------------ CLI


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ichor.detect_fit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="labelled windows (JSON lines, dev-set format)")
    parser.add_argument("--out", required=True, help="where to write the weights JSON")
    parser.add_argument("--report", action="store_true", help="also print held-out and grouped-CV figures")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = FitConfig()
    try:
        rows = load_rows(args.data)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    model = fit(rows, cfg)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: {len(model['weights'])} weights, threshold {model['threshold']}")
    if args.report:
        print("held-out sources: " + ", ".join(sorted(held_out_sources(rows, cfg.held_out_fraction))))
        for name, metrics in layer_report(rows, cfg).items():
            print(f"\n## {name}\n{format_report(metrics)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
