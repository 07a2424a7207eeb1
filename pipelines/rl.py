"""Stage `rl`: GRPO on the users' corrections with TRL's GRPOTrainer + PEFT, then base, DPO and GRPO compared.

Run it under accelerate (``dvc.yaml`` does)::

    accelerate launch --config_file configs/accelerate/cpu.yaml -m pipelines.rl --base models/base \\
        --dpo models/dpo --pairs data/export/atropos/pairs.jsonl --out models/grpo

1. Train. The policy is the DPO adapter, trained further (``rl.start_from: dpo``), or a fresh LoRA on the base
   (``base``, with ``params.yaml``'s ``lora:``). ``GRPOConfig(**params["grpo"])``; the reward is ``ichor.reward``
   with ``reward.weights``, one TRL reward function per term that weighs something (TRL logs each), the weights as
   ``reward_weights``. Dataset columns ``accepted``, ``rejected`` and ``user_said`` reach the reward. The KL
   reference is the base model (the adapter switched off). On CUDA with vLLM installed, generation uses vLLM
   (``use_vllm``, colocated) unless params say otherwise; on CPU, plain ``generate``.
2. Measure (``pipelines.rl_measure``): base, DPO and GRPO sampled on held-out prompts, best-of-n, win rates by the
   correction checks, Kendall τ of the reward vs the checks, each with its n.

Writes the adapter (``--out``), ``--samples-dir`` (``samples.jsonl`` and an ``atropos_env/`` exported with the
same reward weights) and ``--metrics``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

from pipelines.common import PipelineError, load_params, read_jsonl, run, section, write_json

LEGACY_LORA_KEYS = {"alpha": "lora_alpha", "dropout": "lora_dropout"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="params.yaml", help="grpo:, reward:, rl: and lora: come from here")
    parser.add_argument("--base", default="models/base", help="the base model folder")
    parser.add_argument("--dpo", default="models/dpo", help="the DPO adapter (start point and a compared policy)")
    parser.add_argument("--pairs", default="data/export/atropos/pairs.jsonl", help="exported pairs with user_said")
    parser.add_argument("--out", default="models/grpo", help="where the GRPO adapter goes")
    parser.add_argument("--samples-dir", default="data/rl", help="held-out samples and the exported atropos_env/")
    parser.add_argument("--metrics", default="metrics/rl.json", help="the stage's figures")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------------------------- reward


def reward_functions(reward, max_completion_length: int) -> tuple[list, list[float]]:
    """One TRL reward function per term with a weight, and those weights; TRL passes dataset columns as kwargs."""
    from ichor.reward import TERMS, Item, Rollout

    def make(term: str):
        def score(prompts, completions, completion_ids, accepted, rejected, user_said, **_):
            out = []
            for prompt, completion, ids, acc, rej, said in zip(
                prompts, completions, completion_ids, accepted, rejected, user_said, strict=True
            ):
                item = Item.from_row({"prompt": prompt, "accepted": acc, "rejected": rej, "user_said": said})
                text = completion if isinstance(completion, str) else completion[-1]["content"]
                reason = "length" if len(ids) >= max_completion_length else "stop"
                out.append(reward.term(term, item, [Rollout(text, reason)])[0])
            return out

        score.__name__ = term
        return score

    active = [t for t in TERMS if reward.weights[t]]
    return [make(t) for t in active], [reward.weights[t] for t in active]


# ---------------------------------------------------------------------------------------------- model


def load_pairs(path: str, split: str) -> list[dict]:
    if not Path(path).is_file():
        raise PipelineError(f"{path}: no exported pairs (run the export stage first)")
    rows = [r for r in read_jsonl(path) if r.get("split", "train") == split]
    return rows


def lora_config(params: dict):
    from peft import LoraConfig

    lora = {LEGACY_LORA_KEYS.get(k, k): v for k, v in section(params, "lora").items()}
    return LoraConfig(task_type="CAUSAL_LM", **lora)


def policy_model(params: dict, base: str, dpo: str, cuda: bool):
    """(model, peft_config): the DPO adapter made trainable, or the base with a LoRA config for TRL to apply."""
    import torch
    from transformers import AutoModelForCausalLM

    if not (Path(base) / "config.json").is_file():
        raise PipelineError(f"{base}: no base model (run the base_model stage first)")
    start_from = str(section(params, "rl").get("start_from", "dpo"))
    if start_from not in ("dpo", "base"):
        raise PipelineError(f"params.yaml: rl.start_from must be dpo or base, not {start_from!r}")
    dtype = torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
    model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
    if start_from == "base":
        return model, lora_config(params), start_from
    if not (Path(dpo) / "adapter_config.json").is_file():
        raise PipelineError(f"{dpo}: no DPO adapter (run the train stage, or set rl.start_from: base)")
    from peft import PeftModel

    return PeftModel.from_pretrained(model, dpo, is_trainable=True), None, start_from


def grpo_args(params: dict, out: str, cuda: bool, reward_weights: list[float]):
    """``GRPOConfig(**params["grpo"])`` plus what the stage decides: device, precision, vLLM, no checkpoints."""
    import torch
    from trl import GRPOConfig

    grpo = dict(section(params, "grpo"))
    vllm = cuda and importlib.util.find_spec("vllm") is not None
    grpo.setdefault("use_vllm", vllm)
    if grpo["use_vllm"]:
        grpo.setdefault("vllm_mode", "colocate")
    bf16 = cuda and torch.cuda.is_bf16_supported()
    return GRPOConfig(
        output_dir=out,
        report_to="none",
        save_strategy="no",
        use_cpu=not cuda,
        bf16=bf16,
        fp16=cuda and not bf16,
        reward_weights=reward_weights,
        dataloader_num_workers=0,
        **grpo,
    )


def reward_recorder():
    """A callback keeping TRL's logged reward (and each term's) per step, and printing one line per step."""
    from transformers import TrainerCallback

    class RewardRecorder(TrainerCallback):
        def __init__(self):
            self.points: list[dict] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = logs or {}
            if "reward" in logs:
                keep = {k: round(float(v), 4) for k, v in logs.items() if k.startswith(("reward", "rewards/", "kl"))}
                self.points.append({"step": state.global_step, **keep})
                print(step_line(state.global_step, state.max_steps, keep), flush=True)

    return RewardRecorder()


def step_line(step: int, max_steps: int, logged: dict) -> str:
    """``step 3/10: reward 0.412 ± 0.210, kl 0.0012``: what a person watching the run needs from TRL's log dict."""
    parts = [f"reward {logged['reward']:.3f}"]
    if "reward_std" in logged:
        parts[0] += f" ± {logged['reward_std']:.3f}"
    if "kl" in logged:
        parts.append(f"kl {logged['kl']:.4f}")
    return f"step {step}/{max_steps}: " + ", ".join(parts)


def build_trainer(params: dict, args: argparse.Namespace, callbacks=()):
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from ichor.reward import reward_from_spec, spec_from_params

    cuda = torch.cuda.is_available()
    rows = load_pairs(args.pairs, "train")
    if not rows:
        raise PipelineError(f"{args.pairs}: no train rows")
    reward = reward_from_spec(spec_from_params(params))
    max_len = int(section(params, "grpo").get("max_completion_length", 256))
    funcs, weights = reward_functions(reward, max_len)
    if not funcs:
        raise PipelineError("params.yaml: every reward.weights term is 0; GRPO would learn nothing")
    tokenizer = AutoTokenizer.from_pretrained(args.base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model, peft_config, start_from = policy_model(params, args.base, args.dpo, cuda)
    dataset = Dataset.from_list(
        [
            {
                "prompt": r["messages"],
                "accepted": r["accepted"],
                "rejected": r["rejected"],
                "user_said": r.get("user_said") or "",
            }
            for r in rows
        ]
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=funcs,
        args=grpo_args(params, args.out, cuda, weights),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=list(callbacks),
    )
    for raw_printer in (
        PrinterCallback,
        ProgressCallback,
    ):  # their raw dict per step is what RewardRecorder's line replaces
        trainer.remove_callback(raw_printer)
    return trainer, reward, start_from


# -------------------------------------------------------------------------------------------- measure


def measure(params: dict, args: argparse.Namespace, reward, trainer) -> tuple[dict, list[dict]]:
    """Base, DPO (when there is one) and the GRPO adapter just trained, sampled on the held-out prompts."""
    import torch
    from peft import PeftModel

    from ichor.reward import Item
    from pipelines import rl_measure

    rl = section(params, "rl")
    rows = load_pairs(args.pairs, "eval")[: int(rl.get("eval_prompts", 16))]
    if not rows:
        return {"prompts": 0, "note": "no held-out (eval split) pairs: nothing measured"}, []
    n = int(rl.get("samples", 4))
    grpo = section(params, "grpo")
    max_new, temperature = int(grpo.get("max_completion_length", 64)), float(grpo.get("temperature", 1.0))
    model = trainer.accelerator.unwrap_model(trainer.model)
    if not isinstance(model, PeftModel):
        raise PipelineError("the trained policy is not a PEFT model")
    names = ["base"]
    if (Path(args.dpo) / "adapter_config.json").is_file():
        model.load_adapter(args.dpo, adapter_name="dpo")
        names.append("dpo")
    model.load_adapter(args.out, adapter_name="grpo")
    names.append("grpo")
    model.eval()
    if getattr(model, "is_gradient_checkpointing", False):
        model.gradient_checkpointing_disable()
    tokenizer = trainer.processing_class
    items = [Item.from_row(r) for r in rows]
    scored, samples = {}, []
    for name in names:
        torch.manual_seed(int(grpo.get("seed", 0)))
        with rl_measure.policy(model, name) as active:
            groups = rl_measure.sample(active, tokenizer, [r["messages"] for r in rows], n, max_new, temperature)
        scored[name] = [rl_measure.score(reward, item, group) for item, group in zip(items, groups, strict=True)]
        for row, group in zip(rows, scored[name], strict=True):
            samples += [{"uid": row.get("uid"), "policy": name, **vars(s)} for s in group]
    return rl_measure.report(scored, reward.weights["judge"] != 0), samples


# ----------------------------------------------------------------------------------------------- main


def checks_coverage(dataset) -> int:
    """How many training rows yield at least one correction check (the checks term is 0 on the others)."""
    from ichor.reward import Item, item_checks

    return sum(1 for row in dataset if item_checks(Item.from_row(row)))


def rl(args: argparse.Namespace) -> dict | None:
    from ichor.atropos_export import write_atropos_env
    from ichor.reward import spec_from_params

    params = load_params(args.params)
    recorder = reward_recorder()
    trainer, reward, start_from = build_trainer(params, args, [recorder])
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    trainer.save_model(args.out)
    trainer.accelerator.wait_for_everyone()
    if not trainer.is_world_process_zero():
        return None
    covered = checks_coverage(trainer.train_dataset)
    if not covered:
        print("rl: warning: no train pair yields a correction check (is user_said exported?); the checks term was 0")
    held_out, samples = measure(params, args, reward, trainer)
    out = Path(args.samples_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    write_atropos_env(out, pairs=args.pairs, reward_spec=spec_from_params(params))
    steps = trainer.state.global_step
    metrics = {
        "train": {
            "start_from": start_from,
            "steps": steps,
            "train_rows": len(trainer.train_dataset),
            "train_rows_with_checks": covered,
            "wall_s": round(train_s, 2),
            "steps_per_s": round(steps / train_s, 4) if train_s else None,
            "generation": "vllm" if trainer.args.use_vllm else "transformers",
            "reward_weights": {k: v for k, v in reward.weights.items() if v},
            "reward_by_step": recorder.points,
        },
        "held_out": held_out,
    }
    write_json(args.metrics, metrics)
    print(one_line(metrics))
    return metrics


def one_line(metrics: dict) -> str:
    train, held = metrics["train"], metrics["held_out"]
    head = f"rl: {train['steps']} GRPO steps from {train['start_from']} in {train['wall_s']} s"
    if not held.get("prompts"):
        return head + "; no held-out prompts"
    parts = []
    for name, fig in held["policies"].items():
        sat = fig["correction_satisfaction"]
        shown = "n/a" if sat["mean"] is None else f"{sat['mean']:.2f} (n={sat['n']})"
        parts.append(f"{name} reward {fig['reward']['mean']:+.2f} satisfaction {shown}")
    return f"{head}; {held['prompts']} held-out prompts: " + "; ".join(parts)


def _figure(fig: dict, key: str = "mean") -> str:
    value = fig.get(key)
    if value is None:
        return f"n/a (n={fig['n']})"
    ci = fig.get("ci95")
    return f"{value:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}] (n={fig['n']})" if ci else f"{value:+.2f} (n={fig['n']})"


def summary_rows(metrics: dict) -> list[tuple[str, str]]:
    """The summary table's rl lines: training, then per policy reward and satisfaction, win rates, hacking."""
    train, held = metrics["train"], metrics["held_out"]
    rows = [("GRPO steps, start, wall", f"{train['steps']} from {train['start_from']}, {train['wall_s']} s")]
    if not held.get("prompts"):
        return [*rows, ("held-out", "no held-out prompts: nothing measured")]
    for name, fig in held["policies"].items():
        rows.append((f"{name}: reward", _figure(fig["reward"])))
        rows.append((f"{name}: correction satisfaction", _figure(fig["correction_satisfaction"])))
    for pair, rate in held["win_rate_by_checks"].items():
        shown = "n/a" if rate["win_rate"] is None else f"{rate['win_rate']:.2f} {rate['ci95']}"
        rows.append((f"win rate by checks {pair}", f"{shown} ({rate['wins']}-{rate['losses']}, {rate['ties']} ties)"))
    suspected = [name for name, fig in held["policies"].items() if (fig.get("hacking") or {}).get("suspected")]
    rows.append(("best-of-n hacking suspected", ", ".join(suspected) or "none"))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def body() -> None:
        rl(args)

    return run(body)


if __name__ == "__main__":
    sys.exit(main())
