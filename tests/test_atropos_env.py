"""IchorEnv end to end on real atroposlib: `process` and `evaluate` against a loopback OpenAI stub, with
params.yaml's or the exported folder's reward weights; `serve` through `run-api --host 127.0.0.1` to a fake
trainer that applies a policy-gradient step to a tiny torch model."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ichor.reward import Item, Reward, Rollout, load_spec
from tests.atropos_stub import PAIRS, build_tokenizer, free_port, start_stub, write_pairs

WEIGHTS = {"checks": 2.0, "difference": 0.5, "truncation": 1.5, "echo": 1.0}  # not the defaults

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


def write_params(folder: Path, weights: dict) -> Path:
    import yaml

    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump({"reward": {"weights": weights}}))
    return path


def test_process_writes_groups_of_int_tokens_with_masked_prompts_and_spread(tmp_path, stub, tokenizer):
    from transformers import AutoTokenizer

    pairs = write_pairs(tmp_path / "pairs.jsonl")
    write_params(tmp_path, WEIGHTS)  # picked up from the working directory, as `dvc repro`'s workspace has it
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
        # the raw rewards are params.yaml's weights applied by ichor.reward, nothing else
        texts = [m[-1]["content"] for m in group["messages"]]
        reasons = [o["finish_reason"] for o in group["overrides"]]
        item = Item.from_row(prompts[group["messages"][0][0]["content"]])
        expected = Reward(WEIGHTS).score(item, [Rollout(t, r) for t, r in zip(texts, reasons, strict=True)])
        assert [o["raw_score"] for o in group["overrides"]] == pytest.approx(expected)


def test_exported_folder_runs_evaluate_on_its_own_with_the_weights_it_was_exported_with(tmp_path, stub, tokenizer):
    from ichor.atropos_export import write_atropos_env

    export = tmp_path / "export"
    write_pairs(export / "atropos" / "pairs.jsonl")
    spec = load_spec(write_params(tmp_path, WEIGHTS))
    folder = write_atropos_env(export, reward_spec=spec)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "ichor_env.py", "pairs.jsonl", "reward.json"]
    assert load_spec(folder / "reward.json") == spec
    elsewhere = tmp_path / "elsewhere"  # no repo and no params.yaml here: only the folder's own files
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
    assert metrics["eval/prompts"] == 1 and metrics["eval/answers"] == 1 and metrics["eval/answers_with_checks"] == 1
    assert 0.0 <= metrics["eval/correction_satisfaction"] <= 1.0
    samples = read_jsonl(tmp_path / "eval" / "samples.jsonl")
    assert len(samples) == 1 and samples[0]["uid"] == "p4"
    held_out = Item.from_row(PAIRS[3])
    answer = Rollout(samples[0]["response"], samples[0]["finish_reason"])
    assert samples[0]["reward"] == pytest.approx(Reward(WEIGHTS).score(held_out, [answer])[0])
    assert samples[0]["reward"] != pytest.approx(Reward().score(held_out, [answer])[0])  # the defaults differ


def test_tokenize_rollout_gives_int_lists_and_masks_the_prompt(tokenizer):
    from transformers import AutoTokenizer

    from envs.atropos.ichor_env import tokenize_rollout

    tok = AutoTokenizer.from_pretrained(tokenizer)
    messages = [{"role": "user", "content": "install the dependencies of my project"}]
    tokens, masks = tokenize_rollout(tok, messages, "Run npm install.")
    prompt = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=False)
    assert isinstance(tokens, list) and all(type(t) is int for t in tokens)
    assert len(masks) == len(tokens)
    assert masks[: len(prompt)] == [-100] * len(prompt)
    assert masks[len(prompt) :] == tokens[len(prompt) :] and all(m != -100 for m in masks[len(prompt) :])
    assert tok.decode(tokens[len(prompt) :]).startswith("Run npm install.")


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


def policy_gradient_step(batch: list[dict], vocab: int) -> float:
    """What a GRPO trainer does with a batch, on a tiny torch model: z-normalise the scores inside each group
    and raise the log-probability of the trained (unmasked) tokens in proportion. Returns how far the
    weights moved."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, 8), torch.nn.Linear(8, vocab))
    before = [p.detach().clone() for p in model.parameters()]
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.zeros(())
    for group in batch:
        scores = torch.tensor(group["scores"], dtype=torch.float32)
        advantages = (scores - scores.mean()) / (scores.std() + 1e-6)
        for tokens, masks, advantage in zip(group["tokens"], group["masks"], advantages, strict=True):
            ids = torch.tensor(tokens)
            logp = torch.log_softmax(model(ids[:-1]), -1).gather(-1, ids[1:, None])[:, 0]
            trained = torch.tensor(masks[1:]) != -100
            loss = loss - advantage * logp[trained].sum()
    loss.backward()
    optimiser.step()
    return sum(float((p.detach() - b).abs().sum()) for p, b in zip(model.parameters(), before, strict=True))


def test_serve_through_run_api_feeds_a_fake_trainer_that_updates_a_model(tmp_path, stub, tokenizer):
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
        from transformers import AutoTokenizer

        assert policy_gradient_step(batch, len(AutoTokenizer.from_pretrained(tokenizer))) > 0.0
    finally:
        for proc in (serve, api):
            if proc is not None:
                _kill(proc)
