"""The `train` stage against a bare TRL script on the same data and settings: our overhead as a ratio.

Both run as fresh interpreters, interleaved (ours, bare, ours, bare, …) so that load on the machine hits
both alike; the figure is the median wall time of each, and the ratio ours / bare (target ≤ 1.05).
Ours is ``accelerate launch -m pipelines.train``, exactly what ``dvc repro`` runs; the bare script is
``bench/bare_trl_dpo.py``.

    python -m bench.bench_train                         # tiny random model, plus SmolLM2 if models/base exists
    python -m bench.bench_train --models tiny --repeats 5
    python -m bench.bench_train --device-run            # CUDA only: bf16, LoRA r=16 on q/k/v/o, batch 16,
                                                        # 512-token sequences, no gradient checkpointing;
                                                        # prints train tokens/s for ours and bare TRL
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import BENCH_DIR, write_result

REPO = BENCH_DIR.parent
BARE = BENCH_DIR / "bare_trl_dpo.py"
CPU_SETTINGS = {"steps": 6, "batch_size": 4, "max_length": 384, "r": 8, "alpha": 16, "lr": 1e-3, "beta": 0.1}
DEVICE_SETTINGS = {"steps": 30, "batch_size": 16, "max_length": 512, "r": 16, "alpha": 32, "lr": 1e-4, "beta": 0.1}
QWEN25_15B_SHAPE = dict(
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
    rope_theta=1_000_000.0,
    rms_norm_eps=1e-6,
)


def env() -> dict:
    e = dict(
        os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", WANDB_MODE="disabled", DVC_NO_ANALYTICS="1"
    )
    e["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{e.get('PATH', '')}"
    return e


def last_json_line(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {}


def run_timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(cmd[:6])}… exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return wall, proc


def ours_params(work: Path, s: dict) -> Path:
    """The workspace's params.yaml with the bare script's settings (fixed steps, constant LR, plain DPO loss,
    no validation pass), so both trainers do the same work."""
    import yaml

    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    params["dpo"].update(
        max_steps=s["steps"],
        per_device_train_batch_size=s["batch_size"],
        max_length=s["max_length"],
        learning_rate=s["lr"],
        beta=s["beta"],
        lr_scheduler_type="constant",
        warmup_steps=0,
        loss_type=["sigmoid"],
        loss_weights=None,
        eval_strategy="no",
        save_strategy="no",
        load_best_model_at_end=False,
        gradient_checkpointing=False,
        seed=0,
    )
    params["lora"].update(r=s["r"], lora_alpha=s["alpha"], lora_dropout=0.0)
    path = work / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return path


def ours_cmd(base: Path, train_file: Path, work: Path, s: dict, accelerate_config: str) -> list[str]:
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "dpo_train.jsonl").write_bytes(train_file.read_bytes())
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        accelerate_config,
        "--num_cpu_threads_per_process",
        str(os.cpu_count() or 1),
        "-m",
        "pipelines.train",
        "--params",
        str(ours_params(work, s)),
        "--base",
        str(base),
        "--data",
        str(data),
        "--out",
        str(work / "ours"),
        "--metrics",
        str(work / "ours.json"),
        "--log",
        str(work / "log.jsonl"),
        "--plots",
        str(work / "plots"),
    ]


def bare_cmd(base: Path, train_file: Path, work: Path, s: dict, accelerate_config: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        accelerate_config,
        "--num_cpu_threads_per_process",
        str(os.cpu_count() or 1),
        str(BARE),
        str(base),
        str(train_file),
        str(work / "bare"),
        str(s["steps"]),
        str(s["batch_size"]),
        str(s["max_length"]),
        str(s["r"]),
        str(s["alpha"]),
        str(s["lr"]),
        str(s["beta"]),
    ]


def compare(name: str, base: Path, train_file: Path, settings: dict, repeats: int, accelerate_config: str) -> dict:
    """Interleaved runs of ours and bare; median walls, ratio, and both trainers' own tokens/s."""
    walls = {"ours": [], "bare": []}
    tokens_per_s = {"ours": [], "bare": []}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        work = Path(tmp)
        for i in range(repeats):
            order = ("ours", "bare") if i % 2 == 0 else ("bare", "ours")
            for who in order:
                cmd = (ours_cmd if who == "ours" else bare_cmd)(base, train_file, work, settings, accelerate_config)
                wall, proc = run_timed(cmd)
                walls[who].append(wall)
                if who == "ours":
                    tokens_per_s["ours"].append(json.loads((work / "ours.json").read_text())["train_tokens_per_s"])
                else:
                    tokens_per_s["bare"].append(last_json_line(proc.stdout).get("bare_tokens_per_s"))
                print(f"  {name} {who}: {wall:.2f} s", flush=True)
    ours, bare = statistics.median(walls["ours"]), statistics.median(walls["bare"])
    result = {
        "settings": settings,
        "repeats": repeats,
        "ours_wall_s": round(ours, 2),
        "bare_wall_s": round(bare, 2),
        "ratio": round(ours / bare, 4),
        "overhead_pct": round(100 * (ours / bare - 1), 2),
        "target_overhead_pct": 5.0,
        "walls": {k: [round(w, 2) for w in v] for k, v in walls.items()},
        "ours_tokens_per_s": statistics.median(tokens_per_s["ours"]),
        "bare_tokens_per_s": statistics.median(x for x in tokens_per_s["bare"] if x is not None),
    }
    print(
        f"{name}: ours {ours:.2f} s vs bare TRL {bare:.2f} s → ratio {result['ratio']} "
        f"(overhead {result['overhead_pct']} %, target ≤ 5 %)"
    )
    return result


def export_rows(work: Path) -> Path:
    """The demo's train split (data/export if `dvc repro` ran, else the samples exported here)."""
    ready = REPO / "data" / "export" / "dpo_train.jsonl"
    if ready.is_file():
        return ready
    from ichor.export import ExportConfig, load_records, write_export

    write_export(load_records(REPO / "data" / "sample"), work / "export", ExportConfig())
    return work / "export" / "dpo_train.jsonl"


def long_rows(train_file: Path, out: Path, tokenizer, target_tokens: int) -> Path:
    """Rows padded with real text in front of the question so the longer answer's sequence is about
    ``target_tokens`` long (every batch full-length, as in the reference measurement)."""
    rows = [json.loads(line) for line in train_file.read_text().splitlines() if line.strip()]
    filler = " ".join(r["prompt"][-1]["content"] for r in rows) * 4
    filler_ids = tokenizer(filler, add_special_tokens=False)["input_ids"]

    def length(prompt, answer):
        return len(tokenizer.apply_chat_template(prompt + answer, return_dict=False))

    with open(out, "w") as fh:
        for i, r in enumerate(rows):
            question = r["prompt"][-1]["content"]
            bare = [{"role": "user", "content": question}]
            room = max(0, target_tokens - max(length(bare, r["chosen"]), length(bare, r["rejected"])) - 2)
            offset = (i * 37) % (len(filler_ids) - room - 1)
            context = tokenizer.decode(filler_ids[offset : offset + room])
            prompt = [{"role": "user", "content": context + "\n\n" + question}]
            fh.write(json.dumps({"prompt": prompt, "chosen": r["chosen"], "rejected": r["rejected"]}) + "\n")
    return out


def device_run(args) -> dict:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    if not torch.cuda.is_available():
        raise SystemExit("error: --device-run needs a CUDA GPU")
    results = {"device": torch.cuda.get_device_name(0)}
    with tempfile.TemporaryDirectory(prefix="bench-device-") as tmp:
        work = Path(tmp)
        smol = REPO / "models" / "base"
        if not (smol / "config.json").is_file():
            subprocess.run(
                [sys.executable, "-m", "pipelines.base_model", "--out", str(smol)], cwd=REPO, env=env(), check=True
            )
        tok = AutoTokenizer.from_pretrained(smol)
        data = long_rows(export_rows(work), work / "long.jsonl", tok, DEVICE_SETTINGS["max_length"])
        shapes = {"smollm2-135m": smol}
        if "qwen2.5-1.5b" in args.shapes:
            qwen = work / "qwen2.5-1.5b-shape"
            config = Qwen2Config(vocab_size=151936, **QWEN25_15B_SHAPE)
            Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(qwen)
            tok.save_pretrained(qwen)  # a smaller vocab than the model's: every id stays in range
            shapes["qwen2.5-1.5b"] = qwen
        for name in args.shapes:
            results[name] = compare(
                name,
                shapes[name],
                data,
                DEVICE_SETTINGS,
                args.repeats,
                str(REPO / "configs" / "accelerate" / "single_gpu.yaml"),
            )
            print(
                f"{name}: tokens/s ours {results[name]['ours_tokens_per_s']} vs bare TRL "
                f"{results[name]['bare_tokens_per_s']}"
            )
    return results


def cpu_run(args) -> dict:
    from ichor.testing.tiny_model import build_tiny_model

    results = {}
    cpu_config = str(REPO / "configs" / "accelerate" / "cpu.yaml")
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        work = Path(tmp)
        train_file = export_rows(work)
        if "tiny" in args.models:
            tiny = build_tiny_model(work / "tiny")
            results["tiny"] = compare("tiny", tiny, train_file, CPU_SETTINGS, args.repeats, cpu_config)
        smol = REPO / "models" / "base"
        if "smollm2" in args.models and (smol / "config.json").is_file():
            settings = {**CPU_SETTINGS, "steps": args.smollm2_steps}
            results["smollm2"] = compare("smollm2", smol, train_file, settings, args.smollm2_repeats, cpu_config)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["tiny", "smollm2"], choices=["tiny", "smollm2"])
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs of each (median taken)")
    parser.add_argument("--smollm2-steps", type=int, default=4)
    parser.add_argument("--smollm2-repeats", type=int, default=2)
    parser.add_argument("--device-run", action="store_true", help="CUDA throughput run (see above)")
    parser.add_argument(
        "--shapes", nargs="+", default=["smollm2-135m", "qwen2.5-1.5b"], choices=["smollm2-135m", "qwen2.5-1.5b"]
    )
    args = parser.parse_args(argv)
    if args.device_run:
        data = device_run(args)
        write_result("train_device", data, "python -m bench.bench_train --device-run")
    else:
        data = cpu_run(args)
        write_result("train", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
