"""The `publish` stage against a loopback Hub, with the real huggingface_hub, datasets and DVC."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import huggingface_hub.constants
import pytest
import yaml

from ichor.export import ExportConfig, write_export
from pipelines.publish import dvc_dir_md5, main
from tests.hubstub import HubStub

TOKEN = "hf_ichorPublishToken5e7c9a1b3d5f7e9a1c"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    stub = HubStub(tmp_path / "hub", {TOKEN: ("alice", "write")}).start()
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # conftest turns offline mode on for the whole suite; this loopback stub is the one Hub we may reach.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    yield stub
    stub.stop()


def record(i: int, tag: str) -> dict:
    return {
        "uid": f"{tag}{i:04d}",
        "kind": "correction",
        "label": ["wrong flag", "wrong package manager"][i % 2],
        "user_said": "no, the other one",
        "prompt": [{"role": "user", "content": f"{tag} task {i}"}],
        "rejected": f"wrong answer {i}",
        "accepted": f"right answer {i}",
        "platform": "cli",
        "scrubbed": {},
        "created_at": "2026-11-30T15:00:00Z",
    }


def make_export(folder: Path, n: int, tag: str) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    write_export([record(i, tag) for i in range(n)], folder, ExportConfig(eval_fraction=0.3, seed=0))
    return folder


def write_params(path: Path, **hub) -> Path:
    path.write_text(yaml.safe_dump({"hub": {"push": True, "repo": "ichor-dpo", "visibility": "private", **hub}}))
    return path


def publish(tmp_path, hub, *extra, params=None):
    argv = [
        "--params",
        str(params or write_params(tmp_path / "params.yaml")),
        "--endpoint",
        hub.endpoint,
        "--export-dir",
        str(tmp_path / "export"),
        "--lock",
        str(tmp_path / "dvc.lock"),
        "--metrics",
        str(tmp_path / "metrics" / "publish.json"),
        *extra,
    ]
    return main(argv)


def metrics(tmp_path) -> dict:
    return json.loads((tmp_path / "metrics" / "publish.json").read_text())


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_tags(hub, tmp_path, repo, tags: dict[str, Path]) -> dict:
    """For each tag, ``load_dataset(repo, revision=tag)`` and the same loader on the local export the
    tag was made from (what training reads), in a fresh process: HF_ENDPOINT is read at import time."""
    script = textwrap.dedent(f"""
        import json
        from datasets import load_dataset
        out = {{}}
        for tag, folder in { ({t: str(p) for t, p in tags.items()})!r}.items():
            hub = load_dataset({repo!r}, revision=tag)
            files = {{s: f"{{folder}}/dpo_{{s}}.jsonl" for s in hub}}
            local = load_dataset("json", data_files=files)
            out[tag] = [{{s: hub[s].to_list() for s in hub}}, {{s: local[s].to_list() for s in local}}]
        print(json.dumps(out, default=str))
    """)
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf-home")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert TOKEN not in done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_push_false_writes_the_metric_and_needs_no_token(tmp_path, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    make_export(tmp_path / "export", 3, "a")
    assert publish(tmp_path, hub, params=write_params(tmp_path / "params.yaml", push=False)) == 0
    assert metrics(tmp_path) == {
        "pushed": False,
        "reason": "hub.push is false in params.yaml",
        "repo": "ichor-dpo",
        "revision": None,
        "tag": None,
        "rows": None,
    }
    assert hub.hub.requests == []


def test_two_publishes_make_two_tags_each_loading_its_own_rows(tmp_path, hub, capsys):
    export = make_export(tmp_path / "export", 6, "a")
    assert publish(tmp_path, hub) == 0
    first = metrics(tmp_path)
    shutil.copytree(export, tmp_path / "export-first")
    make_export(export, 9, "b")
    assert publish(tmp_path, hub) == 0
    second = metrics(tmp_path)

    repo = hub.hub.repo("alice/ichor-dpo")
    assert repo.private is True and first["pushed"] and second["pushed"]
    assert first["tag"] != second["tag"] and first["tag"].startswith("data-") and len(first["tag"]) == 17
    assert repo.tags == {first["tag"]: first["revision"], second["tag"]: second["revision"]}
    assert (first["rows"], second["rows"]) == (6, 9)
    loaded = load_tags(
        hub, tmp_path, "alice/ichor-dpo", {first["tag"]: tmp_path / "export-first", second["tag"]: export}
    )
    for tag, rows in ((first["tag"], 6), (second["tag"], 9)):
        from_hub, trained_on = loaded[tag]
        assert from_hub == trained_on and sum(len(r) for r in from_hub.values()) == rows
    uids = {tag: {row["metadata"]["uid"][0] for split in loaded[tag][0].values() for row in split} for tag in loaded}
    assert uids == {first["tag"]: {"a"}, second["tag"]: {"b"}}
    card = hub.hub.read("alice/ichor-dpo", "README.md").decode()
    assert second["tag"] in card and "license: cc-by-4.0" in card
    assert TOKEN not in capsys.readouterr().out


def test_publishing_the_same_data_again_pushes_nothing(tmp_path, hub):
    make_export(tmp_path / "export", 4, "a")
    publish(tmp_path, hub)
    first = metrics(tmp_path)
    commits = len(hub.hub.commits_added("alice/ichor-dpo"))
    assert publish(tmp_path, hub) == 0
    again = metrics(tmp_path)
    assert again["pushed"] is False and again["revision"] == first["revision"] and again["tag"] == first["tag"]
    assert len(hub.hub.commits_added("alice/ichor-dpo")) == commits


def test_public_visibility_is_honoured_for_a_new_repository(tmp_path, hub):
    make_export(tmp_path / "export", 4, "a")
    assert publish(tmp_path, hub, params=write_params(tmp_path / "params.yaml", visibility="public")) == 0
    assert hub.hub.repo("alice/ichor-dpo").private is False and metrics(tmp_path)["private"] is False


def test_dry_run_writes_the_would_be_commit_and_touches_nothing(tmp_path, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    export = make_export(tmp_path / "export", 5, "a")
    dry = tmp_path / "dry"
    assert publish(tmp_path, hub, "--dry-run", str(dry)) == 0

    manifest = json.loads((dry / "commit.json").read_text())
    assert manifest["tag"] == "data-" + dvc_dir_md5(export)[:12]
    assert manifest["repo"] == "<token owner>/ichor-dpo" and manifest["rows"] == 5
    for split in manifest["splits"]:
        assert (dry / "data" / f"{split}.jsonl").read_bytes() == (export / f"dpo_{split}.jsonl").read_bytes()
    assert sorted(f["path"] for f in manifest["files"]) == sorted(
        ["README.md", *(f"data/{s}.jsonl" for s in manifest["splits"])]
    )
    assert manifest["tag"] in (dry / "README.md").read_text()
    assert hub.hub.requests == [] and not (tmp_path / "metrics").exists()


def test_a_stale_dvc_lock_is_refused_in_one_line(tmp_path, hub, capsys):
    make_export(tmp_path / "export", 4, "a")
    (tmp_path / "dvc.lock").write_text(
        yaml.safe_dump(
            {
                "schema": "2.0",
                "stages": {
                    "export": {
                        "outs": [
                            {
                                "path": str(tmp_path / "export"),
                                "hash": "md5",
                                "md5": "0123456789abcdef0123456789abcdef.dir",
                            }
                        ]
                    }
                },
            }
        )
    )
    assert publish(tmp_path, hub) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "changed since" in err and "data-0123456789ab" in err
    assert hub.hub.requests == [] and not (tmp_path / "metrics").exists()


@pytest.mark.parametrize(
    "token, expected",
    [
        ("", "hub.push is true but $HF_TOKEN is empty"),
        ("hf_wrongTokenForThisHub000000000", "the Hub refused the token"),
    ],
)
def test_token_errors_are_one_line_and_write_no_metric(tmp_path, hub, monkeypatch, capsys, token, expected):
    monkeypatch.setenv("HF_TOKEN", token)
    make_export(tmp_path / "export", 4, "a")
    assert publish(tmp_path, hub) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: {expected}") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "metrics").exists() and hub.hub.repos == {}
    assert TOKEN not in out + err and (not token or token not in out + err)


def test_the_token_is_in_no_file_after_a_publish(tmp_path, hub):
    make_export(tmp_path / "export", 4, "a")
    assert publish(tmp_path, hub) == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.parent.name == "blobs" for p in files)
    assert [str(p) for p in files if TOKEN.encode() in p.read_bytes()] == []


def test_under_dvc_repro_the_tag_is_the_md5_dvc_lock_recorded(tmp_path):
    """A real `dvc repro`: the export stage's lock entry is written before publish runs, and our hash agrees."""
    work = tmp_path / "ws"
    make_export(work / "src", 5, "a")
    (work / "params.yaml").write_text(yaml.safe_dump({"hub": {"push": False, "repo": "ichor-dpo"}}))
    (work / "dvc.yaml").write_text(
        yaml.safe_dump(
            {
                "stages": {
                    "export": {
                        "cmd": "python -c \"import shutil; shutil.copytree('src', 'data/export')\"",
                        "deps": ["src"],
                        "outs": ["data/export"],
                    },
                    "publish": {
                        "cmd": "python -m pipelines.publish --dry-run dry",
                        "deps": ["data/export"],
                        "params": ["hub"],
                    },
                }
            }
        )
    )
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{bin_dir}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    for cmd in (["git", "init", "-q"], [f"{bin_dir}/dvc", "init", "-q"], [f"{bin_dir}/dvc", "repro", "-q"]):
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    lock = yaml.safe_load((work / "dvc.lock").read_text())
    recorded = lock["stages"]["export"]["outs"][0]["md5"]
    manifest = json.loads((work / "dry" / "commit.json").read_text())
    assert recorded == dvc_dir_md5(work / "data" / "export")
    assert manifest["tag"] == f"data-{recorded[:12]}" and manifest["tag_source"].startswith("dvc.lock")


def test_a_public_repository_is_refused_while_visibility_is_private_unless_allowed(tmp_path, hub, capsys):
    make_export(tmp_path / "export", 4, "a")
    assert publish(tmp_path, hub, params=write_params(tmp_path / "public.yaml", visibility="public")) == 0
    commits = len(hub.hub.commits_added("alice/ichor-dpo"))
    make_export(tmp_path / "export", 5, "b")
    capsys.readouterr()

    assert publish(tmp_path, hub) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "alice/ichor-dpo is public on the Hub but hub.visibility is private: nothing was pushed" in err
    assert "--allow-public" in err and len(hub.hub.commits_added("alice/ichor-dpo")) == commits

    assert publish(tmp_path, hub, "--allow-public", "true") == 0
    assert metrics(tmp_path)["pushed"] is True and metrics(tmp_path)["private"] is False
    assert hub.hub.repo("alice/ichor-dpo").private is False


def test_a_private_repository_is_never_made_public(tmp_path, hub):
    make_export(tmp_path / "export", 4, "a")
    assert publish(tmp_path, hub) == 0
    make_export(tmp_path / "export", 5, "b")
    assert publish(tmp_path, hub, params=write_params(tmp_path / "public.yaml", visibility="public")) == 0
    assert hub.hub.repo("alice/ichor-dpo").private is True
    assert "left as it was" in metrics(tmp_path)["note"]


def test_publish_pushes_the_data_version_to_the_default_dvc_remote(tmp_path, hub):
    work, remote = tmp_path / "ws", tmp_path / "dvc-remote"
    make_export(work / "src", 5, "a")
    (work / "params.yaml").write_text(yaml.safe_dump({"hub": {"push": True, "repo": "ichor-dpo"}}))
    (work / "dvc.yaml").write_text(
        yaml.safe_dump(
            {
                "stages": {
                    "export": {
                        "cmd": "python -c \"import shutil; shutil.copytree('src', 'data/export')\"",
                        "deps": ["src"],
                        "outs": ["data/export"],
                    },
                    "publish": {
                        "cmd": f"python -m pipelines.publish --endpoint {hub.endpoint}",
                        "deps": ["data/export"],
                        "params": ["hub"],
                        "metrics": [{"metrics/publish.json": {"cache": False}}],
                    },
                }
            }
        )
    )
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "0",
    }
    dvc = f"{bin_dir}/dvc"
    for cmd in (
        ["git", "init", "-q"],
        [dvc, "init", "-q"],
        [dvc, "remote", "add", "-q", "-d", "backup", str(remote)],
        [dvc, "repro", "-q"],
    ):
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr

    result = json.loads((work / "metrics" / "publish.json").read_text())
    assert result["pushed"] is True and result["dvc_remote"]["remote"] == "backup"
    pushed = {p.name for p in remote.rglob("*") if p.is_file()}
    export_md5 = yaml.safe_load((work / "dvc.lock").read_text())["stages"]["export"]["outs"][0]["md5"]
    assert export_md5.removesuffix(".dir")[2:] + ".dir" in pushed  # the directory manifest DVC recorded
    assert result["dvc_remote"]["pushed"] == len(pushed) >= 2
