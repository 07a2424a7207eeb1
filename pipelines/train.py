"""Stage `train`: LoRA DPO on the train split with TRL's ``DPOTrainer`` and PEFT, early-stopped on validation.

Run it under accelerate (``dvc.yaml`` does)::

    accelerate launch --config_file configs/accelerate/cpu.yaml -m pipelines.train --base models/base ...

``DPOConfig(**params["dpo"])``, ``LoraConfig(**params["lora"])`` and
``EarlyStoppingCallback(**params["early_stopping"])``; the device and precision come from accelerate's
state (bf16 where the GPU supports it, else fp16; fp32 on CPU). Rows longer than ``dpo.max_length`` lose
their oldest history messages first; ``max_length`` is then the longest row, and every truncated or
dropped row is counted. The reference model is the base with the adapter disabled. One line per step
goes to stdout, the full log dicts to ``--log``, TRL's ``rewards/*`` and ``logps/*`` to ``--plots``
(DVCLive), and a warning is printed when the validation log p of the chosen answers falls.
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from pathlib import Path

from pipelines.common import PipelineError, config_from, params_of, path_args, read_jsonl, run, write_json

ROW_KEYS = ("prompt", "chosen", "rejected")


def precision_for(device_type: str, bf16_supported: bool) -> dict:
    """The ``DPOConfig`` precision fields for a device: bf16 where supported, fp16 on older GPUs, fp32 on CPU
    (TRL's CPU bf16 autocast makes in-memory and reloaded adapters disagree)."""
    if device_type == "cpu":
        return {"bf16": False, "fp16": False, "use_cpu": True}
    return {"bf16": bf16_supported, "fp16": not bf16_supported, "use_cpu": False}


def device_precision() -> tuple[str, dict]:
    """The device accelerate chose for this process and the precision fields that go with it."""
    import torch
    from accelerate import PartialState

    device = PartialState().device
    bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    return device.type, precision_for(device.type, bf16)


def token_length(tokenizer, prompt: list[dict], completion: list[dict] | None = None) -> int:
    messages = prompt + (completion or [])
    return len(
        tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=completion is None, return_dict=False
        )
    )


def fit_row(tokenizer, row: dict, cap: int) -> tuple[dict | None, int]:
    """The row with its oldest history messages removed until prompt + the longer answer fit ``cap``
    tokens (a leading system message is kept). Returns ``(row, tokens)``, or ``(None, tokens)`` when even
    the last exchange does not fit."""
    prompt = list(row["prompt"])
    system = prompt[:1] if prompt and prompt[0]["role"] == "system" else []
    history = prompt[len(system) :]
    keep_from = 0
    while True:
        kept = system + history[keep_from:]
        length = max(token_length(tokenizer, kept, row[side]) for side in ("chosen", "rejected"))
        if length <= cap:
            return {**row, "prompt": kept}, length
        # The last user message (and, for a correction in turns form, the exchange it replies to) stays.
        if len(history) - keep_from <= 1:
            return None, length
        keep_from += 1
        while keep_from < len(history) - 1 and history[keep_from]["role"] != "user":
            keep_from += 1


def fit_rows(tokenizer, rows: list[dict], cap: int) -> tuple[list[dict], dict]:
    """Every row fitted to ``cap``; the counts say how many were truncated or dropped, and the longest row."""
    fitted, stats = [], {"rows_in": len(rows), "truncated": 0, "dropped_too_long": 0, "longest_tokens": 0}
    for row in rows:
        new, length = fit_row(tokenizer, row, cap)
        if new is None:
            stats["dropped_too_long"] += 1
            continue
        stats["truncated"] += len(new["prompt"]) != len(row["prompt"])
        stats["longest_tokens"] = max(stats["longest_tokens"], length)
        fitted.append(new)
    stats["rows_out"] = len(fitted)
    return fitted, stats


def load_rows(path: str) -> list[dict]:
    if not Path(path).is_file():
        raise PipelineError(f"{path}: no such file (run the export stage first)")
    return [{k: row[k] for k in ROW_KEYS} for row in read_jsonl(path)]


def step_printer(log_path: str):
    """One stdout line per step (loss, reward margin, chosen log p) and every log dict as a JSONL line."""
    from transformers import TrainerCallback

    class StepPrinter(TrainerCallback):
        def __init__(self):
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            Path(log_path).write_text("", encoding="utf-8")
            self.history: list[dict] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs:
                return
            entry = {"step": state.global_step, "epoch": state.epoch, **logs}
            self.history.append(entry)
            with open(log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
            prefix = "eval_" if "eval_loss" in logs else ""
            loss = logs.get(f"{prefix}loss")
            if loss is None:
                return
            where = f"{state.global_step}/{state.max_steps}" if state.max_steps else "before training"
            print(
                f"{'validation' if prefix else 'step'} {where}: loss {loss:.4f}, "
                f"margin {logs.get(f'{prefix}rewards/margins', float('nan')):.3f}, "
                f"log p(chosen) {logs.get(f'{prefix}logps/chosen', float('nan')):.2f}",
                flush=True,
            )

    return StepPrinter()


def quiet_libraries() -> None:
    """No deprecation chatter or progress bars from the libraries: the step lines say what happens."""
    import datasets
    import transformers

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()


def build_trainer(paths, params: dict, callbacks=()):
    """Model, tokenizer, fitted data and ``DPOTrainer``: the part the benchmark compares with a bare TRL script."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, EarlyStoppingCallback, PrinterCallback
    from trl import DPOConfig, DPOTrainer

    if not (Path(paths.base) / "config.json").is_file():
        raise PipelineError(f"{paths.base}: no base model (run the base_model stage first)")
    device, precision = device_precision()
    tokenizer = AutoTokenizer.from_pretrained(paths.base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    cap = int(params["dpo"]["max_length"])
    train_rows, fit = fit_rows(tokenizer, load_rows(f"{paths.data}/dpo_train.jsonl"), cap)
    args = config_from(params, "dpo", DPOConfig, **precision, output_dir=f"{paths.out}.checkpoints", report_to="none")
    validates = args.eval_strategy != "no"
    validation_file = f"{paths.data}/dpo_validation.jsonl"
    validation_rows, validation_fit = fit_rows(tokenizer, load_rows(validation_file) if validates else [], cap)
    if not train_rows or (validates and not validation_rows):
        raise PipelineError(
            f"{paths.data}: {len(train_rows)} train / {len(validation_rows)} validation pairs after fitting to "
            f"{cap} tokens; both splits need pairs (add pairs, or adjust export.validation_fraction)"
        )
    longest = max(fit["longest_tokens"], validation_fit["longest_tokens"])
    dtype = torch.bfloat16 if precision["bf16"] else torch.float16 if precision["fp16"] else torch.float32
    model = AutoModelForCausalLM.from_pretrained(paths.base, dtype=dtype)
    args.max_length = longest
    trainer = DPOTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(train_rows),
        eval_dataset=Dataset.from_list(validation_rows) if validates else None,
        processing_class=tokenizer,
        peft_config=config_from(params, "lora", LoraConfig),
        callbacks=[*callbacks, *([config_from(params, "early_stopping", EarlyStoppingCallback)] if validates else [])],
    )
    trainer.remove_callback(PrinterCallback)  # its raw dict per step is what StepPrinter's one line replaces
    return trainer, {"device": device, "max_length": longest, "train_fit": fit, "validation_fit": validation_fit}


def peak_memory_gib(device: str) -> float | None:
    """Peak allocated accelerator memory of this process (None on the CPU, where torch does not track it)."""
    import torch

    if device != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


def dvclive_callback(plots_dir: str):
    from dvclive import Live
    from transformers.integrations import DVCLiveCallback

    shutil.rmtree(plots_dir, ignore_errors=True)
    return DVCLiveCallback(live=Live(dir=plots_dir, save_dvc_exp=False, dvcyaml=None, report=None))


def chosen_logp_change(before: dict, after: dict) -> float | None:
    """Validation mean log p(chosen) after training minus before (TRL's ``eval_logps/chosen``)."""
    if "eval_logps/chosen" not in before or "eval_logps/chosen" not in after:
        return None
    return float(after["eval_logps/chosen"]) - float(before["eval_logps/chosen"])


def train(paths, params: dict) -> dict | None:
    quiet_libraries()
    stage_start = time.perf_counter()
    printer = step_printer(paths.log)
    trainer, fitted = build_trainer(paths, params, [printer, dvclive_callback(paths.plots)])
    for split in ("train_fit", "validation_fit"):
        f = fitted[split]
        print(
            f"train: {split[:-4]} split: {f['rows_in']} pairs, {f['truncated']} history-truncated, "
            f"{f['dropped_too_long']} dropped (too long even without history); max_length {fitted['max_length']}"
        )
    validates = trainer.eval_dataset is not None
    before = trainer.evaluate() if validates else {}
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    after = trainer.evaluate() if validates else {}  # the best checkpoint, reloaded at the end
    trainer.save_model(paths.out)
    trainer.accelerator.wait_for_everyone()
    if not trainer.is_world_process_zero():
        return None
    shutil.rmtree(f"{paths.out}.checkpoints", ignore_errors=True)
    peak = peak_memory_gib(fitted["device"])
    change = chosen_logp_change(before, after)
    tokens = max((float(e.get("num_tokens", 0)) for e in printer.history), default=0.0)
    metrics = {
        "steps": trainer.state.global_step,
        "epochs": round(float(trainer.state.epoch or 0), 2),
        "max_steps": trainer.state.max_steps,
        "stopped_early": trainer.state.global_step < trainer.state.max_steps,
        "best_validation_loss": None if trainer.state.best_metric is None else round(trainer.state.best_metric, 6),
        "validation_loss_before": round(float(before["eval_loss"]), 6) if before else None,
        "validation_reward_accuracy": round(float(after.get("eval_rewards/accuracies", 0.0)), 4),
        "validation_chosen_logp_change": None if change is None else round(change, 4),
        "max_length": fitted["max_length"],
        "fit": {"train": fitted["train_fit"], "validation": fitted["validation_fit"]},
        "train_tokens": int(tokens),
        "train_tokens_per_s": round(tokens / train_s, 1) if train_s else None,
        "train_wall_s": round(train_s, 2),
        "wall_s": round(time.perf_counter() - stage_start, 2),
        "processes": trainer.accelerator.num_processes,
        "device": fitted["device"],
        "peak_memory_gib": peak,
        "precision": "bf16" if trainer.args.bf16 else "fp16" if trainer.args.fp16 else "fp32",
    }
    write_json(paths.metrics, metrics)
    if change is not None and change < 0:
        print(
            f"train: warning: validation log p(chosen) fell by {-change:.2f} nats per pair: the adapter is "
            "displacing the accepted answers too (lower dpo.learning_rate or raise the sft loss weight)"
        )
    print(
        f"train: {metrics['steps']}/{metrics['max_steps']} steps ({metrics['epochs']} epochs), validation loss "
        f"{metrics['validation_loss_before']} → {metrics['best_validation_loss']}, "
        f"{metrics['train_tokens_per_s']} tokens/s ({metrics['device']}, {metrics['precision']}) → {paths.out}"
    )
    return metrics


PATHS = {
    "base": "the base model folder",
    "data": "the export folder (dpo_train.jsonl, dpo_validation.jsonl)",
    "out": "where the LoRA adapter goes",
    "metrics": "the run's figures (JSON)",
    "log": "every logged dict, one JSON line each",
    "plots": "DVCLive's folder (rewards/*, logps/*, loss per step)",
}


def main(argv: list[str] | None = None) -> int:
    args = path_args(argv, __doc__.splitlines()[0], PATHS)
    return run(lambda: train(args, params_of(args)))


if __name__ == "__main__":
    raise SystemExit(main())
