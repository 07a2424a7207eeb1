"""The rl stage: a real GRPO update (TRL + PEFT) on a tiny random model, with params.yaml's reward weights
reaching the trainer, the exported atropos_env/ and the metrics; and the measurement's statistics."""

import json

import pytest
import yaml

from ichor.reward import load_spec
from ichor.testing.tiny_model import build_tiny_model
from pipelines import rl_measure
from tests.atropos_stub import PAIRS, write_pairs

WEIGHTS = {"checks": 2.0, "difference": 1.0, "repetition": 0.25, "soup": 0.5}  # not the defaults


def write_params(folder, start_from="base"):
    params = {
        "grpo": {
            "learning_rate": 0.05,
            "max_steps": 2,
            "per_device_train_batch_size": 4,
            "num_generations": 4,
            "max_completion_length": 12,
            "temperature": 1.0,
            "beta": 0.04,
            "logging_steps": 1,
            "seed": 0,
        },
        "reward": {"weights": WEIGHTS},
        "rl": {"start_from": start_from, "eval_prompts": 4, "samples": 2},
        "lora": {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]},
    }
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def lora_tensors(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


@pytest.mark.slow  # about 20 s on 2 cores: TRL's GRPOTrainer generating, scoring and stepping twice
def test_grpo_update_changes_the_adapter_and_reports_every_figure_with_its_n(tmp_path, capsys):
    from pipelines.rl import main

    base = build_tiny_model(tmp_path / "base")
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    params = write_params(tmp_path)
    args = [
        "--params", str(params), "--base", str(base), "--dpo", str(tmp_path / "no-dpo"), "--pairs", str(pairs),
        "--out", str(tmp_path / "grpo"), "--samples-dir", str(tmp_path / "rl"), "--metrics", str(tmp_path / "rl.json"),
    ]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "step 1/2: reward " in out and "step 2/2: reward " in out
    assert "{'loss'" not in out and "'rewards/" not in out  # TRL's raw per-step dict is not printed
    # LoRA's B matrices start at zero: any non-zero B means the optimiser stepped on the reward's advantages
    tensors = lora_tensors(tmp_path / "grpo")
    b_norms = [float(t.abs().sum()) for name, t in tensors.items() if "lora_B" in name]
    assert b_norms and max(b_norms) > 0.0
    metrics = json.loads((tmp_path / "rl.json").read_text())
    assert metrics["train"]["steps"] == 2 and metrics["train"]["start_from"] == "base"
    assert metrics["train"]["reward_weights"] == WEIGHTS
    assert {"rewards/checks/mean", "rewards/soup/mean"} <= set(metrics["train"]["reward_by_step"][0])
    held = metrics["held_out"]
    assert held["prompts"] == 1 and held["samples_per_prompt"] == 2  # the stub pairs hold one eval row
    assert set(held["policies"]) == {"base", "grpo"}
    for figures in held["policies"].values():
        assert figures["reward"]["n"] == 1 and figures["correction_satisfaction"]["n"] in (0, 1)
        assert [row["n"] for row in figures["best_of"]] == [1, 2]
    assert held["win_rate_by_checks"]["grpo_vs_base"]["prompts"] <= 1
    samples = [json.loads(line) for line in (tmp_path / "rl" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and {s["policy"] for s in samples} == {"base", "grpo"}
    from pipelines.rl import summary_rows

    rows = dict(summary_rows(metrics))
    assert "(n=1)" in rows["grpo: reward"] and "base: correction satisfaction" in rows
    # the exported env carries the weights the stage trained with
    assert load_spec(tmp_path / "rl" / "atropos_env" / "reward.json")["weights"] == load_spec(params)["weights"]


def test_starting_from_dpo_needs_the_adapter(tmp_path, capsys):
    from pipelines.rl import main

    base = build_tiny_model(tmp_path / "base")
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    args = ["--params", str(write_params(tmp_path, "dpo")), "--base", str(base), "--dpo", str(tmp_path / "none")]
    assert main([*args, "--pairs", str(pairs), "--out", str(tmp_path / "grpo")]) == 2
    assert "no DPO adapter" in capsys.readouterr().err


def test_step_line_reads_trls_logged_reward_and_kl():
    from pipelines.rl import step_line

    assert step_line(3, 10, {"reward": 0.4123, "reward_std": 0.21, "kl": 0.00123}) == (
        "step 3/10: reward 0.412 ± 0.210, kl 0.0012"
    )
    assert step_line(1, 2, {"reward": -1.0}) == "step 1/2: reward -1.000"


def test_reward_functions_get_dataset_columns_and_only_weighted_terms():
    from ichor.reward import Reward
    from pipelines.rl import reward_functions

    funcs, weights = reward_functions(Reward(WEIGHTS), max_completion_length=4)
    assert [f.__name__ for f in funcs] == ["checks", "difference", "repetition", "soup"] and weights == [
        2,
        1,
        0.25,
        0.5,
    ]
    row = PAIRS[0]
    checks = funcs[0](
        prompts=[row["messages"]] * 2,
        completions=[
            [{"role": "assistant", "content": "Use pnpm: `pnpm install`."}],
            [{"role": "assistant", "content": "npm i"}],
        ],
        completion_ids=[[1, 2], [1, 2]],
        accepted=[row["accepted"]] * 2,
        rejected=[row["rejected"]] * 2,
        user_said=[row["user_said"]] * 2,
        trainer_state=None,
    )
    assert checks == [1.0, -1.0]


# ------------------------------------------------------------------------------------------- statistics


def scored(reward, sat):
    return rl_measure.Scored("x", reward, reward, 0.0, sat)


def test_best_of_n_flags_reward_rising_without_the_checks():
    hacked = [[scored(0.0, 1.0), scored(2.0, 0.0)], [scored(0.0, 1.0), scored(3.0, 0.0)]]
    honest = [[scored(0.0, 0.0), scored(2.0, 1.0)], [scored(0.0, 0.5), scored(3.0, 1.0)]]
    assert rl_measure.hacking(rl_measure.best_of(hacked))["suspected"] is True
    fair = rl_measure.hacking(rl_measure.best_of(honest))
    assert fair["suspected"] is False and fair["satisfaction_gain"] == pytest.approx(0.75)


def test_win_rate_counts_ties_apart_and_has_a_wilson_interval():
    a = [[scored(0, 1.0)], [scored(0, 1.0)], [scored(0, 0.0)], [scored(0, None)]]
    b = [[scored(0, 0.0)], [scored(0, 1.0)], [scored(0, 0.5)], [scored(0, 1.0)]]
    rate = rl_measure.win_rate(a, b)
    assert (rate["prompts"], rate["wins"], rate["losses"], rate["ties"], rate["win_rate"]) == (3, 1, 1, 1, 0.5)
    low, high = rate["ci95"]
    assert low < 0.5 < high
    assert rl_measure.wilson_ci(0, 0) is None
    # two answers that both satisfy their checks: an interval, not the point [1, 1]
    assert rl_measure.mean_interval([1.0, 1.0], (0.0, 1.0))["ci95"][0] < 0.5


def test_kendall_needs_variation_and_reports_n():
    assert rl_measure.kendall([1, 2, 3, 4], [0.0, 0.5, 0.5, 1.0])["tau_b"] > 0.8
    assert rl_measure.kendall([1, 1, 1], [0, 1, 0]) == {"n": 3, "tau_b": None, "p": None}
