"""Each pipeline stage on its own: audit, export (checked with TRL's own helpers), base_model, train and
evaluate on a tiny random model built on the fly, summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ichor.testing.tiny_model import build_tiny_model
from pipelines import audit, base_model, evaluate, export, summary, train
from tests.support import REPO, read_jsonl, record, write_pairs

PARAMS = str(REPO / "params.yaml")


def fake_github_token() -> str:
    return "ghp_" + "A1b2C3d4" * 4 + "E5f6"  # built at run time: no secret-shaped literal in the repo


def params_with(tmp_path: Path, **updates) -> str:
    """A copy of the workspace's params.yaml with dotted keys replaced (``**{"audit.fail_on_leak": False}``)."""
    import yaml

    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    for dotted, value in updates.items():
        section, key = dotted.split(".")
        params[section][key] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params), encoding="utf-8")
    return str(path)


def audit_args(tmp_path: Path, pairs: Path, params: str = PARAMS, samples: Path | None = None) -> list[str]:
    return [
        "--params",
        params,
        "--pairs",
        str(pairs),
        "--samples",
        str(samples or tmp_path / "no-sample"),
        "--out",
        str(tmp_path / "audited.jsonl"),
        "--metrics",
        str(tmp_path / "audit.json"),
    ]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_audit_fails_on_a_known_secret_naming_the_pair_but_not_the_secret(tmp_path, capsys):
    token = fake_github_token()
    pairs = write_pairs(
        tmp_path / "pairs",
        [
            record("aaa1", "push my branch", "git push", "git push -u origin main"),
            record("bbb2", "set my token", "export GH_TOKEN=", f"export GH_TOKEN={token}"),
        ],
    )
    assert audit.main(audit_args(tmp_path, pairs)) == 1
    err = capsys.readouterr().err
    assert "bbb2" in err and "github_token" in err
    assert token not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "audited.jsonl").exists()


def test_audit_repairs_leaks_when_told_to_and_counts_them(tmp_path):
    token = fake_github_token()
    pairs = write_pairs(
        tmp_path / "pairs",
        [
            record(
                "bbb2",
                f"my token is {token}, set it",
                "export GH_TOKEN=",
                f"export GH_TOKEN={token}",
                user_said="mail ops@corp-mail.io if it breaks",
            ),
        ],
    )
    assert audit.main(audit_args(tmp_path, pairs, params_with(tmp_path, **{"audit.fail_on_leak": False}))) == 0
    stats = json.loads((tmp_path / "audit.json").read_text())
    assert stats["leaks_found"] == 2 and stats["pairs_out"] == 1 and stats["source"] == "pairs"
    assert stats["redactions"]["github_token"] == 2 and stats["redactions"]["email"] == 1
    text = (tmp_path / "audited.jsonl").read_text()
    assert token not in text and "ops@corp-mail.io" not in text and "[REDACTED:github_token]" in text


def test_audit_drops_exact_duplicates_and_identical_answers(tmp_path):
    pairs = write_pairs(
        tmp_path / "pairs",
        [
            record("a1", "install deps", "npm install", "pnpm install"),
            record("a2", "install deps", "npm install", "pnpm install"),  # same content, other uid
            record("a3", "install deps", "npm install", "pnpm install --frozen-lockfile"),
            record("a4", "list files", "ls -la", "ls -la "),  # accepted == rejected
        ],
    )
    assert audit.main(audit_args(tmp_path, pairs)) == 0
    stats = json.loads((tmp_path / "audit.json").read_text())
    assert (stats["pairs_in"], stats["pairs_out"], stats["duplicates"], stats["identical"]) == (4, 2, 1, 1)
    assert [r["uid"] for r in read_jsonl(tmp_path / "audited.jsonl")] == ["a1", "a3"]


def test_audit_falls_back_to_the_sample_set_only_while_pairs_dir_is_empty(tmp_path, capsys):
    empty = tmp_path / "pairs"
    empty.mkdir()
    (empty / ".gitkeep").touch()
    args = audit_args(tmp_path, empty, samples=REPO / "data" / "sample")
    assert audit.main(args) == 0
    stats = json.loads((tmp_path / "audit.json").read_text())
    assert stats["source"] == "sample" and stats["pairs_out"] >= 150 and stats["leaks_found"] == 0
    assert "from sample (" in capsys.readouterr().out
    write_pairs(empty, [record("n1", "run the tests", "pytest src/tests", "pytest tests")])
    assert audit.main(args) == 0
    assert json.loads((tmp_path / "audit.json").read_text())["source"] == "pairs"
    assert len(read_jsonl(tmp_path / "audited.jsonl")) == 1
    assert "warning: 1 pairs is below data.min_pairs" in capsys.readouterr().out


def test_audit_takes_both_when_told_to_and_refuses_an_unknown_choice(tmp_path, capsys):
    pairs = write_pairs(tmp_path / "pairs", [record("n1", "run the tests", "pytest src/tests", "pytest tests")])
    both = params_with(tmp_path, **{"data.include_samples": "always"})
    assert audit.main(audit_args(tmp_path, pairs, both, REPO / "data" / "sample")) == 0
    assert json.loads((tmp_path / "audit.json").read_text())["source"] == "pairs+sample"
    bad = params_with(tmp_path, **{"data.include_samples": "sometimes"})
    assert audit.main(audit_args(tmp_path, pairs, bad)) == 2
    assert "data.include_samples" in capsys.readouterr().err


def test_audit_bad_record_is_one_line_and_exit_2(tmp_path, capsys):
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    (pairs / "ichor-x.jsonl").write_text('{"uid": "x", "prompt": "not a list"}\n')
    assert audit.main(audit_args(tmp_path, pairs)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "ichor-x.jsonl:1" in err and "\n" not in err


def test_sample_set_is_large_varied_and_clean():
    from ichor.export import load_records
    from ichor.scrub import scrub_messages

    records = list(load_records(REPO / "data" / "sample"))
    assert len(records) >= 150
    assert len({r["label"] for r in records}) >= 10
    assert {r["kind"] for r in records} == {"correction", "retry", "undo"}
    assert len({json.dumps([r["prompt"], r["rejected"], r["accepted"]]) for r in records}) == len(records)
    for r in records:
        assert r["accepted"] != r["rejected"]
        assert scrub_messages([r["prompt"], r["rejected"], r["accepted"], r["user_said"]])[1] == {}, r["uid"]


def test_generated_samples_do_not_hand_the_correction_over_in_the_prompt():
    """Where a correction supplies information, the prompt must not already contain it, and both answers
    come from one template: no length artifact separates them."""
    from ichor.export import load_records, supplies_information

    generated = [r for r in load_records(REPO / "data" / "sample") if r["created_at"].startswith("2026-11-20")]
    assert len(generated) >= 80
    informative = [r for r in generated if r["kind"] == "correction" and supplies_information(r)]
    assert len(informative) >= 30
    longer = sum(len(r["accepted"]) > len(r["rejected"]) for r in generated)
    assert 0.3 < longer / len(generated) < 0.7


def run_export(tmp_path: Path, source: Path, params: str = PARAMS) -> Path:
    out = tmp_path / "export"
    assert (
        export.main(
            [
                "--params",
                params,
                "--source",
                str(source),
                "--out",
                str(out),
                "--metrics",
                str(tmp_path / "export.json"),
            ]
        )
        == 0
    )
    return out


def audit_samples(tmp_path: Path) -> Path:
    assert audit.main(audit_args(tmp_path, tmp_path / "none", samples=REPO / "data" / "sample")) == 0
    return tmp_path / "audited.jsonl"


def test_export_rows_pass_trl_checks_and_the_split_is_seeded_and_question_disjoint(tmp_path):
    from trl.data_utils import is_conversational, maybe_extract_prompt

    audited = audit_samples(tmp_path)
    out = run_export(tmp_path, audited)
    rows = read_jsonl(out / "dpo.jsonl")
    splits = {name: read_jsonl(out / f"dpo_{name}.jsonl") for name in ("train", "validation", "eval")}
    counts = json.loads((tmp_path / "export.json").read_text())
    assert counts["pairs"] == len(rows) == sum(map(len, splits.values()))
    assert counts["pairs_in"] == counts["pairs"] + counts["near_duplicates_dropped"]
    assert len(splits["eval"]) >= 30 and 0 < len(splits["validation"]) < len(splits["train"])
    for row in rows:
        assert is_conversational(row)
        extracted = maybe_extract_prompt({k: row[k] for k in ("prompt", "chosen", "rejected")})
        assert extracted["prompt"] == row["prompt"] and extracted["prompt"][-1]["role"] == "user"
        assert [m["role"] for m in row["chosen"]] == ["assistant"] == [m["role"] for m in row["rejected"]]
        assert row["metadata"]["user_said"]
    assert not any(r["chosen"][0]["content"].lower().startswith(("you're right", "sorry")) for r in rows)

    def questions(rs):  # the question asked: in turns form the prompt ends with the answer and the correction
        return {r["prompt"][-3 if r["metadata"]["form"] == "turns" else -1]["content"] for r in rs}

    assert not questions(splits["train"]) & questions(splits["eval"])
    assert not questions(splits["train"]) & questions(splits["validation"])
    assert len(read_jsonl(out / "atropos" / "pairs.jsonl")) == len(rows)

    again = run_export(tmp_path / "again", audited)
    assert (again / "dpo_eval.jsonl").read_text() == (out / "dpo_eval.jsonl").read_text()
    other = run_export(tmp_path / "seed7", audited, params_with(tmp_path, **{"export.seed": 7}))
    assert questions(read_jsonl(other / "dpo_eval.jsonl")) != questions(splits["eval"])


def test_base_model_copies_a_local_folder_and_rejects_a_missing_one(tmp_path, tiny_model, capsys):
    out = tmp_path / "base"
    local = params_with(tmp_path, **{"model.path": str(tiny_model)})
    assert base_model.main(["--params", local, "--out", str(out)]) == 0
    assert (out / "config.json").read_bytes() == (tiny_model / "config.json").read_bytes()
    assert (out / "model.safetensors").is_file()
    missing = params_with(tmp_path, **{"model.path": str(tmp_path / "nope")})
    assert base_model.main(["--params", missing, "--out", str(out)]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_base_model_finds_the_smollm2_gguf_without_importing_its_package():
    gguf = base_model.smollm2_gguf()
    assert gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and gguf.stat().st_size > 50_000_000


SMALL_RUN = {
    "dpo.num_train_epochs": 2,
    "dpo.per_device_train_batch_size": 4,
    "dpo.learning_rate": 0.01,
    "dpo.max_length": 200,
    "lora.r": 4,
    "eval.generate_prompts": 3,
    "eval.max_new_tokens": 6,
}


def small_export(tmp_path: Path) -> Path:
    """12 short pairs, one of them with a long history that has to be cut to fit max_length."""
    history = [{"role": "user", "content": f"earlier question {i} " * 8} for i in range(12)]
    history = [m for i, h in enumerate(history) for m in (h, {"role": "assistant", "content": f"answer {i} " * 8})]
    recs = [
        record(f"p{i}", f"install package number {i} please", f"npm install pkg{i}", f"pnpm add pkg{i}")
        for i in range(11)
    ]
    long = record("long", "and now the last one", "npm install", "pnpm install")
    long["prompt"] = [*history, *long["prompt"]]
    recs.append(long)
    pairs = write_pairs(tmp_path / "pairs", recs)
    assert audit.main(audit_args(tmp_path, pairs)) == 0
    return run_export(
        tmp_path,
        tmp_path / "audited.jsonl",
        params_with(
            tmp_path,
            **{"export.eval_fraction": 0.3, "export.validation_fraction": 0.3, "export.near_duplicate_jaccard": 1.01},
        ),
    )


@pytest.mark.slow
def test_train_then_evaluate_on_a_tiny_model(tmp_path, tiny_model, capsys):
    export_dir = small_export(tmp_path)
    params = params_with(tmp_path, **SMALL_RUN)
    adapter = tmp_path / "adapter"
    train_args = ["--params", params, "--base", str(tiny_model), "--data", str(export_dir), "--out", str(adapter)]
    train_args += ["--metrics", str(tmp_path / "train.json"), "--log", str(tmp_path / "log.jsonl")]
    assert train.main([*train_args, "--plots", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 4
    metrics = json.loads((tmp_path / "train.json").read_text())
    assert metrics["precision"] == "fp32" and metrics["device"] == "cpu" and metrics["train_tokens_per_s"] > 0
    assert metrics["max_length"] <= 200
    fits = list(metrics["fit"].values())
    steps = [line for line in out.splitlines() if line.startswith("step ")]
    assert len(steps) == metrics["steps"] and all("loss" in s and "margin" in s for s in steps)
    assert "{'loss'" not in out  # the trainer's raw dict goes to the log file, not to stdout
    logged = read_jsonl(tmp_path / "log.jsonl")
    assert any("rewards/margins" in e and "logps/chosen" in e for e in logged)
    assert (tmp_path / "plots" / "plots" / "metrics" / "rewards" / "margins.tsv").is_file()
    assert abs(logged[0]["eval_loss"] - metrics["validation_loss_before"]) < 1e-4

    eval_args = ["--params", params, "--base", str(tiny_model), "--dpo", str(adapter), "--data", str(export_dir)]
    eval_args += ["--metrics", str(tmp_path / "eval.json"), "--accuracy-plot", str(tmp_path / "acc.json")]
    eval_args += ["--mistakes-plot", str(tmp_path / "m.json"), "--generations", str(tmp_path / "gen.jsonl")]
    assert evaluate.main(eval_args) == 0
    result = json.loads((tmp_path / "eval.json").read_text())
    fits.append(result["fit"])
    assert sum(f["truncated"] for f in fits) == 1 and sum(f["dropped_too_long"] for f in fits) == 0
    n = result["n_test_pairs"]
    assert n == len(read_jsonl(export_dir / "dpo_eval.jsonl")) - result["fit"]["dropped_too_long"]
    dpo = result["dpo"]
    assert dpo["implicit_reward_accuracy"]["n"] == n and 0 <= dpo["implicit_reward_accuracy"]["lo"] <= 1
    assert dpo["implicit_reward_margin"] != 0  # the reloaded adapter is live
    assert set(dpo["drift"]) >= {"degenerate", "distinct_1", "kl_to_base_per_token"}
    generations = read_jsonl(tmp_path / "gen.jsonl")
    assert len(generations) == result["n_generation_prompts"] and {"base", "dpo"} <= set(generations[0])
    printed = capsys.readouterr().out
    assert "too few pairs for a point estimate" in printed and "95% CI" in printed


def test_fit_row_drops_the_oldest_history_first_and_keeps_the_system_message(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    system = {"role": "system", "content": "be brief"}
    turns = [{"role": r, "content": f"{r} turn {i} " * 10} for i in range(6) for r in ("user", "assistant")]
    row = {
        "prompt": [system, *turns, {"role": "user", "content": "last"}],
        "chosen": [{"role": "assistant", "content": "yes"}],
        "rejected": [{"role": "assistant", "content": "no"}],
    }
    full = train.token_length(tok, row["prompt"], row["chosen"])
    fitted, length = train.fit_row(tok, row, full - 1)
    assert fitted["prompt"][0] == system and fitted["prompt"][-1]["content"] == "last"
    assert fitted["prompt"][1]["role"] == "user" and length <= full - 1
    assert len(fitted["prompt"]) < len(row["prompt"])
    assert train.fit_row(tok, row, 5)[0] is None
    rows, stats = train.fit_rows(tok, [row, row], full)
    assert stats == {"rows_in": 2, "truncated": 0, "dropped_too_long": 0, "longest_tokens": full, "rows_out": 2}


def test_precision_follows_the_device():
    assert train.precision_for("cpu", False) == {"bf16": False, "fp16": False, "use_cpu": True}
    assert train.precision_for("cuda", True) == {"bf16": True, "fp16": False, "use_cpu": False}
    assert train.precision_for("cuda", False) == {"bf16": False, "fp16": True, "use_cpu": False}


def test_span_logps_masks_the_prompt_and_matches_the_model_loss(tiny_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    prompt = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "install deps"}]
    chosen = [{"role": "assistant", "content": "pnpm install"}]
    ids, start = evaluate.completion_span(tok, prompt, chosen)
    assert ids[:start] == tok.apply_chat_template(prompt, add_generation_prompt=True, return_dict=False)
    labels = torch.tensor([[-100] * start + ids[start:]])
    with torch.inference_mode():
        mean_nll = model(input_ids=torch.tensor([ids]), labels=labels).loss.item()
    short, short_start = evaluate.completion_span(tok, prompt[1:], chosen)
    batched = evaluate.span_logps(model, [(ids, start), (short, short_start)], tok.pad_token_id, batch_size=2)
    alone = evaluate.span_logps(model, [(short, short_start)], tok.pad_token_id, batch_size=1)
    assert batched[0][0] == pytest.approx(-mean_nll * (len(ids) - start), rel=1e-4)
    assert batched[0][1] == len(ids) - start
    assert batched[1][0] == pytest.approx(alone[0][0], rel=1e-4)  # padding does not leak into a shorter row


def test_statistics_wilson_mcnemar_and_the_bare_accuracy_refusal():
    p = evaluate.proportion(9, 14)
    assert p["value"] == pytest.approx(0.6429, abs=1e-4) and p["lo"] < 0.643 < p["hi"]
    assert "too few pairs" in evaluate.shown(p, 30) and "0.64" not in evaluate.shown(p, 30)
    assert evaluate.shown(evaluate.proportion(20, 40), 30).startswith("0.50 (95% CI")
    # 4/14 → 9/14 with five pairs changing, all in one direction: exact two-sided p = 2 / 2**5
    before = [True] * 4 + [False] * 10
    after = [True] * 9 + [False] * 5
    assert evaluate.mcnemar_exact(before, after) == {"only_before": 0, "only_after": 5, "p_value": 0.0625}


def test_preference_report_separates_length_bias_from_learning():
    # chosen is longer (more tokens, lower sum) but better per token; the tuned model raises chosen only.
    base = {"chosen": [(-20.0, 10)], "rejected": [(-12.0, 4)]}
    tuned = {"chosen": [(-15.0, 10)], "rejected": [(-12.0, 4)]}
    report = evaluate.preference_report(base, tuned, beta=0.1)
    assert report["implicit_reward_accuracy"]["k"] == 1 and report["implicit_reward_margin"] == pytest.approx(0.5)
    assert report["summed_logp_accuracy"]["tuned"]["k"] == 0
    assert report["length_normalised_accuracy"]["base"]["k"] == 1
    assert report["chosen_logp_change"] == pytest.approx(5.0)


def test_drift_guards_flag_degenerate_repetition():
    fine = ["Run `pnpm install` from the repository root.", "Use `git log --oneline` to see one line each."]
    broken = ["Use `-e` or `-e`; `-s` or `-s`; " * 6, "HUG HUG HUG HUG HUG HUG HUG HUG"]
    assert evaluate.drift_guards(fine, 0.3)["degenerate"]["k"] == 0
    assert evaluate.drift_guards(broken, 0.3)["degenerate"]["k"] == 2
    assert evaluate.distinct_n(fine, 1) > evaluate.distinct_n(broken, 1)


def test_stage_help_works_without_params(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for stage in (audit, export, base_model, train, evaluate):
        with pytest.raises(SystemExit) as exit_info:
            stage.main(["--help"])
        assert exit_info.value.code == 0
    assert "--plots PATH" in capsys.readouterr().out


def test_missing_params_file_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    paths = [arg for name in train.PATHS for arg in (f"--{name}", str(tmp_path / name))]
    with pytest.raises(SystemExit) as info:
        train.main(paths)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "params.yaml: no such params file" in err and len(err.strip().splitlines()) == 1


def test_summary_prints_the_table_with_intervals_and_the_data_version(tmp_path, capsys):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    acc = evaluate.proportion(30, 40)
    dpo = {
        "implicit_reward_accuracy": acc,
        "implicit_reward_margin": 0.4,
        "length_normalised_accuracy": {
            "base": evaluate.proportion(20, 40),
            "tuned": acc,
            "mcnemar": {"p_value": 0.01},
        },
        "chosen_logp_change": -1.5,
        "correction_satisfaction": {"rate": 0.6, "n": 20},
        "drift": {"degenerate": evaluate.proportion(0, 32), "kl_to_base_per_token": 0.02},
    }
    eval_metrics = {"n_test_pairs": 40, "n_generation_prompts": 32, "base": {"correction_satisfaction": {"rate": 0.4}}}
    (metrics / "eval.json").write_text(json.dumps({**eval_metrics, "dpo": dpo}))
    audit_metrics = {"pairs_in": 9, "pairs_out": 8, "leaks_found": 0, "duplicates": 1, "identical": 0}
    (metrics / "audit.json").write_text(json.dumps({**audit_metrics, "source": "pairs", "data_version": "abc123"}))
    assert summary.main(["--metrics", str(metrics)]) == 0
    out = capsys.readouterr().out
    assert "20/40 [0.35, 0.65] → 30/40 [0.60, 0.86]" in out and "p=0.01" in out
    assert "9 → 8 (from pairs)" in out and "abc123" in out and "0.4 → 0.6 (n=20)" in out
    assert "grpo" not in out and "dvc plots show" in out
    assert summary.main(["--metrics", str(tmp_path / "none")]) == 1


def test_a_long_session_through_the_real_capture_code_trains_without_silent_drops(tmp_path, tiny_model):
    """12 exchanges, then a correction naming the package manager: the captured pair is exported in turns
    form with user_said, and fitting it to a short max_length cuts old history, never the correction."""
    from transformers import AutoTokenizer

    from ichor.capture import Tracker, Turn
    from ichor.export import ExportConfig, write_export

    msgs = [{"role": "system", "content": "you are helpful"}]
    for i in range(12):
        msgs += [
            {"role": "user", "content": f"step {i}: explain what the build script does in section {i} " * 3},
            {"role": "assistant", "content": f"Section {i} compiles the assets and copies them to dist/ " * 3},
        ]
    ask, wrong, said, right = (
        "install the deps",
        "Run `npm install`.",
        "no, this repo uses pnpm",
        "Run `pnpm install`.",
    )
    first = [*msgs, {"role": "user", "content": ask}, {"role": "assistant", "content": wrong}]
    second = [*first, {"role": "user", "content": said}, {"role": "assistant", "content": right}]
    tracker = Tracker()
    assert tracker.observe(Turn("s1", "cli", ask, wrong, first)) is None
    captured = tracker.observe(Turn("s1", "cli", said, right, second))
    assert captured is not None and captured.pair.kind == "correction"
    p = captured.pair
    rec = {"uid": "sess", "kind": p.kind, "label": p.label, "user_said": p.user_said, "prompt": p.prompt}
    rec.update(rejected=p.rejected, accepted=p.accepted)
    write_export([rec], tmp_path / "out", ExportConfig(eval_fraction=0.0, validation_fraction=0.0))
    row = read_jsonl(tmp_path / "out" / "dpo_train.jsonl")[0]
    assert row["metadata"]["form"] == "turns" and row["metadata"]["user_said"] == said
    tok = AutoTokenizer.from_pretrained(tiny_model)
    full = train.token_length(tok, row["prompt"], row["chosen"])
    fitted, stats = train.fit_rows(tok, [row], full // 3)
    assert stats["truncated"] == 1 and stats["dropped_too_long"] == 0 and stats["rows_out"] == 1
    assert [m["content"] for m in fitted[0]["prompt"][-3:]] == [ask, wrong, said]
    assert fitted[0]["prompt"][0]["role"] == "user"  # whole exchanges are cut, oldest first
