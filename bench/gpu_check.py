"""``make gpu-check``: the train stage on a GPU with each accelerate config that fits one device, recording
bf16 tokens/s and peak memory, on the bundled samples and SmolLM2-135M (the demo's model).

Everything it needs is prepared here: a workspace copy in ``--work`` with the audited and exported samples,
a params.yaml with the GPU shape (batch 16, 512 tokens, LoRA r=16 on q/k/v/o, one epoch), and one
``accelerate launch`` per config. Results go to ``bench/results/gpu_check.json`` and one line each to stdout.
Configs whose backend is not installed (DeepSpeed) are reported as skipped, not run.
Reference (bare TRL LoRA-DPO at this shape on an H200): 79,331 tokens/s in 10.7 GiB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ("single_gpu", "fsdp", "deepspeed_zero3")
GPU_SHAPE = {
    "dpo": {
        "per_device_train_batch_size": 16,
        "per_device_eval_batch_size": 16,
        "max_length": 512,
        "num_train_epochs": 1,
        "dataset_num_proc": 4,
        "dataloader_num_workers": 2,
    },
    "lora": {"r": 16, "lora_alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]},
}


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def prepare(work: Path) -> Path:
    """Audited + exported samples and a base model in ``work``; params with the GPU shape."""
    work.mkdir(parents=True, exist_ok=True)
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    for section, values in GPU_SHAPE.items():
        params[section].update(values)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    py, p = sys.executable, ["--params", str(work / "params.yaml")]
    steps = [
        [
            py,
            "-m",
            "pipelines.audit",
            *p,
            "--pairs",
            str(work / "no-pairs"),
            "--samples",
            "data/sample",
            "--out",
            str(work / "audited.jsonl"),
            "--metrics",
            str(work / "audit.json"),
        ],
        [
            py,
            "-m",
            "pipelines.export",
            *p,
            "--source",
            str(work / "audited.jsonl"),
            "--out",
            str(work / "export"),
            "--metrics",
            str(work / "export.json"),
        ],
    ]
    if not (work / "base" / "config.json").is_file():
        steps.append([py, "-m", "pipelines.base_model", *p, "--out", str(work / "base")])
    for cmd in steps:
        done = run(cmd, REPO)
        if done.returncode:
            raise SystemExit(f"gpu-check: preparing failed: {done.stderr.strip().splitlines()[-1:]}")
    return work / "params.yaml"


def check(config: str, work: Path, params: Path) -> dict:
    if config.startswith("deepspeed") and importlib.util.find_spec("deepspeed") is None:
        return {"config": config, "skipped": "deepspeed is not installed (pip install deepspeed)"}
    out = work / config
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        f"configs/accelerate/{config}.yaml",
        "-m",
        "pipelines.train",
        "--params",
        str(params),
        "--base",
        str(work / "base"),
        "--data",
        str(work / "export"),
        "--out",
        str(out / "adapter"),
        "--metrics",
        str(out / "train.json"),
        "--log",
        str(out / "log.jsonl"),
        "--plots",
        str(out / "plots"),
    ]
    done = run(cmd, REPO)
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"config": config, "failed": tail[0]}
    metrics = json.loads((out / "train.json").read_text(encoding="utf-8"))
    keys = ("device", "precision", "train_tokens_per_s", "peak_memory_gib", "train_wall_s", "steps")
    return {"config": config, **{k: metrics.get(k) for k in keys}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/ichor-gpu-check", help="scratch folder (default: %(default)s)")
    parser.add_argument("--out", default="bench/results/gpu_check.json", help="where the results go")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu-check: no CUDA device here; run it on a GPU machine")
        return 1
    work = Path(args.work)
    params = prepare(work)
    results = {"gpu": torch.cuda.get_device_name(0), "bf16_supported": torch.cuda.is_bf16_supported(), "runs": []}
    for config in CONFIGS:
        result = check(config, work, params)
        results["runs"].append(result)
        print("gpu-check:", json.dumps(result), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(work / "export", ignore_errors=True)
    return 0 if all("failed" not in r for r in results["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
