import pytest

from ichor import detect_fit
from ichor.detect import Detection, detect_with, rules_only
from ichor.evaluate import evaluate, format_report, wilson
from tests.support import shared_data

DEV_SET = "corrections-dev.jsonl"


def test_wilson_matches_hand_computed_values():
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4)
    assert hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson(0, 5)
    assert lo == 0.0
    assert hi == pytest.approx(0.4345, abs=1e-4)
    assert wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)


def _row(kind, user):
    return {"prev_user": "p", "prev_assistant": "a", "user": user, "assistant": "b", "kind": kind}


def _by_user(prev_user, prev_assistant, user, assistant):
    # the "user" text carries the prediction, so expected counts can be worked out by hand
    return Detection(user, None if user == "none" else "x y", 0.0)


def test_evaluate_counts_and_per_kind_figures():
    rows = [
        _row("correction", "correction"),  # tp, correction tp
        _row("correction", "retry"),  # tp overall; correction fn; retry fp
        _row("retry", "retry"),  # tp, retry tp
        _row("retry", "none"),  # fn; retry fn
        _row("none", "correction"),  # fp; correction fp
        _row("none", "none"),  # tn
        _row("none", "none"),  # tn
    ]
    m = evaluate(rows, detector=_by_user)
    o = m["overall"]
    assert (m["n"], o["tp"], o["fp"], o["fn"], o["tn"]) == (7, 3, 1, 1, 2)
    assert o["precision"]["value"] == pytest.approx(3 / 4)
    assert o["recall"]["value"] == pytest.approx(3 / 4)
    assert o["f1"] == pytest.approx(0.75)
    assert (o["precision"]["lo"], o["precision"]["hi"]) == pytest.approx(wilson(3, 4))
    c, r = m["kinds"]["correction"], m["kinds"]["retry"]
    assert (c["tp"], c["fp"], c["fn"]) == (1, 1, 1)
    assert (r["tp"], r["fp"], r["fn"]) == (1, 1, 1)
    assert r["recall"]["value"] == pytest.approx(0.5)


def test_evaluate_falls_back_to_is_correction_without_kind():
    rows = [{"user": "correction", "is_correction": True}, {"user": "none", "is_correction": False}]
    m = evaluate(rows, detector=_by_user)
    assert (m["overall"]["tp"], m["overall"]["tn"]) == (1, 1)


def test_format_report_shows_every_row_with_intervals():
    text = format_report(evaluate([_row("correction", "correction"), _row("none", "none")], detector=_by_user))
    for word in ("overall", "correction", "retry", "precision", "recall", "[0."):
        assert word in text
    assert "1.000 [0.21-1.00] (1/1)" in text


def test_held_out_sources_meet_the_quality_target():
    rows = detect_fit.load_rows(shared_data(DEV_SET))
    cfg = detect_fit.FitConfig()
    model, held_out = detect_fit.held_out_model(rows, cfg)
    train_sources = {detect_fit.source_of(r) for r in rows} - {detect_fit.source_of(r) for r in held_out}
    assert train_sources and held_out, "the split must leave both parts non-empty"
    m = evaluate(held_out, detector=detect_with(model))
    precision, recall = m["overall"]["precision"]["value"], m["overall"]["recall"]["value"]
    assert precision >= 0.90, format_report(m)
    # The issue asks for recall >= 0.80; on the held-out sources we measure 0.89 (17/19, see
    # docs/detector.md). The floor sits a few points under it (one more miss still passes).
    assert recall >= 0.84, format_report(m)


def test_rules_over_every_source_keep_precision_and_recall():
    # In-sample for the rules (written after reading the dev set), so this guards regressions only:
    # measured P 0.943 (66/70), R 0.846 (66/78); floors a few points under.
    rows = detect_fit.load_rows(shared_data(DEV_SET))
    m = evaluate(rows, detector=rules_only)
    assert m["overall"]["precision"]["value"] >= 0.92, format_report(m)
    assert m["overall"]["recall"]["value"] >= 0.82, format_report(m)
