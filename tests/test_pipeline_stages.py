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


def audit_args(tmp_path: Path, pairs: Path, *extra: str) -> list[str]:
    return [
        "--params",
        PARAMS,
        "--pairs-dir",
        str(pairs),
        "--sample-dir",
        str(tmp_path / "no-sample"),
        "--out",
        str(tmp_path / "audited.jsonl"),
        "--metrics",
        str(tmp_path / "audit.json"),
        *extra,
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
    assert audit.main(audit_args(tmp_path, pairs, "--fail-on-leak", "false")) == 0
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


def test_audit_falls_back_to_the_sample_set_only_while_pairs_dir_is_empty(tmp_path):
    out, metrics = tmp_path / "audited.jsonl", tmp_path / "audit.json"
    empty = tmp_path / "pairs"
    empty.mkdir()
    (empty / ".gitkeep").touch()
    args = [
        "--params",
        PARAMS,
        "--pairs-dir",
        str(empty),
        "--sample-dir",
        str(REPO / "data" / "sample"),
        "--out",
        str(out),
        "--metrics",
        str(metrics),
    ]
    assert audit.main(args) == 0
    stats = json.loads(metrics.read_text())
    assert stats["source"] == "sample" and stats["pairs_out"] >= 60 and stats["leaks_found"] == 0
    write_pairs(empty, [record("n1", "run the tests", "pytest src/tests", "pytest tests")])
    assert audit.main(args) == 0
    assert json.loads(metrics.read_text())["source"] == "pairs" and len(read_jsonl(out)) == 1


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
    assert len(records) >= 60
    assert len({r["label"] for r in records}) >= 10
    assert {r["kind"] for r in records} == {"correction", "retry", "undo"}
    assert len({json.dumps(r["prompt"]) for r in records}) == len(records)
    for r in records:
        assert r["accepted"] != r["rejected"]
        assert scrub_messages([r["prompt"], r["rejected"], r["accepted"], r["user_said"]])[1] == {}, r["uid"]


def run_export(tmp_path: Path, source: Path, *extra: str) -> Path:
    out = tmp_path / "export"
    assert (
        export.main(
            [
                "--params",
                PARAMS,
                "--source",
                str(source),
                "--out-dir",
                str(out),
                "--metrics",
                str(tmp_path / "export.json"),
                *extra,
            ]
        )
        == 0
    )
    return out


def test_export_rows_pass_trl_checks_and_the_split_is_seeded_and_prompt_disjoint(tmp_path):
    from trl.data_utils import is_conversational, maybe_extract_prompt

    audited = tmp_path / "audited.jsonl"
    assert (
        audit.main(
            [
                "--params",
                PARAMS,
                "--pairs-dir",
                str(tmp_path / "none"),
                "--sample-dir",
                str(REPO / "data" / "sample"),
                "--out",
                str(audited),
                "--metrics",
                str(tmp_path / "audit.json"),
            ]
        )
        == 0
    )
    out = run_export(tmp_path, audited)
    rows = read_jsonl(out / "dpo.jsonl")
    train_rows, eval_rows = read_jsonl(out / "dpo_train.jsonl"), read_jsonl(out / "dpo_eval.jsonl")
    counts = json.loads((tmp_path / "export.json").read_text())
    assert counts["pairs"] == len(rows) == len(train_rows) + len(eval_rows) and counts["eval"] == len(eval_rows)
    assert 0 < len(eval_rows) < len(train_rows)
    for row in rows:
        assert is_conversational(row)
        extracted = maybe_extract_prompt({k: row[k] for k in ("prompt", "chosen", "rejected")})
        assert extracted["prompt"] == row["prompt"] and extracted["prompt"][-1]["role"] == "user"
        assert [m["role"] for m in row["chosen"]] == ["assistant"] == [m["role"] for m in row["rejected"]]
    assert not any(r["chosen"][0]["content"].lower().startswith(("you're right", "sorry")) for r in rows)
    prompts = lambda rs: {json.dumps(r["prompt"], sort_keys=True) for r in rs}  # noqa: E731
    assert not prompts(train_rows) & prompts(eval_rows)
    assert len(read_jsonl(out / "atropos" / "pairs.jsonl")) == len(rows)

    again = run_export(tmp_path / "again", audited)
    assert (again / "dpo_eval.jsonl").read_text() == (out / "dpo_eval.jsonl").read_text()
    other = run_export(tmp_path / "seed7", audited, "--seed", "7")
    assert prompts(read_jsonl(other / "dpo_eval.jsonl")) != prompts(eval_rows)


def test_base_model_copies_a_local_folder_and_rejects_a_missing_one(tmp_path, tiny_model, capsys):
    out = tmp_path / "base"
    assert base_model.main(["--params", PARAMS, "--path", str(tiny_model), "--out", str(out)]) == 0
    assert (out / "config.json").read_bytes() == (tiny_model / "config.json").read_bytes()
    assert (out / "model.safetensors").is_file()
    assert base_model.main(["--params", PARAMS, "--path", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_base_model_finds_the_smollm2_gguf_without_importing_its_package():
    gguf = base_model.smollm2_gguf()
    assert gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and gguf.stat().st_size > 50_000_000


def test_train_then_evaluate_on_a_tiny_model(tmp_path, tiny_model):
    export_dir = tmp_path / "export"
    audited = tmp_path / "audited.jsonl"
    assert (
        audit.main(
            [
                "--params",
                PARAMS,
                "--pairs-dir",
                str(tmp_path / "none"),
                "--sample-dir",
                str(REPO / "data" / "sample"),
                "--out",
                str(audited),
                "--metrics",
                str(tmp_path / "audit.json"),
            ]
        )
        == 0
    )
    run_export(tmp_path, audited)
    adapter = tmp_path / "adapter"
    assert (
        train.main(
            [
                "--params",
                PARAMS,
                "--base",
                str(tiny_model),
                "--train-file",
                str(export_dir / "dpo_train.jsonl"),
                "--out",
                str(adapter),
                "--steps",
                "3",
                "--batch-size",
                "2",
                "--max-length",
                "256",
                "--lora-r",
                "4",
                "--learning-rate",
                "0.01",
                "--metrics",
                str(tmp_path / "train.json"),
                "--plot",
                str(tmp_path / "loss.json"),
            ]
        )
        == 0
    )
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 4
    metrics = json.loads((tmp_path / "train.json").read_text())
    assert metrics["steps"] == 3 and metrics["precision"] == "fp32" and metrics["train_tokens_per_s"] > 0
    loss = json.loads((tmp_path / "loss.json").read_text())
    assert [p["step"] for p in loss] == [1, 2, 3] and loss[-1]["loss"] == metrics["final_loss"]
    assert abs(loss[0]["loss"] - 0.6931) < 1e-3  # log 2: the adapter starts as a no-op

    assert (
        evaluate.main(
            [
                "--params",
                PARAMS,
                "--base",
                str(tiny_model),
                "--adapter",
                str(adapter),
                "--eval-file",
                str(export_dir / "dpo_eval.jsonl"),
                "--all-file",
                str(export_dir / "dpo.jsonl"),
                "--metrics",
                str(tmp_path / "eval.json"),
                "--accuracy-plot",
                str(tmp_path / "acc.json"),
                "--mistakes-plot",
                str(tmp_path / "mistakes.json"),
            ]
        )
        == 0
    )
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["n_eval_pairs"] == len(read_jsonl(export_dir / "dpo_eval.jsonl"))
    assert set(result["before"]) == set(result["after"]) == {"preference_accuracy", "mean_margin"}
    assert result["before"]["mean_margin"] != result["after"]["mean_margin"]  # the reloaded adapter is live
    acc = json.loads((tmp_path / "acc.json").read_text())
    assert [a["model"] for a in acc] == ["before", "after"]
    mistakes = json.loads((tmp_path / "mistakes.json").read_text())
    assert sum(m["pairs"] for m in mistakes) == len(read_jsonl(export_dir / "dpo.jsonl"))


def test_preference_margin_masks_the_prompt_and_matches_the_model_loss(tiny_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    prompt = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "install deps"}]
    chosen, rejected = (
        [{"role": "assistant", "content": "pnpm install"}],
        [{"role": "assistant", "content": "npm install"}],
    )
    ids, start = evaluate.completion_span(tok, prompt, chosen)
    assert ids[:start] == tok.apply_chat_template(prompt, add_generation_prompt=True, return_dict=False)
    labels = torch.tensor([[-100] * start + ids[start:]])
    with torch.inference_mode():
        mean_nll = model(input_ids=torch.tensor([ids]), labels=labels).loss.item()
    assert evaluate.sequence_logprob(model, ids, start) == pytest.approx(-mean_nll * (len(ids) - start), rel=1e-4)

    row = {"prompt": prompt, "chosen": chosen, "rejected": rejected}
    swapped = {"prompt": prompt, "chosen": rejected, "rejected": chosen}
    same = {"prompt": prompt, "chosen": chosen, "rejected": chosen}
    m_row, m_swapped, m_same = evaluate.preference_margins(model, tok, [row, swapped, same])
    assert m_row == pytest.approx(-m_swapped) and m_row != 0 and m_same == 0
    assert evaluate.preference_stats([1.0, -2.0, 3.0, 0.0]) == {"preference_accuracy": 0.5, "mean_margin": 0.5}


def test_stage_help_works_without_params(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for stage in (audit, export, base_model, train, evaluate):
        with pytest.raises(SystemExit) as exit_info:
            stage.main(["--help"])
        assert exit_info.value.code == 0
    assert "--lora-r" in capsys.readouterr().out


def test_missing_params_file_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        train.main([])
    assert "params.yaml: no such params file" in capsys.readouterr().err


def test_summary_prints_the_table(tmp_path, capsys):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "eval.json").write_text(
        json.dumps(
            {
                "n_eval_pairs": 4,
                "before": {"preference_accuracy": 0.25, "mean_margin": -1.5},
                "after": {"preference_accuracy": 0.75, "mean_margin": 2},
            }
        )
    )
    (metrics / "audit.json").write_text(
        json.dumps(
            {"pairs_in": 9, "pairs_out": 8, "leaks_found": 0, "duplicates": 1, "identical": 0, "source": "pairs"}
        )
    )
    assert summary.main(["--metrics", str(metrics)]) == 0
    out = capsys.readouterr().out
    assert "0.25 → 0.75" in out and "9 → 8 (from pairs)" in out and "dvc plots show" in out
    assert summary.main(["--metrics", str(tmp_path / "none")]) == 1
