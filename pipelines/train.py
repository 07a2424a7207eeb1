"""Stage `train`: LoRA DPO on the exported train split with TRL's ``DPOTrainer`` and PEFT.

Run it under accelerate (``dvc.yaml`` does)::

    accelerate launch --config_file configs/accelerate/cpu.yaml -m pipelines.train

bf16 on CUDA, fp32 on CPU. The reference model is the base with the adapter disabled, so there is no
second copy of the weights. Rank 0 alone saves the adapter (``models/adapter``) and writes
``metrics/train.json`` (final loss, steps, train tokens/s, wall) and ``plots/train_loss.json``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.common import PipelineError, parse_config, read_jsonl, run, section, write_json


@dataclass
class TrainConfig:
    base: str = field(default="models/base", metadata={"help": "the base model folder"})
    train_file: str = field(default="data/export/dpo_train.jsonl", metadata={"help": "TRL preference rows"})
    out: str = field(default="models/adapter", metadata={"help": "where the LoRA adapter goes"})
    metrics: str = field(default="metrics/train.json", metadata={"help": "final loss, steps, tokens/s, wall"})
    plot: str = field(default="plots/train_loss.json", metadata={"help": "loss per step"})
    beta: float = field(default=0.1, metadata={"help": "DPO beta"})
    learning_rate: float = field(default=2e-3, metadata={"help": "AdamW learning rate (constant)"})
    steps: int = field(default=24, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=4, metadata={"help": "pairs per device per step"})
    max_length: int = field(default=384, metadata={"help": "tokens per prompt+completion"})
    seed: int = field(default=0, metadata={"help": "seeds shuffling and LoRA init"})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "trade compute for memory"})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha"})
    lora_dropout: float = field(default=0.0, metadata={"help": "LoRA dropout"})
    target_modules: list = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"], metadata={"help": "modules that get a LoRA"}
    )

    @classmethod
    def from_params(cls, params: dict) -> TrainConfig:
        dpo, lora = section(params, "dpo"), section(params, "lora")
        d = cls()
        return cls(
            beta=float(dpo.get("beta", d.beta)),
            learning_rate=float(dpo.get("learning_rate", d.learning_rate)),
            steps=int(dpo.get("steps", d.steps)),
            batch_size=int(dpo.get("batch_size", d.batch_size)),
            max_length=int(dpo.get("max_length", d.max_length)),
            seed=int(dpo.get("seed", d.seed)),
            gradient_checkpointing=bool(dpo.get("gradient_checkpointing", d.gradient_checkpointing)),
            lora_r=int(lora.get("r", d.lora_r)),
            lora_alpha=int(lora.get("alpha", d.lora_alpha)),
            lora_dropout=float(lora.get("dropout", d.lora_dropout)),
            target_modules=list(lora.get("target_modules", d.target_modules)),
        )


def dpo_args(config: TrainConfig, output_dir: str, cuda: bool):
    """The ``DPOConfig`` for a run: bf16 on CUDA, plain fp32 on CPU (TRL would autocast to bf16)."""
    from trl import DPOConfig

    return DPOConfig(
        output_dir=output_dir,
        per_device_train_batch_size=config.batch_size,
        max_steps=config.steps,
        learning_rate=config.learning_rate,
        beta=config.beta,
        max_length=config.max_length,
        seed=config.seed,
        lr_scheduler_type="constant",
        warmup_steps=0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        gradient_checkpointing=config.gradient_checkpointing,
        bf16=cuda,
        use_cpu=not cuda,
        dataloader_num_workers=0,
    )


def lora_config(config: TrainConfig):
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules),
        task_type="CAUSAL_LM",
    )


def load_rows(path: str) -> list[dict]:
    if not Path(path).is_file():
        raise PipelineError(f"{path}: no such file (run the export stage first)")
    rows = [{k: row[k] for k in ("prompt", "chosen", "rejected")} for row in read_jsonl(path)]
    if not rows:
        raise PipelineError(f"{path}: no training pairs")
    return rows


def loss_recorder():
    """A callback keeping ``{step, loss}`` per logged step and TRL's running ``num_tokens``."""
    from transformers import TrainerCallback

    class LossRecorder(TrainerCallback):
        def __init__(self):
            self.points: list[dict] = []
            self.num_tokens = 0.0

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = logs or {}
            if "loss" in logs:
                self.points.append({"step": state.global_step, "loss": round(float(logs["loss"]), 6)})
            if "num_tokens" in logs:
                self.num_tokens = float(logs["num_tokens"])

    return LossRecorder()


def build_trainer(config: TrainConfig, callbacks=()):
    """Model, tokenizer, data and ``DPOTrainer``: the part the benchmark compares with a bare TRL script."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOTrainer

    if not (Path(config.base) / "config.json").is_file():
        raise PipelineError(f"{config.base}: no base model (run the base_model stage first)")
    cuda = torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(config.base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(config.base, dtype=torch.bfloat16 if cuda else torch.float32)
    dataset = Dataset.from_list(load_rows(config.train_file))
    return DPOTrainer(
        model=model,
        args=dpo_args(config, config.out, cuda),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(config),
        callbacks=list(callbacks),
    )


def train(config: TrainConfig) -> dict | None:
    stage_start = time.perf_counter()
    recorder = loss_recorder()
    trainer = build_trainer(config, [recorder])
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    trainer.save_model(config.out)  # writes on the main process only
    trainer.accelerator.wait_for_everyone()
    if not trainer.is_world_process_zero():
        return None
    metrics = {
        "final_loss": recorder.points[-1]["loss"] if recorder.points else None,
        "steps": trainer.state.global_step,
        "train_tokens": int(recorder.num_tokens),
        "train_tokens_per_s": round(recorder.num_tokens / train_s, 1) if train_s else None,
        "train_wall_s": round(train_s, 2),
        "wall_s": round(time.perf_counter() - stage_start, 2),
        "processes": trainer.accelerator.num_processes,
        "precision": "bf16" if trainer.args.bf16 else "fp32",
    }
    write_json(config.metrics, metrics)
    write_json(config.plot, recorder.points)
    print(
        f"train: {metrics['steps']} steps, final loss {metrics['final_loss']}, "
        f"{metrics['train_tokens_per_s']} tokens/s → {config.out}"
    )
    return metrics


def main(argv: list[str] | None = None) -> int:
    config = parse_config(TrainConfig, argv, __doc__.splitlines()[0])
    return run(lambda: train(config))


if __name__ == "__main__":
    raise SystemExit(main())
