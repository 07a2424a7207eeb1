"""Score a detector on labelled windows: precision, recall and F1 with 95% Wilson intervals.

Rows use the dev set's format: ``prev_user``, ``prev_assistant``, ``user``, ``assistant`` and the
gold ``kind`` ("correction" | "retry" | "none"; ``is_correction`` is used when ``kind`` is absent).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import detect_model
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


def f1_of(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _block(tp: int, fp: int, fn: int, tn: int | None = None) -> dict:
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    f1 = f1_of(tp, fp, fn) if tp + fp + fn else None  # no positive said or present: F1 has no value
    block = {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}
    if tn is not None:
        block["tn"] = tn
    return block


def evaluate(rows: Iterable[dict], detector: Callable = detect) -> dict:
    """Overall (is_correction) and per-kind metrics of ``detector`` on labelled rows."""
    rows = list(rows)
    pairs = []
    for row in rows:
        got = detector(row.get("prev_user"), row.get("prev_assistant"), row.get("user"), row.get("assistant"))
        pairs.append((gold_kind(row), got.kind))
    by_source = counts_by_source(rows, [p != "none" for _, p in pairs])
    tp, fp, fn = column_sums(by_source.values())
    overall = dict(_block(tp, fp, fn, len(pairs) - tp - fp - fn), sources=len(by_source))
    overall["f1_interval"] = f1_interval(list(by_source.values()))
    metrics: dict[str, Any] = {"n": len(pairs), "in_sample": seen_in_training(rows), "overall": overall, "kinds": {}}
    for kind in POSITIVE_KINDS:
        k_tp = sum(g == kind and p == kind for g, p in pairs)
        k_fp = sum(g != kind and p == kind for g, p in pairs)
        k_fn = sum(g == kind and p != kind for g, p in pairs)
        metrics["kinds"][kind] = _block(k_tp, k_fp, k_fn)
    return metrics


def _cell(ratio: dict) -> str:
    if not ratio["n"]:
        return f"– ({ratio['k']}/{ratio['n']})"  # a ratio over no window has no value
    return f"{ratio['value']:.3f} [{ratio['lo']:.2f}-{ratio['hi']:.2f}] ({ratio['k']}/{ratio['n']})"


def with_nulls(report):
    """``report`` for JSON output: the value of a ratio over no window is null, not 0."""
    if isinstance(report, dict):
        if {"value", "k", "n"} <= report.keys() and not report["n"]:
            return dict(report, value=None)
        return {key: with_nulls(v) for key, v in report.items()}
    if isinstance(report, list):
        return [with_nulls(v) for v in report]
    return report


IN_SAMPLE = (
    "warning: {seen} of {n} windows come from repositories the shipped detector was fitted on: "
    "figures on them are in-sample, not a measure of quality"
)


def format_report(metrics: dict) -> str:
    """A plain-text table of the metrics."""
    o = metrics["overall"]
    seen = metrics.get("in_sample", 0)
    lines = [IN_SAMPLE.format(seen=seen, n=metrics["n"])] if seen else []
    lines += [
        f"windows: {metrics['n']}   tp {o['tp']}  fp {o['fp']}  fn {o['fn']}  tn {o.get('tn', 0)}",
        f"{'':<12} {'precision (95% Wilson)':<32} {'recall (95% Wilson)':<32} f1",
    ]
    rows = [("overall", o)] + list(metrics["kinds"].items())
    for name, block in rows:
        f1 = "–" if block["f1"] is None else f"{block['f1']:.3f}"
        lines.append(f"{name:<12} {_cell(block['precision']):<32} {_cell(block['recall']):<32} {f1}")
    interval, sources = o.get("f1_interval"), o.get("sources", 0)
    if interval:
        unit = "sources" if sources < metrics["n"] else "windows"
        lines.append(f"overall f1 95% interval [{interval[0]:.2f}-{interval[1]:.2f}], resampling {sources} {unit}")
    else:
        lines.append(f"overall f1: no interval from {sources} sources (fewer than {MIN_SOURCES})")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ grouping

SLICES = ("aider logs", "agent transcripts", "dialogue")


def slice_of(row: dict) -> str:
    """Which kind of conversation a labelled window comes from (the shared data's id and source conventions)."""
    if str(row.get("id", "")).startswith("l5-"):
        return "agent transcripts"
    if "#turn" in source_of(row, whole=True):
        return "dialogue"
    return "aider logs"


def group_names(row: dict) -> tuple[str, str, str]:
    """The groups a window is reported in: all, its slice, and the language group of the user's message."""
    return ("all", slice_of(row), language_group(row.get("user", "")))


def members_by_group(rows: list[dict]) -> dict[str, list[int]]:
    """The indices of the windows in each group a window is reported in (``group_names``), "all" first."""
    members: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        for name in group_names(row):
            members.setdefault(name, []).append(i)
    return members


def grouped_blocks(rows: list[dict], predicted: list[bool]) -> dict[str, dict]:
    """Precision/recall blocks overall, per slice and per language group of the user's message, each with
    its F1's interval over repositories (``f1_interval``)."""
    out = {}
    for name, members in {"all": [], **members_by_group(rows)}.items():
        counts = counts_by_source([rows[i] for i in members], [predicted[i] for i in members])
        tp, fp, fn = column_sums(counts.values())
        block = _block(tp, fp, fn, len(members) - tp - fp - fn)
        out[name] = dict(block, n=len(members), sources=len(counts), f1_interval=f1_interval(list(counts.values())))
    return out


# ------------------------------------------------------------------------- F1 intervals

BOOTSTRAP_RESAMPLES = 2000
# Under this many repositories, resampling them says little about another set of repositories: no interval.
MIN_SOURCES = 10


def source_of(row: dict, whole: bool = False) -> str:
    """The repository a window was cut from (its ``source`` up to "@"; the whole of it with ``whole``): the
    unit every split holds out. No source, or a null one, is ""."""
    source = row.get("source")
    text = "" if source is None else str(source)
    return text if whole else text.split("@", 1)[0]


def source_hash(source: str) -> str:
    """How the shipped model lists the repositories it was fitted on (their names are not ours to ship)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def seen_in_training(rows: list[dict]) -> int:
    """How many windows come from a repository the shipped model was fitted on: figures on them are in-sample."""
    fitted_on = set(detect_model.shipped().get("trained_on", {}).get("source_hashes", ()))
    return sum(bool(source_of(r)) and source_hash(source_of(r)) in fitted_on for r in rows)


def counts_by_source(rows: list[dict], *predicted: Sequence[bool]) -> dict[str, tuple[int, ...]]:
    """(TP, FP, FN) of each set of decisions, per repository; a window without a source is its own."""
    counts: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        gold = gold_kind(row) != "none"
        mine = counts.setdefault(source_of(row) or f"#{i}", [0] * (3 * len(predicted)))
        for j, decided in enumerate(predicted):
            mine[3 * j] += gold and decided[i]
            mine[3 * j + 1] += decided[i] and not gold
            mine[3 * j + 2] += gold and not decided[i]
    return {source: tuple(c) for source, c in counts.items()}


def column_sums(counts: Iterable[Sequence[int]], width: int = 3) -> list[int]:
    """Counts of several repositories (or windows), added up position by position (``width`` zeros for none)."""
    return [sum(column) for column in zip(*counts, strict=True)] or [0] * width


def bootstrap(per_source: list[tuple[int, ...]], statistic: Callable[[list[int]], float], seed: int = 0):
    """95% percentile interval of ``statistic`` of the summed counts when whole repositories are resampled
    (the unit the folds hold out, so windows of one log are not counted as independent); None under
    ``MIN_SOURCES`` repositories."""
    if len(per_source) < MIN_SOURCES:
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        values.append(statistic(column_sums(rng.choices(per_source, k=len(per_source)), len(per_source[0]))))
    values.sort()
    return (values[int(0.025 * BOOTSTRAP_RESAMPLES)], values[int(0.975 * BOOTSTRAP_RESAMPLES) - 1])


def f1_interval(per_source: list[tuple[int, ...]]):
    """F1's 95% interval over repositories, from each repository's (TP, FP, FN)."""
    return bootstrap(per_source, lambda c: f1_of(c[0], c[1], c[2]))


def f1_difference_interval(per_source: list[tuple[int, ...]]):
    """The 95% interval of F1(b) − F1(a), the same repositories resampled for both, from each repository's
    (TP, FP, FN) of a then of b."""
    return bootstrap(per_source, lambda c: f1_of(c[3], c[4], c[5]) - f1_of(c[0], c[1], c[2]))


# ------------------------------------------------------------------------------- with stage 2


def evaluate_two_stage(rows: list[dict], complete_fn, timeout: float, model_path=None) -> dict:
    """Stage 1 alone (standalone point) and stage 1 + 2 (candidates confirmed through ``complete_fn``).

    Also the share of windows that reached stage 2, how often it fell back to stage 1 and why, and the
    tokens per confirmation (as reported, or estimated where the endpoint reported no usage).
    """
    from .confirm import Tally, Window, stage1, two_stage

    decisions = []

    def both(*texts):
        decisions.append(two_stage(Window(*texts), complete_fn, timeout, model_path))
        return decisions[-1]

    alone = evaluate(rows, lambda *texts: stage1(Window(*texts), "standalone", model_path))
    confirmed = evaluate(rows, both)
    asked = [d for d in decisions if d.asked_model]
    tokens = [d.tokens for d in asked if d.tokens is not None]
    tally = Tally.of(decisions)
    return {
        "stage1": alone,
        "stage1+2": confirmed,
        "reached_stage2": _ratio(tally.asked, len(decisions)),
        "answered_stage2": tally.answered,
        "fallbacks": tally.fallbacks,
        "tokens_per_confirmation": sum(tokens) / len(tokens) if tokens else None,
        "tokens_estimated": any(d.tokens_estimated for d in asked),
    }


def format_two_stage(report: dict) -> str:
    reached = report["reached_stage2"]
    fallbacks = ", ".join(f"{k} {v}" for k, v in sorted(report["fallbacks"].items())) or "none"
    tokens = report["tokens_per_confirmation"]
    tokens_text = "n/a" if tokens is None else f"{tokens:.0f}" + (" (estimated)" if report["tokens_estimated"] else "")
    seen = report["stage1"].get("in_sample", 0)
    warning = [IN_SAMPLE.format(seen=seen, n=report["stage1"]["n"]), ""] if seen else []
    return "\n".join(
        warning
        + [
            "stage 1 alone (standalone point)",
            format_report(dict(report["stage1"], in_sample=0)),
            "",
            "stage 1 + 2 (candidates confirmed by the model)",
            format_report(dict(report["stage1+2"], in_sample=0)),
            "",
            f"reached stage 2: {_cell(reached)}   fell back to stage 1: {fallbacks}",
            f"tokens per confirmation: {tokens_text}",
        ]
    )
