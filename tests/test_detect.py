import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ichor import detect as D
from ichor import detect_model, detect_refit
from ichor.detect import MAX_CHARS, Detection, detect, mistake_label
from ichor.detect_features import features
from ichor.detect_rules import edited_code
from ichor.detect_text import Window

CODE_ANSWER = (
    "I updated `parser.py` so that `load_config()` reads the TOML file.\n```python\ndef load_config():\n"
    "    return tomllib.loads(Path('config.toml').read_text())\n```"
)
REQUEST = "make the config loader read toml"


def decide(user, prev_user=REQUEST, prev_assistant=CODE_ANSWER, assistant=None, threshold="standalone"):
    return detect(prev_user, prev_assistant, user, assistant, threshold=threshold)


# Clear cases of each kind the labelling rules name, written for these tests (not taken from the data).
# The model is statistical: each class must be decided right in most of its shapes, not in every one.
POSITIVES = {
    "rejection": [
        "no, that's wrong, I wanted it in yaml",
        "that is not what I asked for",
        "wrong, the port is 8080 not 3000",
    ],
    "still failing": [
        "it still fails with the same error",
        "still not working, nothing changed",
        "the build still doesn't work after your change",
    ],
    "pasted error from the change": [
        'Traceback (most recent call last):\n  File "parser.py", line 3, in load_config\n'
        "    return tomllib.loads(Path('config.toml').read_text())\nNameError: name 'tomllib' is not defined",
        'parser.py:3:12: error: Name "tomllib" is not defined  [name-defined]\nFound 1 error in 1 file',
    ],
    "ignored instruction": [
        "I said only touch the config loader, you forgot to keep the old json path working",
        "you ignored what I told you: don't use tomllib, use the toml package instead",
    ],
    "other language": [
        "non, ça ne marche toujours pas, la même erreur",
        "还是不对，配置文件仍然没有生效",
    ],
}
NEGATIVES = {
    "new request": [
        "great, now add a --verbose flag to the cli",
        "next, write a unit test for the config loader",
        "now add a README section that documents the config file",
    ],
    "thanks": ["thanks, that works perfectly", "perfect, thank you!"],
    "answer to the assistant's question": ["yes", "option 2 please"],
    "continue": ["continue", "go on"],
}
ASKING = "Done. Would you like me to also add a default config file, or pick one of these options: 1, 2 or 3?"


def _share_right(cases: list[str], want: bool, **kw) -> float:
    return sum(decide(u, **kw).is_correction == want for u in cases) / len(cases)


@pytest.mark.parametrize("name", sorted(POSITIVES))
def test_clear_corrections_of_each_kind_are_found(name):
    assert _share_right(POSITIVES[name], True) >= 0.6, [(u, decide(u)) for u in POSITIVES[name]]


@pytest.mark.parametrize("name", sorted(NEGATIVES))
def test_clear_non_corrections_of_each_kind_are_left_alone(name):
    prev = ASKING if name == "answer to the assistant's question" else CODE_ANSWER
    assert _share_right(NEGATIVES[name], False, prev_assistant=prev) >= 0.6


def test_identical_resend_is_a_retry_whitespace_and_case_aside():
    got = decide("  Make the CONFIG loader read   toml ")
    assert (got.kind, got.label, got.score) == ("retry", "identical re-send", 1.0)


def test_repeated_continue_is_not_a_retry():
    assert detect("continue", "Step 2 done.", "continue", "Step 3 done.").kind == "none"


def test_candidate_point_flags_at_least_what_standalone_flags():
    model = detect_model.shipped()
    for linear in model["models"].values():
        assert linear["thresholds"]["candidate"] <= linear["thresholds"]["standalone"]
    cases = [u for group in (*POSITIVES.values(), *NEGATIVES.values()) for u in group]
    for user in cases:
        if decide(user).is_correction:
            assert decide(user, threshold="candidate").is_correction, user


def test_explicit_threshold_is_a_probability():
    user = "it still fails with the same error"
    score = decide(user).score
    assert decide(user, threshold=score - 1e-6).is_correction
    assert not decide(user, threshold=min(1.0, score + 1e-6)).is_correction


def test_windows_with_a_reply_are_scored_by_the_model_their_fit_chose():
    user = "the header is gone from the page"
    plain = decide(user, assistant="Sure, here it is.").score
    apology = decide(user, assistant="You're right, I apologize: I removed the header by mistake. Here is the fix.")
    reads_the_reply = "reply" in detect_model.shipped()["models"]["reply"]["families"]
    assert (apology.score != plain) == reads_the_reply


def test_positive_has_a_short_label_and_negative_none():
    for user in ("it still fails with the same error", "no, that's wrong, I wanted it in yaml"):
        got = decide(user)
        assert got.is_correction and 2 <= len(got.label.split()) <= 4
    got = decide("great, now add a --verbose flag to the cli")
    assert got.kind == "none" and got.label is None


# ------------------------------------------------------------------------------ shipped model


def test_shipped_model_has_both_input_shapes_and_thresholds():
    on_disk = json.loads((Path(D.__file__).parent / "data" / "detector.json").read_text(encoding="utf-8"))
    model = detect_model.shipped()
    for name in ("reply", "no_reply"):
        linear = model["models"][name]
        assert len(linear["weights"]) > 100
        assert 0.0 < linear["thresholds"]["standalone"] < 1.0
        assert linear["weights"] == {int(k): v for k, v in on_disk["models"][name]["weights"].items()}
        assert set(linear["precision"]) == set(linear["weights"])


def test_model_choice_follows_whether_the_reply_is_known():
    w = D.Window.of("a", "b", "c", None)
    assert D.model_name(w) == "no_reply"
    assert D.model_name(D.Window.of("a", "b", "c", "reply")) == "reply"


def test_pure_python_scores_match_the_fitting_code():
    pytest.importorskip("sklearn", reason="the fit extra (scikit-learn) is needed to compare with the fitting code")
    from ichor import detect_fit as F

    rows = [
        {"prev_user": f"task {i}", "prev_assistant": "```py\nx = 1\n```", "user": u, "assistant": "ok", "source": s}
        for i, (u, s) in enumerate(
            [("it still fails", "a/x@1"), ("add a flag", "b/y@1"), ("still broken again", "c/z@1")] * 4
            + [("now add tests", "a/x@1"), ("that's wrong", "b/y@1"), ("thanks, next add docs", "c/z@1")] * 4
        )
    ]
    for row, y in zip(rows, [1, 0, 1] * 4 + [0, 1, 0] * 4, strict=True):
        row["is_correction"] = bool(y)
    ids, y, groups = F.featurise(rows, "reply"), F.labels(rows), [F.source_of(r) for r in rows]
    cfg = F.Config(c=1.0, min_sources=1, balance="sqrt")
    clf, column = F.estimator(ids, y, groups, cfg)
    linear = F.to_linear(clf, column, ids, groups, cfg)
    x = F.design(ids, column)
    for row_ids, p in zip(ids, clf.predict_proba(x)[:, 1], strict=True):
        assert detect_model.score(row_ids, linear) == pytest.approx(p, abs=1e-9)
    # The bias's precision is the curvature of the fitted objective (divided by C) along the bias,
    # measured here by finite differences: liblinear's bias is the weight of a constant intercept_scaling.
    sw, scale = F.sample_weights(groups, cfg.balance), clf.intercept_scaling

    def objective_along_bias(delta: float) -> float:
        z = [linear["bias"] + delta + sum(linear["weights"].get(i, 0.0) for i in row) for row in ids]
        loss = sum(w * (math.log1p(math.exp(-abs(v))) + max(v, 0.0) - t * v) for w, v, t in zip(sw, z, y, strict=True))
        return loss + (linear["bias"] + delta) ** 2 / (2 * cfg.c * scale**2)

    h = 1e-3
    curvature = (objective_along_bias(h) - 2 * objective_along_bias(0.0) + objective_along_bias(-h)) / h**2
    assert linear["bias_precision"] == pytest.approx(curvature, rel=1e-3)


# ------------------------------------------------------------------------------ refit


def _profile(tmp_path):
    return SimpleNamespace(path=tmp_path / "ichor.db")


ODD = "the zorblax panel has a purple glow"  # a phrasing the shipped model does not flag


def test_refit_learns_a_profiles_own_corrections(tmp_path):
    store = _profile(tmp_path)
    before = detect(REQUEST, CODE_ANSWER, ODD, None, threshold="standalone")
    assert not before.is_correction
    for i in range(30):
        detect_refit.note_decision(store, f"change the panel {i}", CODE_ANSWER, ODD, "Sorry, fixing it.", True)
        detect_refit.note_decision(store, REQUEST, CODE_ANSWER, f"now add feature {i} to the panel", "Sure.", False)
    report = detect_refit.refit(store)
    assert report["decisions"] == 60 and report["positives"] == 30
    after = detect(REQUEST, CODE_ANSWER, ODD, None, model_path=report["written"])
    assert after.is_correction and after.score > before.score
    assert report["models"]["no_reply"]["agree_after"] >= report["models"]["no_reply"]["agree_before"]
    # the shipped model is untouched and stays the fallback
    assert not detect(REQUEST, CODE_ANSWER, ODD, None).is_correction
    assert detect(REQUEST, CODE_ANSWER, ODD, None, model_path=tmp_path / "missing.json") == before


def _many_decisions(n: int = 200, width: int = 56, seed: int = 3) -> list[tuple[list[int], int]]:
    """Decisions as a long-used profile has them: many, each with dozens of features shared with others."""
    import random

    rng = random.Random(seed)
    pool = sorted(detect_model.shipped()["models"]["no_reply"]["weights"])[:400]
    out = []
    for _ in range(n):
        ids = rng.sample(pool, width)
        out.append((ids, int(sum(i % 3 == 0 for i in ids) > width / 3)))
    return out


def test_the_refit_never_raises_its_objective_however_many_decisions(monkeypatch):
    linear = detect_model.shipped()["models"]["no_reply"]
    examples = _many_decisions()
    objective = detect_refit._Objective(linear, examples, detect_refit.DECISION_WEIGHT)
    values = []
    for steps in (0, 1, 2, 5, 20, 100):
        monkeypatch.setattr(detect_refit, "STEPS", steps)
        fitted = detect_refit.update(linear, examples)
        values.append(objective({i: fitted["weights"][i] for i in objective.touched}, fitted["bias"]))
    assert values == sorted(values, reverse=True) and values[-1] < 0.8 * values[0]
    assert abs(fitted["bias"] - linear["bias"]) < 5
    assert detect_refit._agreement(fitted, examples) > detect_refit._agreement(linear, examples)


def test_a_refit_of_an_older_release_gives_way_to_the_shipped_model_then_is_redone(tmp_path):
    store = _profile(tmp_path)
    for i in range(30):
        detect_refit.note_decision(store, f"change the panel {i}", CODE_ANSWER, ODD, "Sorry, fixing it.", True)
    path = Path(detect_refit.refit(store)["written"])
    assert detect(REQUEST, CODE_ANSWER, ODD, None, model_path=path).is_correction
    assert detect_refit.maybe_refit(store, every=50) is None  # current, and nothing new
    made = json.loads(path.read_text())
    made["refit"]["base"] = "an-older-release"
    path.write_text(json.dumps(made))
    assert not detect(REQUEST, CODE_ANSWER, ODD, None, model_path=path).is_correction  # the shipped model
    assert detect_refit.maybe_refit(store, every=50)["decisions"] == 30  # redone at once on this release's model
    assert detect(REQUEST, CODE_ANSWER, ODD, None, model_path=path).is_correction


@pytest.mark.parametrize(
    "broken",
    [
        {"models": {}},
        {"models": {"reply": {"bias": 0.0, "weights": {}}, "no_reply": {"bias": 0.0, "weights": {}}}},
        {"models": "none"},
        [],
    ],
)
def test_an_incomplete_profile_model_gives_way_to_the_shipped_one(tmp_path, broken):
    path = tmp_path / "detector.json"
    path.write_text(json.dumps(broken))
    shipped = detect(REQUEST, CODE_ANSWER, "it still fails with the same error", None)
    assert detect(REQUEST, CODE_ANSWER, "it still fails with the same error", None, model_path=path) == shipped


def test_a_detector_failure_is_logged_once_not_swallowed(monkeypatch, caplog):
    def broken(*_):
        raise RuntimeError("weights are missing")

    monkeypatch.setattr(D, "detect_window", broken)
    monkeypatch.setattr(D, "_SAID", set())
    with caplog.at_level("WARNING", logger="ichor.detect"):
        found = [detect(REQUEST, CODE_ANSWER, "no, that's wrong", None) for _ in range(3)]
    assert all(f.kind == "none" and f.layers == ("error",) for f in found)
    [line] = [r.getMessage() for r in caplog.records]
    assert "RuntimeError at test_detect.py:" in line and "weights are missing" not in line  # it may quote text


def test_refits_written_at_the_same_moment_never_tear_the_model(tmp_path):
    import threading

    path = tmp_path / "detector.json"
    model = detect_model.shipped()
    errors = []

    def write():
        try:
            for _ in range(5):
                detect_model.dump(model, path)
        except Exception as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and list(tmp_path.iterdir()) == [path]
    assert detect_model.parse(json.loads(path.read_text()))["models"].keys() == model["models"].keys()


def test_an_automatic_refit_says_so_in_one_log_line(tmp_path, monkeypatch, caplog):
    store = _profile(tmp_path)
    report = {"decisions": 50, "written": str(tmp_path / "detector.json")}
    monkeypatch.setattr(detect_refit, "maybe_refit", lambda store: report)
    pair = SimpleNamespace(
        kind="correction", prompt=[], rejected="ls -S", user_said="no", accepted="ls", uid="u1", id=1
    )
    monkeypatch.setattr(detect_refit, "note_pair", lambda *args: None)
    with caplog.at_level("INFO", logger="ichor.detect_refit"):
        detect_refit.learn(store, pair, positive=True)
    assert [r.getMessage() for r in caplog.records] == [
        f"ichor: the detector was refitted from 50 decisions: {report['written']}"
    ]


def test_a_worker_that_refuses_the_refit_never_undoes_the_decision(tmp_path, caplog):
    from ichor import commands
    from ichor.store import NewPair, Store

    def shutting_down(job):
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    store = Store(tmp_path / "ichor.db")
    pair = store.add_pair(
        NewPair("correction", "no, use pnpm", [{"role": "user", "content": "install"}], "npm i", "pnpm i")
    )
    with caplog.at_level("WARNING", logger="ichor.detect_refit"):
        commands.decide(commands.Context(store, later=shutting_down), "keep", [pair.id])
    assert store.get(pair.id).status == "kept" and len(detect_refit.load_decisions(store)) == 1
    assert "refit not queued" in caplog.text


def test_a_forget_during_a_refit_is_not_undone_by_it(tmp_path, monkeypatch):
    store = _profile(tmp_path)
    for i in range(5):
        detect_refit.note_decision(store, "p", "a", f"no, wrong {i}", "sorry", True)
    real_dump = detect_model.dump

    def forgotten_meanwhile(model, path):
        detect_refit.forget(store)  # the user forgets while the refit computes
        real_dump(model, path)

    monkeypatch.setattr(detect_model, "dump", forgotten_meanwhile)
    report = detect_refit.refit(store)
    assert report["written"] is None and list(tmp_path.iterdir()) == []


def test_decision_log_keeps_hashed_features_not_text(tmp_path):
    store = _profile(tmp_path)
    detect_refit.note_decision(store, "prev", "answer", "my secret project name is bluebird", "ok", False)
    text = (tmp_path / detect_refit.DECISIONS).read_text()
    assert "bluebird" not in text and "secret" not in text
    assert detect_refit.load_decisions(store)[0]["y"] == 0


def test_maybe_refit_waits_for_enough_new_decisions(tmp_path):
    store = _profile(tmp_path)
    for i in range(4):
        detect_refit.note_decision(store, "p", "a", f"no, wrong {i}", "sorry", True)
    assert detect_refit.maybe_refit(store, every=5) is None
    detect_refit.note_decision(store, "p", "a", "now add docs", "sure", False)
    assert detect_refit.maybe_refit(store, every=5)["decisions"] == 5
    assert detect_refit.maybe_refit(store, every=5) is None  # nothing new since
    with open(tmp_path / detect_refit.DECISIONS, "a") as fh:
        fh.write('{"y": 1, "ids": ')  # a torn line after a crash is skipped
    assert len(detect_refit.load_decisions(store)) == 5


# ------------------------------------------------------------------------------ robustness


def test_inputs_are_cut_to_max_chars():
    assert D.Window.of("", "", "x" * (MAX_CHARS + 500), "").user == "x" * MAX_CHARS


def test_none_and_non_strings_do_not_raise():
    assert detect(None, None, None, None) == Detection("none", None, 0.0, ("gate",))
    assert detect(1, 2.5, ["no"], {"a": 1}).kind in D.KINDS


HOSTILE = {
    "a": "a" * 50000,
    "no": "no " * 20000,
    "punct": "!?.,;:" * 9000,
    "nested": "((((" * 12500,
    "trace": ("Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\nValueError: at a:1\n' * 800)[
        :50000
    ],
    "idents": "a_b.c " * 10000,
    "cjk": "仍然错误" * 12500,
}


# Speed is measured in bench/bench_detect.py; here the generous timeout only catches runaway backtracking.
@pytest.mark.timeout(120)
def test_hostile_text_is_classified_without_error():
    for name, text in HOSTILE.items():
        for args in ((text, text, text, text), ("", "", text, ""), (text, "", text, "ok")):
            assert "error" not in detect(*args).layers, name


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300), st.text(max_size=300), st.text(max_size=300))
def test_detect_never_raises(pu, pa, u, a):
    got = detect(pu, pa, u, a)
    assert got.kind in D.KINDS
    assert got.is_correction == (got.kind != "none")
    assert (got.label is None) == (got.kind == "none")
    assert 0.0 <= got.score <= 1.0
    assert "error" not in got.layers


def test_mistake_label_uses_the_users_words():
    assert mistake_label("you used the wrong package manager", "") == "wrong package manager"
    assert mistake_label("you forgot the import", "") == "missing import"
    assert mistake_label("ModuleNotFoundError: No module named 'yaml'", "") == "missing module"
    assert mistake_label("hmm", "") == "rejected answer"
    for text in ("still broken", "nothing changed", "use X instead of Y", "", None):
        assert 2 <= len(mistake_label(text, None).split()) <= 4


@pytest.mark.parametrize(
    "user, label",
    [
        ("no, use pnpm", "wrong package manager"),
        ("use yarn instead of npm here", "wrong package manager"),
        ("no, write it in rust instead", "wrong language"),
        ("use python 3.12 please", "wrong version"),
        ("add the --force flag", "missing option"),
        ("no, make it human readable and sorted by size", "wanted human readable"),
        ("you forgot the reverse flag", "missing reverse flag"),
    ],
)
def test_labels_name_the_kind_of_mistake_from_the_users_words(user, label):
    assert mistake_label(user, "") == label


def test_card_decisions_feed_the_profiles_refit(tmp_path):
    from ichor import commands
    from ichor.store import NewPair, Store

    store = Store(tmp_path / "ichor.db")
    ids = []
    for i in range(3):
        new = NewPair(
            kind="correction",
            user_said=f"no, the port is {8000 + i}",
            prompt=[{"role": "user", "content": "start the server"}],
            rejected="Started on port 3000.",
            accepted=f"Sorry, now on port {8000 + i}.",
            session_id=f"s{i}",
        )
        ids.append(store.add_pair(new).id)
    commands.run_chat(store, f"keep {ids[0]}")
    commands.run_chat(store, f"share {ids[0]}")  # a second decision on the same pair replaces the first
    commands.run_chat(store, f"discard {ids[1]}")
    decisions = detect_refit.load_decisions(store)
    assert sorted(d["y"] for d in decisions) == [0, 1]
    assert "8001" not in (tmp_path / detect_refit.DECISIONS).read_text()
    commands.run_chat(store, "forget-all yes")
    assert detect_refit.load_decisions(store) == []


def test_a_card_decision_teaches_the_refit_what_the_detector_read(tmp_path):
    """The stored pair keeps only the final answer; the detector read the whole turn (an edit reported
    on the way). The decision records the features of the window the detector scored."""
    from ichor import commands
    from ichor.capture import Tracker, Turn
    from ichor.store import Store

    ask = "make the login keep the session alive"
    narrated = [
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "I've updated `auth.ts` so that the token is refreshed before it expires."},
        {"role": "assistant", "content": "Done."},
    ]
    error = "TypeError: Cannot read properties of undefined (reading 'token')\n    at refresh (src/auth.ts:12:5)"
    tracker = Tracker()
    tracker.observe(Turn("s1", "cli", ask, "Done.", narrated), "candidate")
    history = narrated + [{"role": "user", "content": error}, {"role": "assistant", "content": "Sorry, fixed."}]
    captured = tracker.observe(Turn("s1", "cli", error, "Sorry, fixed.", history), "candidate")
    assert captured is not None and captured.pair.rejected == "Done."
    edited = detect_model.feature_id("pa_edited")
    assert edited in captured.pair.detector_ids["no_reply"]
    store = Store(tmp_path / "ichor.db")
    pair = store.add_pair(captured.pair)
    commands.run_chat(store, f"keep {pair.id}")
    [decision] = detect_refit.load_decisions(store)
    assert decision["ids"] == captured.pair.detector_ids and decision["y"] == 1
    # rebuilt from the stored pair instead, the edit would be lost
    detect_refit.note_decision(store, ask, pair.rejected, pair.user_said, pair.accepted, True, key="rebuilt")
    assert edited not in detect_refit.load_decisions(store)[-1]["ids"]["no_reply"]


def test_text_taken_out_by_an_edit_never_reaches_the_refit(tmp_path):
    import dataclasses

    from ichor import commands
    from ichor.store import NewPair, Store

    said = "no, the customer is Bluebird Holdings, not the other one"
    new = NewPair("correction", said, [{"role": "user", "content": "draft the invoice"}], "Invoice for Acme.", "Done.")
    scored = detect_refit.window_ids(D.Window.of("draft the invoice", "Invoice", said, "Done."))
    bluebird = detect_model.feature_id("w:bluebird")
    assert bluebird in scored["no_reply"]
    store = Store(tmp_path / "ichor.db")
    pair = store.add_pair(dataclasses.replace(new, detector_ids=scored))
    store.replace_texts(pair.id, dataclasses.replace(new, user_said="no, the customer is [name], not the other one"))
    commands.run_chat(store, f"keep {pair.id}")
    [decision] = detect_refit.load_decisions(store)
    assert all(bluebird not in ids for ids in decision["ids"].values())


LONG_SPEC = "Here is the plan for the page layout and the colours we agreed on earlier today. " * 8


def test_rest_of_a_message_is_what_follows_its_head():
    from ichor.detect_text import HEAD_TOKENS, rest_of, tokens

    assert rest_of("it still fails") == ""
    message = " ".join(f"word{i}" for i in range(100))
    rest = rest_of(message)
    assert tokens(rest, 100) == [f"word{i}" for i in range(HEAD_TOKENS, 100)]


def test_tail_families_read_the_end_of_a_long_message_only():
    from ichor.detect_features import FAMILIES, features

    long_window = D.Window.of(REQUEST, CODE_ANSWER, LONG_SPEC + "but it still fails?", "")
    extra = ("words", "shape", "tail", "rest", "tail_shape")
    names = features(long_window, extra)
    assert "tail:still" in names and "tail2:still_fails" in names and "rest:fails" in names
    assert "tl:still" in names and "tail_question" in names
    assert "w:still" not in names  # the head has no "still": the tail is a family of its own
    assert not any(n.startswith(("tail", "rest:", "tl:")) for n in features(long_window, FAMILIES))
    short_window = D.Window.of(REQUEST, CODE_ANSWER, "but it still fails?", "")
    assert not any(n.startswith(("tail", "rest:", "tl:")) for n in features(short_window, extra))


def test_tail_shape_finds_an_error_pasted_at_the_end():
    from ichor.detect_features import features

    pasted = LONG_SPEC + "\nTraceback (most recent call last):\n  File \"parser.py\", line 3\nNameError: name 'x'"
    names = features(D.Window.of(REQUEST, CODE_ANSWER, pasted, ""), ("words", "shape", "tail", "tail_shape"))
    assert "tail_err_shape" in names and "tail_err_word" in names
    plain = features(D.Window.of(REQUEST, CODE_ANSWER, LONG_SPEC, ""), ("words", "shape", "tail", "tail_shape"))
    assert "tail_err_shape" not in plain


@pytest.mark.parametrize(
    "answer",
    [
        "```python\ndef parse(): ...\n```",  # aider's edit block
        "path/to/app.py\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE",
        "I've updated `auth.ts` so the token is refreshed before it expires.",
        "Now let me fix the import in main.py.",
        "⏺ Update(src/app.ts)\n  ⎿  Updated src/app.ts with 2 additions",
        "Made changes.",
        "我已经修改了配置文件，端口现在从环境变量读取。",
        "Я исправил ошибку в парсере.",
    ],
)
def test_an_answer_that_changed_code_is_recognised_in_every_form(answer):
    assert edited_code(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Let me check the logs first. Could you paste the output of `npm test`?",
        "The error means the variable is read before it is assigned.",
        "Here is an explanation of how the cache works.",
        "I've been thinking about it: updating is not needed.",
    ],
)
def test_an_answer_that_only_explains_did_not_change_code(answer):
    assert not edited_code(answer)


def test_an_error_after_an_agents_prose_edit_is_read_as_after_an_edit():
    w = Window.of(
        "make the port configurable", "I've updated config.py to read PORT.", "still failing: port 3000 in use", ""
    )
    assert "pa_edited" in features(w)
    assert "pa_edited" not in features(Window.of("why?", "Because the port is fixed.", "still failing", ""))
