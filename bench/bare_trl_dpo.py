"""The baseline for bench_train: the shortest TRL 1.16 LoRA-DPO script with the same settings as our
`train` stage, and nothing else (no params file, no callbacks, no metrics files)."""

import json
import sys
import time

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import DPOConfig, DPOTrainer


def main(base, train_file, out, steps, batch_size, max_length, r, alpha, lr, beta):
    cuda = torch.cuda.is_available()
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16 if cuda else torch.float32)
    rows = [json.loads(line) for line in open(train_file)]
    ds = Dataset.from_list([{k: r_[k] for k in ("prompt", "chosen", "rejected")} for r_ in rows])
    args = DPOConfig(
        output_dir=out,
        per_device_train_batch_size=int(batch_size),
        max_steps=int(steps),
        learning_rate=float(lr),
        beta=float(beta),
        max_length=int(max_length),
        seed=0,
        lr_scheduler_type="constant",
        warmup_steps=0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        gradient_checkpointing=False,
        bf16=cuda,
        use_cpu=not cuda,
    )
    lora = LoraConfig(
        r=int(r),
        lora_alpha=int(alpha),
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
    )
    trainer = DPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora)
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    trainer.save_model(out)
    tokens = max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0)
    print(json.dumps({"bare_train_s": train_s, "bare_tokens": tokens, "bare_tokens_per_s": tokens / train_s}))


if __name__ == "__main__":
    main(*sys.argv[1:])
