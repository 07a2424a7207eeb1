"""Stage `rl`: sample fresh answers to the users' prompts with IchorEnv and measure its reward.

1. Serve the trained policy (``models/base`` + ``models/adapter``, merged into a temp folder because
   ``transformers serve`` cannot load a LoRA adapter) with ``transformers serve`` on 127.0.0.1, or
   use ``rl.server`` when it is a URL of any OpenAI-compatible server (vLLM, SGLang, ...).
2. Run ``envs/atropos/ichor_env.py process`` for ``rl.steps`` groups of ``rl.group_size``.
3. Run ``ichor_env.py evaluate``: the reward's pairwise accuracy on the held-out pairs, next to the
   string-similarity baseline measured in the same run, and the policy's win rate vs the rejected answer.
4. Stop the server, whatever happened (its whole process group).

Writes ``data/rl/rollouts.jsonl`` + ``rollouts.html`` (Atropos' viewer), ``data/rl/eval/`` and
``metrics/rl.json``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.common import PipelineError, parse_config, run, section, write_json

ENV_SCRIPT = Path(__file__).resolve().parent.parent / "envs" / "atropos" / "ichor_env.py"
WEIGHT_TERMS = ("anchor", "embedding", "preference", "judge", "truncation", "repetition")


@dataclass
class RLConfig:
    server: str = field(
        default="transformers",
        metadata={
            "help": "`transformers` to serve base+adapter on 127.0.0.1, or the /v1 URL of an OpenAI-compatible server"
        },
    )
    model_name: str = field(default="", metadata={"help": "model name at a URL server (empty: its first model)"})
    steps: int = field(default=4, metadata={"help": "groups to collect"})
    group_size: int = field(default=4, metadata={"help": "rollouts per prompt"})
    max_tokens: int = field(default=64, metadata={"help": "max new tokens per rollout"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature"})
    eval_neighbours: int = field(default=4, metadata={"help": "other pairs used as anchors when measuring"})
    eval_samples: int = field(default=1, metadata={"help": "policy answers per held-out prompt (win rate)"})
    weight_anchor: float = 1.0
    weight_embedding: float = 1.0
    weight_preference: float = 1.0
    weight_judge: float = 0.0
    weight_truncation: float = 0.5
    weight_repetition: float = 0.5
    base: str = field(default="models/base", metadata={"help": "the base model folder"})
    adapter: str = field(default="models/adapter", metadata={"help": "the LoRA adapter (skipped if absent)"})
    pairs: str = field(default="data/export/atropos/pairs.jsonl", metadata={"help": "IchorEnv's items"})
    out_dir: str = field(default="data/rl", metadata={"help": "rollouts and eval output"})
    metrics: str = field(default="metrics/rl.json", metadata={"help": "the stage's figures"})
    startup_timeout: int = field(default=600, metadata={"help": "seconds to wait for the server"})

    @classmethod
    def from_params(cls, params: dict) -> RLConfig:
        rl, weights = section(params, "rl"), (section(params, "reward").get("weights") or {})
        known = {
            f: rl[f]
            for f in (
                "server",
                "model_name",
                "steps",
                "group_size",
                "max_tokens",
                "temperature",
                "eval_neighbours",
                "eval_samples",
            )
            if f in rl
        }
        unknown = set(weights) - set(WEIGHT_TERMS)
        if unknown:
            raise PipelineError(
                f"params.yaml: unknown reward.weights {', '.join(sorted(unknown))} (known: {', '.join(WEIGHT_TERMS)})"
            )
        return cls(
            **{k: (str(v) if k in ("server", "model_name") else v) for k, v in known.items()},
            **{f"weight_{t}": float(w) for t, w in weights.items()},
        )


# ------------------------------------------------------------------------------------------- server


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def policy_folder(base: Path, adapter: Path, workdir: Path) -> Path:
    """What `transformers serve` loads: base + adapter merged (it cannot load a LoRA adapter), or links to
    the base's files when there is no adapter; either way with sampling on in generation_config.json,
    because `transformers serve` samples only when the model's config says so, and a greedy policy
    gives ``group_size`` identical answers, hence groups without signal."""
    if not (base / "config.json").is_file():
        raise PipelineError(f"{base}: no model there (run `dvc repro base_model` first)")
    out = workdir / "policy"
    out.mkdir(parents=True, exist_ok=True)
    if (adapter / "adapter_config.json").is_file():
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
        PeftModel.from_pretrained(model, adapter).merge_and_unload().save_pretrained(out)
        AutoTokenizer.from_pretrained(base).save_pretrained(out)
    else:
        print(f"rl: no adapter in {adapter}, serving the base model", file=sys.stderr)
        for item in base.iterdir():
            if item.name != "generation_config.json":
                (out / item.name).symlink_to(item.resolve())
    gen_file = base / "generation_config.json"
    gen = json.loads(gen_file.read_text()) if gen_file.is_file() else {}
    gen["do_sample"] = True
    (out / "generation_config.json").unlink(missing_ok=True)
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2))
    return out


def wait_ready(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PipelineError(f"the policy server exited with status {proc.returncode} before it was ready", code=1)
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(1.0)
    raise PipelineError(f"the policy server was not ready after {timeout:.0f} s", code=1)


def start_transformers_serve(model_dir: Path, port: int, log: Path, timeout: float) -> subprocess.Popen:
    """`transformers serve` pinned to ``model_dir``, on 127.0.0.1 only, in its own process group."""
    exe = Path(sys.executable).with_name("transformers")
    cmd = [
        str(exe),
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--log-level",
        "warning",
        "--default-seed",
        "0",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_ready(f"http://127.0.0.1:{port}/health", proc, timeout)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def first_model(base_url: str) -> str:
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=30) as resp:
            return json.load(resp)["data"][0]["id"]
    except (OSError, KeyError, IndexError, ValueError) as exc:
        raise PipelineError(f"{base_url}: cannot list its models ({exc}); set rl.model_name", code=1) from None


# ---------------------------------------------------------------------------------------------- env


def env_args(config: RLConfig, base_url: str, model_name: str, tokenizer: str) -> list[str]:
    args = [
        "--env.use_wandb",
        "false",
        "--env.pairs_path",
        config.pairs,
        "--env.tokenizer_name",
        tokenizer,
        "--env.group_size",
        str(config.group_size),
        "--env.max_tokens",
        str(config.max_tokens),
        "--env.temperature",
        str(config.temperature),
        "--env.eval_neighbours",
        str(config.eval_neighbours),
        "--env.eval_samples",
        str(config.eval_samples),
        "--openai.base_url",
        base_url,
        "--openai.model_name",
        model_name,
        "--openai.api_key",
        "local",
        "--openai.server_type",
        "openai",
        "--openai.health_check",
        "false",
        "--openai.n_kwarg_is_ignored",
        "true",
    ]
    for term in WEIGHT_TERMS:
        args += [f"--env.weight_{term}", str(getattr(config, f"weight_{term}"))]
    return args


def run_env(mode: str, args: list[str], log: Path) -> None:
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with log.open("w") as fh:
        done = subprocess.run(
            [sys.executable, str(ENV_SCRIPT), mode, *args], stdout=fh, stderr=subprocess.STDOUT, env=env
        )
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise PipelineError(f"IchorEnv {mode} failed (exit {done.returncode}): {tail[0][:300]} — see {log}", code=1)


def summarise(rollouts: Path, eval_metrics: Path, server: str) -> dict:
    groups = [json.loads(line) for line in rollouts.read_text().splitlines() if line.strip()]
    raw = [o["raw_score"] for g in groups for o in (g.get("overrides") or []) if "raw_score" in o]
    results = json.loads(eval_metrics.read_text())["results"]["all"]
    terms = ("anchor", "embedding", "preference", "judge", "truncation", "repetition")
    return {
        "groups": len(groups),
        "rollouts": sum(len(g["tokens"]) for g in groups),
        "mean_score": sum(raw) / len(raw) if raw else 0.0,
        "reward_pairwise_accuracy": results["eval/reward_pairwise_accuracy"],
        "win_rate_vs_rejected": results["eval/win_rate_vs_rejected"],
        "baseline_string_similarity_accuracy": results["eval/baseline_string_similarity_accuracy"],
        "eval_pairs": results["eval/pairs"],
        "per_term": {
            t: {"accuracy": results[f"eval/accuracy_{t}"], "ties": results[f"eval/ties_{t}"]}
            for t in terms
            if f"eval/accuracy_{t}" in results
        },
        "server": server,
    }


def rl(config: RLConfig) -> dict:
    if not Path(config.pairs).is_file():
        raise PipelineError(f"{config.pairs}: no exported pairs (run `dvc repro export` first)")
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rollouts = out / "rollouts.jsonl"
    rollouts.unlink(missing_ok=True)
    proc = None
    with tempfile.TemporaryDirectory(prefix="ichor-rl-") as tmp:
        try:
            if config.server == "transformers":
                model_dir = policy_folder(Path(config.base), Path(config.adapter), Path(tmp))
                port = free_port()
                print(f"rl: serving {model_dir} with `transformers serve` on 127.0.0.1:{port}", file=sys.stderr)
                proc = start_transformers_serve(model_dir, port, out / "server.log", config.startup_timeout)
                base_url, model_name, tokenizer = f"http://127.0.0.1:{port}/v1", str(model_dir), str(model_dir)
            elif config.server.startswith(("http://", "https://")):
                base_url = config.server.rstrip("/")
                model_name = config.model_name or first_model(base_url)
                tokenizer = config.base
            else:
                raise PipelineError(f"rl.server must be `transformers` or an http(s) URL, not {config.server!r}")
            args = env_args(config, base_url, model_name, tokenizer)
            print(f"rl: collecting {config.steps} groups of {config.group_size}", file=sys.stderr)
            run_env(
                "process",
                [
                    *args,
                    "--env.total_steps",
                    str(config.steps),
                    "--env.max_passes",
                    "1",
                    "--env.data_path_to_save_groups",
                    str(rollouts),
                ],
                out / "process.log",
            )
            print("rl: measuring the reward on the held-out pairs", file=sys.stderr)
            run_env("evaluate", [*args, "--env.data_dir_to_save_evals", str(out / "eval")], out / "evaluate.log")
        finally:
            stop(proc)
    if not rollouts.is_file():
        raise PipelineError("IchorEnv wrote no rollouts (every group had equal scores?)", code=1)
    metrics = summarise(rollouts, out / "eval" / "metrics.json", config.server)
    write_json(config.metrics, metrics)
    return metrics


def main(argv: list[str] | None = None) -> int:
    # SIGTERM (a CI timeout, `kill`) becomes SystemExit, so the `finally` that stops the server runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def body() -> None:
        config = parse_config(RLConfig, argv, __doc__.splitlines()[0])
        m = rl(config)
        print(
            f"rl: {m['groups']} groups, mean reward {m['mean_score']:+.3f}; reward pairwise accuracy "
            f"{m['reward_pairwise_accuracy']:.3f} vs string similarity "
            f"{m['baseline_string_similarity_accuracy']:.3f} "
            f"on {m['eval_pairs']} held-out pairs; win rate vs rejected {m['win_rate_vs_rejected']:.3f}"
        )

    return run(body)


if __name__ == "__main__":
    sys.exit(main())
