"""Score a detector on labelled windows: precision, recall and F1 with 95% Wilson intervals.

Rows use the dev set's format: ``prev_user``, ``prev_assistant``, ``user``, ``assistant`` and the
gold ``kind`` ("correction" | "retry" | "none"; ``is_correction`` is used when ``kind`` is absent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from .detect import detect
from .language import language_group

POSITIVE_KINDS = ("correction", "retry")


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (0, 1 when n is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def gold_kind(row: dict) -> str:
    kind = row.get("kind")
    if kind in POSITIVE_KINDS or kind == "none":
        return kind
    return "correction" if row.get("is_correction") else "none"


def _ratio(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    return {"value": k / n if n else 0.0, "k": k, "n": n, "lo": lo, "hi": hi}


def _f1(precision: dict, recall: dict) -> float:
    p, r = precision["value"], recall["value"]
    return 2 * p * r / (p + r) if p + r else 0.0


def _block(tp: int, fp: int, fn: int, tn: int | None = None) -> dict:
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    block = {"precision": precision, "recall": recall, "f1": _f1(precision, recall), "tp": tp, "fp": fp, "fn": fn}
    if tn is not None:
        block["tn"] = tn
    return block


def evaluate(rows: Iterable[dict], detector: Callable = detect) -> dict:
    """Overall (is_correction) and per-kind metrics of ``detector`` on labelled rows."""
    pairs = []
    for row in rows:
        got = detector(row.get("prev_user"), row.get("prev_assistant"), row.get("user"), row.get("assistant"))
        pairs.append((gold_kind(row), got.kind))
    tp = sum(g != "none" and p != "none" for g, p in pairs)
    fp = sum(g == "none" and p != "none" for g, p in pairs)
    fn = sum(g != "none" and p == "none" for g, p in pairs)
    tn = sum(g == "none" and p == "none" for g, p in pairs)
    metrics: dict[str, Any] = {"n": len(pairs), "overall": _block(tp, fp, fn, tn), "kinds": {}}
    for kind in POSITIVE_KINDS:
        k_tp = sum(g == kind and p == kind for g, p in pairs)
        k_fp = sum(g != kind and p == kind for g, p in pairs)
        k_fn = sum(g == kind and p != kind for g, p in pairs)
        metrics["kinds"][kind] = _block(k_tp, k_fp, k_fn)
    return metrics


def _cell(ratio: dict) -> str:
    return f"{ratio['value']:.3f} [{ratio['lo']:.2f}-{ratio['hi']:.2f}] ({ratio['k']}/{ratio['n']})"


def format_report(metrics: dict) -> str:
    """A plain-text table of the metrics."""
    o = metrics["overall"]
    lines = [
        f"windows: {metrics['n']}   tp {o['tp']}  fp {o['fp']}  fn {o['fn']}  tn {o.get('tn', 0)}",
        f"{'':<12} {'precision (95% Wilson)':<32} {'recall (95% Wilson)':<32} f1",
    ]
    rows = [("overall", o)] + list(metrics["kinds"].items())
    for name, block in rows:
        lines.append(f"{name:<12} {_cell(block['precision']):<32} {_cell(block['recall']):<32} {block['f1']:.3f}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ grouping

SLICES = ("aider logs", "agent transcripts", "dialogue")


def slice_of(row: dict) -> str:
    """Which kind of conversation a labelled window comes from (the shared data's id and source conventions)."""
    if str(row.get("id", "")).startswith("l5-"):
        return "agent transcripts"
    if "#turn" in str(row.get("source", "")):
        return "dialogue"
    return "aider logs"


def grouped_blocks(rows: list[dict], predicted: list[bool]) -> dict[str, dict]:
    """Precision/recall blocks overall, per slice and per language group of the user's message."""
    groups: dict[str, list[tuple[bool, bool]]] = {"all": []}
    for row, pred in zip(rows, predicted, strict=True):
        gold = gold_kind(row) != "none"
        for name in ("all", slice_of(row), language_group(row.get("user", ""))):
            groups.setdefault(name, []).append((gold, pred))
    out = {}
    for name, pairs in groups.items():
        tp = sum(g and p for g, p in pairs)
        fp = sum(p and not g for g, p in pairs)
        fn = sum(g and not p for g, p in pairs)
        out[name] = dict(_block(tp, fp, fn, len(pairs) - tp - fp - fn), n=len(pairs))
    return out


# ------------------------------------------------------------------------------- with stage 2


def evaluate_two_stage(rows: list[dict], complete_fn, timeout: float) -> dict:
    """Stage 1 alone (standalone point) and stage 1 + 2 (candidates confirmed through ``complete_fn``).

    Also the share of windows that reached stage 2, how often it fell back to stage 1 and why, and the
    tokens per confirmation (as reported, or estimated where the endpoint reported no usage).
    """
    from .confirm import Window, stage1, two_stage

    decisions = []

    def both(*texts):
        decisions.append(two_stage(Window(*texts), complete_fn, timeout))
        return decisions[-1]

    alone = evaluate(rows, lambda *texts: stage1(Window(*texts), "standalone"))
    confirmed = evaluate(rows, both)
    asked = [d for d in decisions if d.asked_model]
    tokens = [d.tokens for d in asked if d.tokens is not None]
    reasons: dict[str, int] = {}
    for d in asked:
        if d.reason:
            reasons[d.reason] = reasons.get(d.reason, 0) + 1
    return {
        "stage1": alone,
        "stage1+2": confirmed,
        "reached_stage2": _ratio(len(asked), len(decisions)),
        "fallbacks": reasons,
        "tokens_per_confirmation": sum(tokens) / len(tokens) if tokens else None,
        "tokens_estimated": any(d.tokens_estimated for d in asked),
    }


def format_two_stage(report: dict) -> str:
    reached = report["reached_stage2"]
    fallbacks = ", ".join(f"{k} {v}" for k, v in sorted(report["fallbacks"].items())) or "none"
    tokens = report["tokens_per_confirmation"]
    tokens_text = "n/a" if tokens is None else f"{tokens:.0f}" + (" (estimated)" if report["tokens_estimated"] else "")
    return "\n".join(
        [
            "stage 1 alone (standalone point)",
            format_report(report["stage1"]),
            "",
            "stage 1 + 2 (candidates confirmed by the model)",
            format_report(report["stage1+2"]),
            "",
            f"reached stage 2: {_cell(reached)}   fell back to stage 1: {fallbacks}",
            f"tokens per confirmation: {tokens_text}",
        ]
    )
