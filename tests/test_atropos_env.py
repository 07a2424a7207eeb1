"""IchorEnv end to end on real atroposlib: `process` and `evaluate` against a loopback OpenAI stub,
`serve` through `run-api --host 127.0.0.1` to a fake trainer, the exported folder on its own,
and the rl stage stopping its server when the env fails."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.atropos_stub import PAIRS, build_tokenizer, free_port, start_stub, write_pairs

ROOT = Path(__file__).resolve().parent.parent
ENV_SCRIPT = ROOT / "envs" / "atropos" / "ichor_env.py"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def stub():
    server, url = start_stub()
    yield url
    server.shutdown()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_tokenizer(tmp_path_factory.mktemp("tok"))


def env_run(script: Path, mode: str, cwd: Path, url: str, tok: Path, *extra: str, timeout: int = 240):
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [
        sys.executable,
        str(script),
        mode,
        "--env.use_wandb",
        "false",
        "--env.tokenizer_name",
        str(tok),
        "--openai.base_url",
        url,
        "--openai.model_name",
        "stub",
        *extra,
    ]
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_process_writes_groups_of_int_tokens_with_masked_prompts_and_spread(tmp_path, stub, tokenizer):
    from transformers import AutoTokenizer

    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "out" / "groups.jsonl"
    env_run(
        ENV_SCRIPT,
        "process",
        tmp_path,
        stub,
        tokenizer,
        "--env.pairs_path",
        str(pairs),
        "--env.total_steps",
        "3",
        "--env.group_size",
        "4",
        "--env.data_path_to_save_groups",
        str(out),
    )
    groups = read_jsonl(out)
    assert len(groups) == 3
    assert out.with_suffix(".html").is_file()
    tok = AutoTokenizer.from_pretrained(tokenizer)
    prompts = {p["messages"][0]["content"]: p for p in PAIRS}
    for group in groups:
        assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == 4
        assert len(set(group["scores"])) > 1
        assert abs(sum(group["scores"])) < 1e-6  # mean-centred
        for tokens, masks, messages in zip(group["tokens"], group["masks"], group["messages"], strict=False):
            assert all(type(t) is int for t in tokens) and len(masks) == len(tokens)
            prompt = tok.apply_chat_template(
                messages[:-1], tokenize=True, add_generation_prompt=True, return_dict=False
            )
            assert tokens[: len(prompt)] == prompt
            assert masks[: len(prompt)] == [-100] * len(prompt)
            assert masks[len(prompt) :] == tokens[len(prompt) :]
            assert messages[0]["content"] in prompts and prompts[messages[0]["content"]]["split"] == "train"
        # the canned answer equal to the accepted one is ranked first whenever it is in the group
        texts = [m[-1]["content"] for m in group["messages"]]
        accepted = prompts[group["messages"][0][0]["content"]]["accepted"]
        if accepted in texts:
            assert max(range(4), key=group["scores"].__getitem__) == texts.index(accepted)


def test_exported_folder_runs_evaluate_on_its_own(tmp_path, stub, tokenizer):
    from ichor.atropos_export import write_atropos_env

    export = tmp_path / "export"
    write_pairs(export / "atropos" / "pairs.jsonl")
    folder = write_atropos_env(export)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "ichor_env.py", "pairs.jsonl", "reward.py"]
    assert (folder / "reward.py").read_bytes() == (ROOT / "envs" / "atropos" / "reward.py").read_bytes()
    elsewhere = tmp_path / "elsewhere"  # no repo on the path: only the folder's own files
    elsewhere.mkdir()
    env_run(
        folder / "ichor_env.py",
        "evaluate",
        elsewhere,
        stub,
        tokenizer,
        "--env.data_dir_to_save_evals",
        str(tmp_path / "eval"),
    )
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())["results"]["all"]
    assert metrics["eval/pairs"] == 1
    for key in (
        "eval/reward_pairwise_accuracy",
        "eval/baseline_string_similarity_accuracy",
        "eval/win_rate_vs_rejected",
        "eval/accuracy_embedding",
        "eval/accuracy_preference",
    ):
        assert 0.0 <= metrics[key] <= 1.0
    samples = read_jsonl(tmp_path / "eval" / "samples.jsonl")
    assert len(samples) == 1 and samples[0]["uid"] == "p4"


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def _post(url: str, payload: dict):
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "run-api exited early"
        try:
            return _get(url)
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} never answered")


def _kill(proc: subprocess.Popen):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_serve_through_run_api_reaches_a_fake_trainer(tmp_path, stub, tokenizer):
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    api = subprocess.Popen(
        [str(BIN / "run-api"), "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    serve = None
    try:
        _wait_http(f"{api_url}/status", api)
        _post(
            f"{api_url}/register",
            {
                "wandb_group": "ichor",
                "wandb_project": "ichor",
                "batch_size": 4,
                "max_token_len": 2048,
                "checkpoint_dir": str(tmp_path / "ckpt"),
                "save_checkpoint_interval": 100,
                "starting_step": 0,
                "num_steps": 10,
            },
        )
        _get(f"{api_url}/batch")  # the env only registers once a trainer has asked for a batch
        log = (tmp_path / "serve.log").open("w")
        serve = subprocess.Popen(
            [
                sys.executable,
                str(ENV_SCRIPT),
                "serve",
                "--env.use_wandb",
                "false",
                "--env.tokenizer_name",
                str(tokenizer),
                "--env.pairs_path",
                str(pairs),
                "--env.rollout_server_url",
                api_url,
                "--env.group_size",
                "4",
                "--env.total_steps",
                "10",
                "--env.steps_per_eval",
                "0",
                "--openai.base_url",
                stub,
                "--openai.model_name",
                "stub",
            ],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        batch, deadline = None, time.monotonic() + 150
        while batch is None and time.monotonic() < deadline:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            batch = _get(f"{api_url}/batch").get("batch")
            time.sleep(0.5)
        assert batch, "no batch reached the trainer: " + (tmp_path / "serve.log").read_text()[-3000:]
        group = batch[0]
        assert all(type(t) is int for t in group["tokens"][0]) and len(group["masks"][0]) == len(group["tokens"][0])
        assert sum(len(g["tokens"]) for g in batch) >= 4 and len(set(group["scores"])) > 1
    finally:
        for proc in (serve, api):
            if proc is not None:
                _kill(proc)


def _alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for a parent that never reaps (PID 1 in some containers)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


def test_rl_stage_stops_its_server_when_the_env_fails(tmp_path, monkeypatch):
    from pipelines import rl as stage
    from pipelines.common import PipelineError

    pairs = write_pairs(tmp_path / "pairs.jsonl")
    started = {}

    def fake_serve(model_dir, port, log, timeout):  # a stand-in server process with a child of its own
        proc = subprocess.Popen(
            ["sh", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        started["proc"], started["child"] = proc, int(proc.stdout.readline())
        return proc

    def failing_env(mode, args, log):
        raise PipelineError("IchorEnv process failed (exit 1): boom", code=1)

    monkeypatch.setattr(stage, "policy_folder", lambda base, adapter, tmp: tmp_path)
    monkeypatch.setattr(stage, "start_transformers_serve", fake_serve)
    monkeypatch.setattr(stage, "run_env", failing_env)
    config = stage.RLConfig(pairs=str(pairs), out_dir=str(tmp_path / "rl"), metrics=str(tmp_path / "rl.json"))
    with pytest.raises(PipelineError, match="boom"):
        stage.rl(config)
    assert started["proc"].poll() is not None
    assert not _alive(started["child"])  # the whole group went, the server's own child included
    assert not (tmp_path / "rl.json").exists()


def test_policy_folder_turns_sampling_on_and_merges_an_adapter(tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from ichor.testing.tiny_model import build_tiny_model
    from pipelines.rl import policy_folder

    base = build_tiny_model(tmp_path / "base")
    plain = policy_folder(base, tmp_path / "no-adapter", tmp_path / "w1")
    assert json.loads((plain / "generation_config.json").read_text())["do_sample"] is True
    assert "do_sample" not in json.loads((base / "generation_config.json").read_text())  # base left alone
    assert (plain / "model.safetensors").resolve() == (base / "model.safetensors").resolve()

    model = AutoModelForCausalLM.from_pretrained(base)
    lora = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")
    merged = policy_folder(base, tmp_path / "adapter", tmp_path / "w2")
    assert json.loads((merged / "generation_config.json").read_text())["do_sample"] is True
    assert not (merged / "model.safetensors").is_symlink() and (merged / "tokenizer.json").is_file()
    reloaded = AutoModelForCausalLM.from_pretrained(merged)
    original = AutoModelForCausalLM.from_pretrained(base)
    name = "model.layers.0.self_attn.q_proj.weight"
    assert not reloaded.state_dict()[name].equal(original.state_dict()[name])  # the adapter is in the weights
