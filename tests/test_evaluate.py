import json

import pytest

from ichor.detect import Detection
from ichor.evaluate import (
    MIN_SOURCES,
    counts_by_source,
    evaluate,
    f1_difference_interval,
    f1_interval,
    format_report,
    grouped_blocks,
    seen_in_training,
    slice_of,
    source_hash,
    wilson,
)
from ichor.language import language_group
from tests.support import shared_data


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
    assert "overall f1: no interval from 2 sources (fewer than 10)" in text


def test_evaluate_gives_f1_an_interval_over_sources_or_windows():
    rows = [_row("correction", "correction" if i % 3 else "none") for i in range(20)] + [_row("none", "none")] * 10
    text = format_report(evaluate(rows, detector=_by_user))
    assert "overall f1 95% interval [0." in text and "resampling 30 windows" in text
    sourced = [dict(r, source=f"o/r{i % 12}@c") for i, r in enumerate(rows)]
    metrics = evaluate(sourced, detector=_by_user)
    lo, hi = metrics["overall"]["f1_interval"]
    assert lo < metrics["overall"]["f1"] < hi and "resampling 12 sources" in format_report(metrics)


def test_windows_from_repositories_the_shipped_model_was_fitted_on_are_flagged_in_sample(monkeypatch):
    from ichor import detect_model

    fitted = dict(detect_model.shipped(), trained_on={"source_hashes": [source_hash("o/seen")]})
    monkeypatch.setattr(detect_model, "shipped", lambda: fitted)
    rows = [_row("correction", "correction"), _row("none", "none")]
    rows = [dict(rows[0], source="o/seen@abc:log.md"), dict(rows[1], source="o/new@abc:log.md")]
    metrics = evaluate(rows, detector=_by_user)
    assert metrics["in_sample"] == 1 == seen_in_training(rows[:1]) and seen_in_training(rows[1:]) == 0
    assert format_report(metrics).startswith("warning: 1 of 2 windows come from repositories the shipped detector")
    assert "warning" not in format_report(evaluate(rows[1:], detector=_by_user))


def test_the_two_stage_report_warns_of_in_sample_windows_once():
    from ichor.evaluate import format_two_stage

    stage = dict(evaluate([_row("correction", "correction")], detector=_by_user), in_sample=1)
    report = {"stage1": stage, "stage1+2": stage, "fallbacks": {}, "tokens_per_confirmation": None}
    report.update(reached_stage2={"value": 1.0, "k": 1, "n": 1, "lo": 0.21, "hi": 1.0}, tokens_estimated=False)
    text = format_two_stage(report)
    assert text.startswith("warning: 1 of 1 windows") and text.count("in-sample") == 1


def test_the_shipped_model_knows_every_repository_of_the_shared_data_it_was_fitted_on():
    from ichor.detect_fit import load_rows

    rows = load_rows(shared_data("corrections-dev.jsonl"), shared_data("corrections-more.jsonl"))
    assert seen_in_training(rows) == len(rows)


def test_slices_and_language_groups():
    assert slice_of({"id": "l5-0001", "source": "a/b@1:.specstory/x.md"}) == "agent transcripts"
    assert slice_of({"id": "dev-0001", "source": "UKPLab/x@1:data/a.json#turn3"}) == "dialogue"
    assert slice_of({"id": "l1-0001", "source": "a/b@1:.aider.chat.history.md"}) == "aider logs"
    assert language_group("it still fails with the same error") == "English"
    assert language_group("还是不对，配置文件没有生效") == "non-English"
    assert language_group("non, ça ne marche pas avec le fichier de config") == "non-English"
    assert language_group("NameError: name 'x' is not defined") == "English"


def test_grouped_blocks_count_each_group():
    rows = [
        {"id": "l1-1", "user": "still broken", "kind": "correction"},
        {"id": "l5-1", "user": "还是不对", "kind": "correction"},
        {"id": "l5-2", "user": "add a flag", "kind": "none"},
    ]
    blocks = grouped_blocks(rows, [True, False, True])
    assert (blocks["all"]["tp"], blocks["all"]["fp"], blocks["all"]["fn"], blocks["all"]["n"]) == (1, 1, 1, 3)
    assert (blocks["agent transcripts"]["fn"], blocks["agent transcripts"]["fp"]) == (1, 1)
    assert blocks["non-English"]["n"] == 1 and blocks["aider logs"]["recall"]["value"] == 1.0


def _repo_rows(repos: int, per_repo: int = 6) -> list[dict]:
    """Windows of ``repos`` repositories, half of each positive."""
    return [
        {"source": f"o/r{r}@c:f", "user": "u", "kind": "correction" if i % 2 else "none"}
        for r in range(repos)
        for i in range(per_repo)
    ]


def test_f1_interval_holds_the_f1_and_narrows_with_more_repositories():
    def interval(repos):
        rows = _repo_rows(repos)
        # right on every positive, and a false alarm on one window in six: F1 0.857 in every repository
        decided = [r["kind"] == "correction" or i % 6 == 0 for i, r in enumerate(rows)]
        blocks = grouped_blocks(rows, decided)["all"]
        assert blocks["sources"] == repos
        return blocks["f1"], blocks["f1_interval"]

    f1, (lo, hi) = interval(12)
    assert lo <= f1 <= hi and lo == hi == pytest.approx(6 / 7)  # every repository the same: no spread
    rows = _repo_rows(40)
    decided = [r["kind"] == "correction" and (i // 6) % 3 != 0 for i, r in enumerate(rows)]  # a third of logs missed
    few = f1_interval(list(counts_by_source(rows[:60], decided[:60]).values()))
    many = f1_interval(list(counts_by_source(rows, decided).values()))
    assert few[0] < few[1] and many[1] - many[0] < few[1] - few[0]


def test_no_f1_interval_under_the_minimum_of_repositories():
    rows = _repo_rows(MIN_SOURCES - 1)
    assert grouped_blocks(rows, [True] * len(rows))["all"]["f1_interval"] is None
    # windows without a source are each their own: a user's own history still gets an interval
    unsourced = [{"user": "u", "kind": "correction" if i % 2 else "none"} for i in range(30)]
    block = grouped_blocks(unsourced, [i % 3 != 0 for i in range(30)])["all"]
    assert block["sources"] == 30 and block["f1_interval"] is not None


def test_nested_cv_tables_show_the_f1_interval_or_say_why_there_is_none():
    from ichor.detect_cv import markdown

    rows = _repo_rows(12) + [{"source": "chat#turn1", "user": "u", "kind": "correction"}]
    table = markdown({"standalone": grouped_blocks(rows, [r["kind"] == "correction" for r in rows])})
    assert "| all | 73 | 37 | 13 |" in table and "| 1.00 [1.00–1.00] |" in table
    assert "| dialogue | 1 | 1 | 1 |" in table and "1.00 (no interval: one repository) |" in table


def test_f1_difference_is_zero_for_the_same_decisions_and_above_zero_for_a_better_run():
    rows = _repo_rows(30)
    worse = [r["kind"] == "correction" and i % 4 != 1 for i, r in enumerate(rows)]
    better = [r["kind"] == "correction" for r in rows]
    assert f1_difference_interval(list(counts_by_source(rows, worse, worse).values())) == (0.0, 0.0)
    lo, hi = f1_difference_interval(list(counts_by_source(rows, worse, better).values()))
    assert 0 < lo <= hi
    lo, hi = f1_difference_interval(list(counts_by_source(rows, better, worse).values()))
    assert lo <= hi < 0


def test_candidate_threshold_keeps_the_recall_asked_for():
    from ichor.detect_fit import best_f1_threshold, recall_threshold

    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    y = [1, 1, 0, 1, 0, 1, 0, 1, 0, 0]
    forced = [None] * 10
    t = recall_threshold(scores, y, forced, 0.8)
    assert t == 0.4  # 4 of the 5 positives sit at or above 0.4
    assert recall_threshold(scores, y, [True] + [None] * 9, 0.8) == 0.4  # a gated positive counts once
    threshold, f1 = best_f1_threshold(scores, y, forced)
    assert f1 == pytest.approx(2 * 5 / (2 * 5 + 3 + 0)) and threshold == 0.2


@pytest.mark.slow
def test_nested_cv_on_the_shared_data_is_out_of_source():
    from ichor import detect_cv, detect_fit

    rows = detect_fit.load_rows(shared_data("corrections-dev.jsonl"), shared_data("corrections-more.jsonl"))
    grid = detect_fit.Grid(c=(0.3,), inner_folds=3)
    result = detect_cv.nested_cv(rows, "no_reply", grid, outer_folds=3)
    figures = detect_cv.report(rows, result)
    for point in ("standalone", "candidate"):
        assert figures[point]["all"]["n"] == len(rows)
        for name in ("aider logs", "agent transcripts", "dialogue", "English", "non-English"):
            assert figures[point][name]["n"] > 0
    # far better than chance (positive rate ~0.4) out of source, and the candidate point trades precision for recall
    assert figures["standalone"]["all"]["f1"] > 0.6
    assert figures["candidate"]["all"]["recall"]["value"] >= figures["standalone"]["all"]["recall"]["value"]
    assert len(result["folds"]) == 3


def _synthetic_rows(repos: int = 4, per_repo: int = 20) -> list[dict]:
    rows = []
    for r in range(repos):
        for i in range(per_repo):
            positive = i % 2 == 0
            rows.append(
                {
                    "source": f"owner/repo{r}@abc:log.md",
                    "prev_user": f"add feature {i}",
                    "prev_assistant": "```py\nx = 1\n```",
                    "user": "it still fails, same error" if positive else f"now add docs for part {i}",
                    "assistant": "Sorry, fixing it." if positive else "Sure.",
                    "is_correction": positive,
                }
            )
    return rows


def _reply_tells(rows: list[dict]) -> list[dict]:
    """The same windows where only the reply tells a correction from a new request."""
    return [dict(r, user=f"about part {i % 7}", prev_user="add the feature") for i, r in enumerate(rows)]


def test_a_model_for_windows_with_a_reply_is_the_procedure_inner_cv_prefers():
    pytest.importorskip("sklearn", reason="fitting needs the fit extra")
    from ichor import detect_cv, detect_fit

    grid = detect_fit.Grid(c=(1.0,), inner_folds=3)
    procedures = {v: detect_fit.Procedure(v, grid) for v in detect_fit.VARIANTS}
    fitted = detect_fit.fit(_reply_tells(_synthetic_rows(repos=6)), procedures=procedures)
    assert fitted["trained_on"]["source_hashes"] == sorted(source_hash(f"owner/repo{r}") for r in range(6))
    models = fitted["models"]
    told_by_reply = models["reply"]
    assert told_by_reply["variant"] == "reply" and "reply" in told_by_reply["families"]
    assert (
        told_by_reply["inner_f1"] == 1.0 == told_by_reply["compared"]["reply"] > told_by_reply["compared"]["no_reply"]
    )
    only_without = models["no_reply"]  # it can only choose the procedure that ignores the reply
    assert only_without["variant"] == "no_reply" and only_without["inner_f1"] < 0.9
    both = [procedures[v] for v in detect_fit.SLOT_PROCEDURES["reply"]]
    result = detect_cv.nested_choice(_reply_tells(_synthetic_rows(repos=6)), both, outer_folds=3)
    assert [f["variant"] for f in result["folds"]] == ["reply"] * 3


def test_refit_simulation_reports_before_and_after_per_k():
    pytest.importorskip("sklearn", reason="the simulation fits models: needs the fit extra")
    from ichor import detect_simulate

    result = detect_simulate.simulate(_synthetic_rows(repos=8), ks=(10, 30), outer_folds=2, min_rest=5)
    assert result[10]["repositories"] == 8 and result[10]["windows"] == 80
    assert result[30]["repositories"] == 0
    assert result[10]["after"]["recall"]["n"] == result[10]["before"]["recall"]["n"] == 40
    assert "no repository has 30 decisions and 5 windows after them" in detect_simulate.markdown(result)


def test_with_cards_only_the_windows_the_model_flags_are_decided(monkeypatch):
    pytest.importorskip("sklearn", reason="the simulation fits models: needs the fit extra")
    from ichor import detect_model, detect_simulate

    flagged = []  # per refit: how many of its decisions the base model flags at its standalone point
    real_update = detect_simulate.update

    def recording(linear, examples, *args):
        cut = linear["thresholds"]["standalone"]
        flagged.append(sum(detect_model.score(ids, linear) >= cut for ids, _ in examples))
        return real_update(linear, examples, *args)

    monkeypatch.setattr(detect_simulate, "update", recording)
    rows = _synthetic_rows(repos=6, per_repo=30)
    every = detect_simulate.simulate(rows, ks=(5,), outer_folds=2)
    flagged_in_every, flagged[:] = list(flagged), []
    cards = detect_simulate.simulate(rows, ks=(5,), outer_folds=2, cards=True)
    assert flagged == [5] * cards[5]["repositories"] and cards[5]["repositories"] > 0
    assert any(n < 5 for n in flagged_in_every)  # a repository's first windows are not all cards
    # its first 5 cards lie further into it than its first 5 windows: fewer windows are left to score
    assert 0 < cards[5]["windows"] < every[5]["windows"] == 6 * 25


def test_embedding_features_have_the_documented_shapes():
    np = pytest.importorskip("numpy", reason="the embedding experiment needs numpy")
    from ichor.detect_embed import FIELDS, dense_features

    rng = np.random.default_rng(0)
    emb = {}
    for key, _ in FIELDS:
        v = rng.normal(size=(3, 8))
        emb[key] = v / np.linalg.norm(v, axis=1, keepdims=True)
    assert dense_features(emb, "sqrt").shape == (3, 12)
    assert dense_features(emb, "cosines").shape == (3, 4)
    unit = dense_features(emb, "unit")
    assert np.allclose(unit[:, 8], (emb["user"] * emb["prev_user"]).sum(1))
    assert np.allclose(dense_features(emb, "sqrt")[:, :8], unit[:, :8] * np.sqrt(8))


def _noisy_rows() -> list[dict]:
    rows = _synthetic_rows(repos=6)
    for row in rows[3::7]:  # some labels against the text, so the scores are not all 0 or 1
        row["is_correction"] = not row["is_correction"]
    return rows


def test_nonlinear_experiments_baseline_is_the_shipped_nested_cv():
    pytest.importorskip("sklearn", reason="the experiment fits models: needs the fit extra")
    from ichor import detect_cv, detect_fit
    from ichor.detect_nonlinear import Experiment

    rows, grid = _noisy_rows(), detect_fit.Grid(c=(0.3, 1.0), inner_folds=2)
    shipped = detect_cv.nested_cv(rows, "reply", grid, outer_folds=3)
    mine = Experiment(rows, "reply").nested_cv(tuple(grid.configs), grid, outer_folds=3)
    assert mine["points"] == shipped["points"]
    assert mine["scores"] == pytest.approx(shipped["scores"], abs=1e-9)


def test_nonlinear_experiment_stacks_an_out_of_fold_score_and_no_words_in_the_dense_part():
    pytest.importorskip("sklearn", reason="the experiment fits models: needs the fit extra")
    from ichor import detect_fit
    from ichor.detect_nonlinear import TREE_CONFIGS, Experiment, is_lexical

    rows = _noisy_rows()
    exp = Experiment(rows, "reply")
    assert not any(is_lexical(f) or f == "bias" for names in exp.dense_names for f in names)
    train, test = list(range(80)), list(range(80, 120))
    stacked_train, _ = exp.stack_feature("stacked", train, test)
    # a window's stacked score comes from an LR fitted without its repository
    folds = detect_fit.group_folds(exp.groups[:80], 4)
    held = folds[0]
    rest = [i for i in train if i not in set(held)]
    expected = exp._lr(detect_fit.Config(c=0.3), rest, held)
    assert [stacked_train[i] for i in held] == pytest.approx(expected, abs=1e-12)
    scores = exp.fit_score(TREE_CONFIGS[0], train, test)
    assert len(scores) == 40 and all(0.0 <= s <= 1.0 for s in scores)


def test_rest_experiments_baseline_is_the_shipped_nested_cv():
    pytest.importorskip("sklearn", reason="the experiment fits models: needs the fit extra")
    from ichor import detect_cv, detect_fit
    from ichor.detect_rest import RestExperiment, configs

    rows, grid = _noisy_rows(), detect_fit.Grid(c=(0.3, 1.0), inner_folds=2)
    shipped = detect_cv.nested_cv(rows, "reply", grid, outer_folds=3)
    mine = RestExperiment(rows, "reply").nested_cv(configs(["today"], grid), grid, outer_folds=3)
    assert mine["points"] == shipped["points"]
    assert mine["scores"] == pytest.approx(shipped["scores"], abs=1e-9)
    assert {f["config"] for f in mine["folds"]} <= {"today/C=0.3", "today/C=1.0"}


def test_rest_experiment_fits_each_family_set_on_its_own_features():
    pytest.importorskip("sklearn", reason="the experiment fits models: needs the fit extra")
    from ichor.detect_rest import Families, RestExperiment

    rows = _noisy_rows()
    for row in rows[::2]:
        row["user"] = "Here is what I did and what I saw on the page after that. " * 8 + row["user"]
    exp = RestExperiment(rows, "reply")
    assert exp.ids_of["today"] == exp.ids
    assert exp.ids_of["tail"][0] != exp.ids_of["today"][0] and exp.ids_of["tail"][1] == exp.ids_of["today"][1]
    train, test = list(range(80)), list(range(80, 120))
    today, tail = exp.fit_score(Families("today", 0.3), train, test), exp.fit_score(Families("tail", 0.3), train, test)
    assert today != pytest.approx(tail)


def _written(writers: int = 2, per_writer: int = 10, phrase: str = "the zorblax panel glows purple") -> list[dict]:
    return [
        {
            "source": f"synth/w{w}/conv{i}",
            "prev_user": f"build widget {i}",
            "prev_assistant": "```py\nwidget()\n```",
            "user": phrase,
            "assistant": "Sorry, fixing it.",
            "is_correction": True,
        }
        for w in range(writers)
        for i in range(per_writer)
    ]


def test_written_windows_weigh_nothing_at_weight_zero_and_teach_at_weight_one():
    pytest.importorskip("sklearn", reason="the fit extra (scikit-learn) is needed to fit")
    from ichor import detect_fit as F
    from ichor import detect_model

    rows, written_rows = _synthetic_rows(), _written()
    ids, y, groups = F.featurise(rows, "reply"), F.labels(rows), [F.source_of(r) for r in rows]
    written = F.Written.of(written_rows, "reply")
    assert set(written.groups) == {"synth/w0", "synth/w1"}  # a writer's file is one source for the feature cut
    plain = F.fit_linear(ids, y, groups, F.Config(c=1.0))
    assert F.fit_linear(ids, y, groups, F.Config(c=1.0, written_weight=0.0), written) == plain
    taught = F.fit_linear(ids, y, groups, F.Config(c=1.0, written_weight=1.0), written)
    probe = F.featurise([dict(written_rows[0], source="x/y@1")], "reply")[0]
    assert detect_model.score(probe, taught) > detect_model.score(probe, plain) + 0.1


def test_nested_cv_scores_only_real_windows_and_chooses_the_written_weight_inside():
    pytest.importorskip("sklearn", reason="the fit extra (scikit-learn) is needed to fit")
    from ichor import detect_cv
    from ichor import detect_fit as F

    rows = _synthetic_rows(repos=8)
    grid = F.Grid(c=(1.0,), written_weight=(0.0, 1.0), inner_folds=2)
    result = detect_cv.nested_cv(rows, "reply", grid, outer_folds=2, written_rows=_written())
    assert len(result["scores"]) == len(rows) and len(result["points"]["standalone"]) == len(rows)
    assert {f["config"]["written_weight"] for f in result["folds"]} <= {0.0, 1.0}
    assert F.Grid.with_written(False).written_weight == (0.0,)
    assert F.Grid.with_written(True).written_weight == F.WRITTEN_WEIGHTS


def test_written_weights_without_written_windows_is_one_line(tmp_path, capsys):
    from ichor import detect_cv

    data = tmp_path / "w.jsonl"
    data.write_text(json.dumps(_synthetic_rows(1, 2)[0]) + "\n")
    with pytest.raises(SystemExit) as exit_:
        detect_cv.main(["--data", str(data), "--written-weights", "0.5"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == "error: --written-weights needs --written FILES"


def test_crossenc_experiment_fits_on_repositories_it_never_scores_or_thresholds_on(monkeypatch):
    pytest.importorskip("sklearn", reason="the experiment's folds come from the fit extra (scikit-learn)")
    from ichor import detect_crossenc
    from ichor import detect_fit as F

    rows, calls = _noisy_rows(), []

    def recording(rows_, written_rows, variant, fit_part, scored, s, progress=None):
        calls.append((list(fit_part), list(scored)))
        score = [1.0 if rows_[i]["user"].startswith("it still") else 0.0 for i in scored]
        return {k: score for k in detect_crossenc.SCORERS}

    monkeypatch.setattr(detect_crossenc, "fold_scores", recording)
    result = detect_crossenc.nested_cv(rows, [], "reply", detect_crossenc.Settings(), outer_folds=3, progress=str)
    source = [F.source_of(r) for r in rows]
    for fit_part, scored in calls:
        fitted = {source[i] for i in fit_part}
        assert fitted and not fitted & {source[i] for i in scored}  # no repository both fits and is scored
    assert len(calls) == 3
    expected = [r["user"].startswith("it still") for r in rows]
    assert result["points"]["blend"]["standalone"] == [bool(e) for e in expected]


def test_crossenc_pairs_hold_the_reply_only_for_the_reply_model():
    from ichor.detect_crossenc import Settings, pair_of

    row = {"user": "u" * 900, "prev_assistant": "p" * 900, "assistant": "REPLY"}
    user, context = pair_of(row, "reply", Settings())
    assert user == "u" * 600 and context.startswith("p" * 400) and context.endswith("REPLY")
    assert pair_of(row, "no_reply", Settings())[1] == "p" * 400


def test_crossenc_learns_a_separable_toy_task():
    pytest.importorskip("peft", reason="the cross-encoder needs the train extra (torch, transformers, peft)")
    from ichor.detect_crossenc import CrossEncoder, Settings

    try:
        model = CrossEncoder(Settings(epochs=4, batch=8, learning_rate=1e-3))
    except FileNotFoundError as exc:
        pytest.skip(f"MiniLM weights absent: {exc}")
    pairs = [("it still fails with the same error", "```py\nx = 1\n```")] * 16
    pairs += [("great, now add a dark mode toggle", "```py\nx = 1\n```")] * 16
    model.fit(pairs, [1] * 16 + [0] * 16)
    still, new = model.score([pairs[0], pairs[-1]])
    assert still > 0.7 and new < 0.3


def test_crossenc_without_its_weights_is_one_line(tmp_path, monkeypatch, capsys):
    pytest.importorskip("peft", reason="the check past the extras needs the train extra")
    pytest.importorskip("sklearn", reason="the check past the extras needs the fit extra")
    from ichor import detect_crossenc, embed

    def missing():
        raise FileNotFoundError("all-MiniLM-L6-v2 not found")

    monkeypatch.setattr(embed, "minilm_dir", missing)
    data = tmp_path / "w.jsonl"
    data.write_text(json.dumps(_synthetic_rows()[0]) + "\n")
    with pytest.raises(SystemExit) as stop:
        detect_crossenc.main(["--data", str(data)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: all-MiniLM-L6-v2 not found") and err.count("\n") == 1


def test_holding_out_slices_scores_each_kind_with_a_model_that_saw_none_of_it():
    pytest.importorskip("sklearn", reason="fitting needs the fit extra")
    from ichor import detect_cv, detect_fit
    from ichor.evaluate import slice_of

    rows = _synthetic_rows(repos=8)
    for i, row in enumerate(rows):
        row["id"] = f"l5-{i:04d}" if row["source"] < "owner/repo4" else f"l1-{i:04d}"  # four repositories each
    folds = detect_cv.slice_folds(rows)
    assert sorted(i for fold in folds for i in fold) == list(range(len(rows)))
    assert [{slice_of(rows[i]) for i in fold} for fold in folds] == [{"agent transcripts"}, {"aider logs"}]
    procedures = [detect_fit.Procedure("no_reply", detect_fit.Grid(c=(1.0,), inner_folds=2))]
    result = detect_cv.nested_choice(rows, procedures, by_slice=True)
    assert len(result["folds"]) == 2 and all(0.0 < s < 1.0 for s in result["scores"])
