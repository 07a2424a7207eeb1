"""Refit the detector from one profile's own decisions (pure Python: runs inside Hermes' environment).

Every keep/share on a card is a positive and every discard a negative.  ``note_decision`` records the
window's hashed feature ids (never its text: a discard deletes the text) in
``detector-decisions.jsonl`` beside the profile's store.  ``refit`` then finds the weights that best
explain those decisions while staying close to the shipped model: each shipped weight is held by its
Laplace precision, the curvature the shipped training data put on it, so it stands for that data
without shipping it.  The result is written to ``detector.json`` beside the store; the shipped model
stays the fallback, and its out-of-source thresholds are kept.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from . import detect_model
from .detect import Window
from .detect_features import features
from .detect_text import pair_window

log = logging.getLogger(__name__)

DECISIONS = "detector-decisions.jsonl"
PROFILE_MODEL = "detector.json"
REFIT_EVERY = 50
# One decision counts as this many shipped training windows (their weights average 1).
DECISION_WEIGHT = 5.0
STEPS = 100


def profile_dir(store) -> Path:
    return Path(store.path).parent


def profile_model_path(store) -> Path:
    return profile_dir(store) / PROFILE_MODEL


def window_ids(window: Window) -> dict[str, list[int]]:
    """The window's hashed features under each linear model of the shipped detector, which every refit
    starts from."""
    return {
        name: detect_model.feature_ids(features(window, tuple(linear["families"])))
        for name, linear in detect_model.shipped()["models"].items()
    }


def note_decision(
    store, prev_user: str, prev_assistant: str, user: str, assistant: str, positive: bool, key: str | None = None
) -> None:
    """Append one decision (hashed features only) to the profile's decision log; a later decision with the
    same ``key`` (a pair's uid) replaces an earlier one."""
    window = Window.of(prev_user, prev_assistant, user, assistant)
    _append(store, window_ids(window), positive, key)


def _append(store, ids: dict[str, list[int]], positive: bool, key: str | None) -> None:
    record = {"y": int(bool(positive)), "ids": ids, "t": round(time.time(), 3), "key": key}
    with open(profile_dir(store) / DECISIONS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def note_pair(store, pair, positive: bool) -> None:
    """Record a card decision on a captured correction or retry: the features the detector scored when it
    captured the pair, or (a pair captured before they were kept) the window rebuilt from the pair."""
    if pair.kind not in ("correction", "retry"):
        return
    scored = store.detector_ids(pair.id) or window_ids(pair_window(pair))
    _append(store, scored, positive, pair.uid)


def load_decisions(store) -> list[dict]:
    path = profile_dir(store) / DECISIONS
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out: dict = {}
    for n, line in enumerate(lines):
        try:
            rec = json.loads(line)
            decision = {"y": int(rec["y"]), "ids": {k: [int(i) for i in v] for k, v in rec["ids"].items()}}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a torn last line after a crash: skip it, keep the rest
        out[rec.get("key") or n] = decision
    return list(out.values())


def update(linear: dict, examples: list[tuple[list[int], int]], weight: float = DECISION_WEIGHT) -> dict:
    """MAP logistic regression on ``examples``, each weight pulled toward the shipped one by its precision.

    Diagonal Newton directions with a backtracking line search, so the objective never rises: a
    decision's features move together, and a full diagonal step overshoots once there are many of them.
    Only the bias and the weights of features the examples carry move."""
    objective = _Objective(linear, examples, weight)
    w, bias = {i: objective.w0.get(i, 0.0) for i in objective.touched}, linear["bias"]
    value = objective(w, bias)
    for _ in range(STEPS):
        grad, curv, g_bias, h_bias = objective.slope(w, bias)
        step = {i: -grad[i] / curv[i] for i in objective.touched}
        b_step = -g_bias / h_bias
        descent = sum(grad[i] * step[i] for i in objective.touched) + g_bias * b_step
        t = 1.0
        while t > 1e-6:
            trial = {i: w[i] + t * step[i] for i in objective.touched}
            trial_value = objective(trial, bias + t * b_step)
            if trial_value <= value + 1e-4 * t * descent:
                break
            t /= 2
        else:
            break  # no step lowers it: at the minimum, as far as doubles tell
        w, bias, value, before = trial, bias + t * b_step, trial_value, value
        if before - value <= 1e-9 * max(1.0, abs(value)):
            break
    weights = dict(objective.w0)
    weights.update(w)
    return dict(linear, weights=weights, bias=bias)


class _Objective:
    """The refit's MAP objective: weighted log-loss of the decisions, plus the pull of each weight and
    of the bias toward its shipped value, by its Laplace precision."""

    def __init__(self, linear: dict, examples: list[tuple[list[int], int]], weight: float):
        self.w0, self.b0 = linear["weights"], linear["bias"]
        self.b_prec = float(linear.get("bias_precision", 1.0))
        prec, prior = linear.get("precision", {}), float(linear.get("prior", 1.0))
        self.examples, self.weight = examples, weight
        self.touched = sorted({i for ids, _ in examples for i in ids})
        self.prec = {i: prec.get(i, prior) for i in self.touched}

    def __call__(self, w: dict[int, float], bias: float) -> float:
        loss = sum(_log_loss(bias + sum(w[i] for i in ids), y) for ids, y in self.examples)
        pull = sum(self.prec[i] * (w[i] - self.w0.get(i, 0.0)) ** 2 for i in self.touched)
        return self.weight * loss + 0.5 * (pull + self.b_prec * (bias - self.b0) ** 2)

    def slope(self, w: dict[int, float], bias: float):
        """Gradient and diagonal curvature: (per weight, per weight, of the bias, of the bias)."""
        grad = {i: self.prec[i] * (w[i] - self.w0.get(i, 0.0)) for i in self.touched}
        curv = dict(self.prec)
        g_bias, h_bias = self.b_prec * (bias - self.b0), self.b_prec
        for ids, y in self.examples:
            p = _sigmoid(bias + sum(w[i] for i in ids))
            g, h = self.weight * (p - y), self.weight * p * (1 - p)
            for i in ids:
                grad[i] += g
                curv[i] += h
            g_bias += g
            h_bias += h
        return grad, curv, g_bias, h_bias


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _log_loss(z: float, y: int) -> float:
    """-log p(y | z), without overflow: softplus(z) - y z."""
    return max(z, 0.0) + math.log1p(math.exp(-abs(z))) - y * z


def _agreement(linear: dict, examples: list[tuple[list[int], int]]) -> int:
    t = detect_model.threshold(linear, "standalone")
    return sum((detect_model.score(ids, linear) >= t) == bool(y) for ids, y in examples)


def refit(store, *, weight: float = DECISION_WEIGHT, base: dict | None = None) -> dict:
    """Refit from the profile's decisions, write the profile model, and report the change."""
    base = base or detect_model.shipped()
    decisions = load_decisions(store)
    report = {"decisions": len(decisions), "positives": sum(d["y"] for d in decisions), "models": {}}
    if not decisions:
        report["written"] = None
        return report
    models = {}
    for name, linear in base["models"].items():
        examples = [(d["ids"][name], d["y"]) for d in decisions if name in d["ids"]]
        models[name] = update(linear, examples, weight) if examples else linear
        report["models"][name] = {
            "agree_before": _agreement(linear, examples),
            "agree_after": _agreement(models[name], examples),
            "of": len(examples),
        }
    path = profile_model_path(store)
    made = {"decisions": len(decisions), "at": time.time(), "base": detect_model.fingerprint(base)}
    detect_model.dump(dict(base, models=models, refit=made), path)
    if not (profile_dir(store) / DECISIONS).exists():
        # ``forget`` ran while this refit worked (it deletes the log first, then the model): honour it.
        path.unlink(missing_ok=True)
        report["written"] = None
        return report
    report["written"] = str(path)
    return report


def maybe_refit(store, every: int = REFIT_EVERY) -> dict | None:
    """Refit once ``every`` new decisions have come in since the last refit, or at once when the last refit
    was made from an older release's model; None when it is not time yet."""
    done, stale = 0, False
    try:
        made = json.loads(profile_model_path(store).read_text(encoding="utf-8"))
        done, stale = int(made["refit"]["decisions"]), detect_model.is_stale(made)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    count = len(load_decisions(store))
    if not (count and stale) and count - done < every:
        return None
    return refit(store)


def forget(store) -> None:
    """Delete the profile's decision log and refitted model (the shipped model takes over again). The log
    goes first: a refit running meanwhile sees it gone and removes what it wrote."""
    for name in (DECISIONS, PROFILE_MODEL):
        (profile_dir(store) / name).unlink(missing_ok=True)


def learn(store, pair, positive: bool, later: Callable[[Callable[[], object]], object] | None = None) -> None:
    """Record a card decision, then refit when enough have come in: at once, or through ``later`` (the
    plugin's refit thread: a refit takes seconds and must not hold a chat). Never raises: learning is a side
    effect of a keep/share/discard, which must succeed whatever happens here."""
    try:
        note_pair(store, pair, positive)
    except Exception as exc:  # noqa: BLE001 - any failure here must not block the user's decision
        log.warning("ichor: decision not recorded for the detector (%s)", exc)
        return
    job = functools.partial(_refit_when_due, store)
    if later is None:
        job()
        return
    try:
        later(job)
    except Exception as exc:  # noqa: BLE001 - a worker shutting down must not undo the decision
        log.warning("ichor: detector refit not queued (%s); the next decision tries again", exc)


def _refit_when_due(store) -> None:
    try:
        report = maybe_refit(store)
        if report is not None and report["written"]:
            log.info("ichor: the detector was refitted from %d decisions: %s", report["decisions"], report["written"])
    except Exception as exc:  # noqa: BLE001 - the decision is recorded; the next one tries again
        log.warning("ichor: detector refit skipped (%s)", exc)
