"""ichor inside a real Hermes Agent loop (hermes-agent 0.19.0, ``run_agent.AIAgent``).

Each test runs its scenario in a fresh interpreter with its own ``HERMES_HOME`` (Hermes reads it
at import time); the model is an OpenAI-compatible stub on 127.0.0.1, and ichor is found through
its ``hermes_agent.plugins`` entry point, enabled by ``plugins.enabled: [ichor]``.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ichor.testing.hermes_harness import run_scenario

ASK = "list the files in this folder, largest first"
CORRECTION = "no, make it human readable and sorted by size"
MANIFEST = Path(__file__).resolve().parents[1] / "ichor" / "hermes" / "plugin.yaml"


def session(*turns, platform="cli", stream=True, **extra):
    return {"platform": platform, "stream": stream, "turns": list(turns), **extra}


def turn(user, reply, history=None):
    return {"user": user, "reply": reply, "history": history}


def loop(tmp_path, *sessions, **spec):
    return run_scenario({"kind": "loop", "sessions": list(sessions), **spec}, tmp_path / "home")


def test_correction_gives_one_pending_pair(tmp_path):
    report = loop(
        tmp_path,
        session(turn(ASK, "ls -S"), turn(CORRECTION, "ls -lhS"), stream=True),
        session(turn(ASK, "du -a"), turn(CORRECTION, "du -ah | sort -rh"), stream=False, platform="telegram"),
    )
    assert report["plugin"]["enabled"] and report["plugin"]["source"] == "entrypoint"
    assert report["responses"] == ["ls -S", "ls -lhS", "du -a", "du -ah | sort -rh"]
    assert report["model_calls"] == [True, True, False, False]  # both transports were exercised
    pairs = report["pairs"]
    assert [(p["status"], p["kind"], p["rejected"], p["accepted"]) for p in pairs] == [
        ("pending", "correction", "ls -S", "ls -lhS"),
        ("pending", "correction", "du -a", "du -ah | sort -rh"),
    ]
    assert pairs[0]["prompt"] == [{"role": "user", "content": ASK}] and pairs[0]["user_said"] == CORRECTION
    assert [p["platform"] for p in pairs] == ["cli", "telegram"]
    # the CLI pair's card went to the terminal; the telegram one had no chat to go to and waits for review
    assert "ichor · captured pair #1" in report["stdout"]
    assert "decide with /ichor keep 1 (train on it, stays on this machine) · share 1" in report["stdout"]
    assert "captured pair #2" not in report["stdout"]
    manifest = yaml.safe_load(MANIFEST.read_text())  # the manifest declares exactly what was registered
    assert report["plugin"]["hooks"] == sorted(manifest["provides_hooks"])
    assert report["plugin"]["commands"] == manifest["provides_commands"] == ["ichor"]
    assert manifest["provides_tools"] == []


def test_acknowledgement_gives_no_pair(tmp_path):
    report = loop(tmp_path, session(turn(ASK, "ls -lhS"), turn("thanks, perfect", "Glad it helped!")))
    assert report["responses"][-1] == "Glad it helped!"
    assert report["pairs"] == []


def test_same_message_again_gives_retry_pair(tmp_path):
    report = loop(tmp_path, session(turn("hi", "Hello!"), turn(ASK, "ls"), turn(ASK, "ls -lhS", history="rewind")))
    [pair] = report["pairs"]
    assert (pair["kind"], pair["rejected"], pair["accepted"]) == ("retry", "ls", "ls -lhS")
    assert pair["prompt"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": ASK},
    ]


def test_undo_then_new_ask_gives_undo_pair(tmp_path):
    report = loop(
        tmp_path,
        session(
            turn("hi", "Hello!"), turn(ASK, "ls"), turn("show sizes too, biggest first", "ls -lhS", history="rewind")
        ),
    )
    [pair] = report["pairs"]
    assert (pair["kind"], pair["rejected"], pair["accepted"]) == ("undo", "ls", "ls -lhS")
    assert pair["user_said"] == "show sizes too, biggest first"


def test_heavy_shrink_or_new_session_gives_no_pair(tmp_path):
    report = loop(
        tmp_path,
        session(
            turn("a", "1"),
            turn("b", "2"),
            turn(ASK, "ls"),
            turn("what about hidden files", "ls -a", history="compress"),
        ),
        session(turn("hi", "Hello!"), turn(ASK, "ls"), turn("hello again", "Hi!", history="new")),
    )
    assert len(report["responses"]) == 7
    assert report["pairs"] == []


def test_cron_and_subagent_turns_give_no_pair(tmp_path):
    report = loop(
        tmp_path,
        session(turn(ASK, "ls"), turn(CORRECTION, "ls -lhS"), platform="cron"),
        session(turn(ASK, "ls"), turn(CORRECTION, "ls -lhS"), platform="subagent"),
    )
    assert report["responses"][1] == "ls -lhS"
    assert report["pairs"] == [] and report["tracked_sessions"] == 0


def test_paused_capture_stores_nothing(tmp_path):
    chat = session(turn(ASK, "ls"), turn(CORRECTION, "ls -lhS"))
    assert loop(tmp_path / "a", chat, settings={"paused_scopes": ["cli"]})["pairs"] == []
    assert loop(tmp_path / "b", chat, settings={"capture": False})["pairs"] == []


def test_session_finalize_drops_session_state(tmp_path):
    report = loop(tmp_path, session(turn(ASK, "ls"), finalize=True), session(turn(ASK, "ls")))
    assert report["tracked_sessions"] == 1


def test_failures_inside_ichor_never_change_the_turn(tmp_path):
    chat = session(turn(ASK, "ls"), turn(CORRECTION, "ls -lhS"), finalize=True)
    healthy = loop(tmp_path / "ok", chat)
    for parts in (["store"], ["tracker"]):
        broken = loop(tmp_path / parts[0], chat, **{"break": parts})
        assert broken["responses"] == healthy["responses"] == ["ls", "ls -lhS"]
        assert broken["pairs"] == []
        ours = [line for line in broken["log"] if "carries on without it" in line]
        assert ours and all("hermes_plugins.ichor" in line for line in ours)
        assert not [line for line in broken["log"] if "callback" in line and "raised" in line]  # none reached Hermes
    assert len(healthy["pairs"]) == 1


def test_ichor_command_through_hermes_registry(tmp_path):
    report = run_scenario(
        {
            "kind": "command",
            "seed": 2,
            "commands": ["", "review", "keep 1", "discard 2", "set repo my-pairs", "off", "bogus", "on --global"],
        },
        tmp_path / "home",
    )
    assert report["has_handler"]
    status, review, keep, discard, repo, off, bogus, on = report["replies"]
    assert "2 pending" in status and "wrong package manager" in status
    assert "#1" in review and "npm install 0" in review
    assert "kept" in keep and "discarded" in discard
    assert "my-pairs" in repo and "paused in this chat" in off
    assert bogus.startswith("ichor: unknown command")
    assert report["settings"]["repo"] == "my-pairs" and report["settings"]["paused_scopes"] == ["cli"]
    assert report["settings"]["capture"] is True
    assert [(p["id"], p["status"]) for p in report["pairs"]] == [(1, "kept")]


def test_ichor_command_with_a_broken_store_answers_one_line(tmp_path):
    report = run_scenario({"kind": "command", "commands": ["status"], "break": ["store"]}, tmp_path / "home")
    [reply] = report["replies"]
    assert reply.startswith("ichor: OSError") and "\n" not in reply


def test_directory_install_is_discovered(tmp_path):
    report = loop(
        tmp_path, session(turn(ASK, "ls"), turn(CORRECTION, "ls -lhS")), install_dirs=["ichor"], hide_entry_points=True
    )
    assert report["plugin"]["source"] == "user" and report["plugin"]["enabled"]
    assert (tmp_path / "home" / "plugins" / "ichor" / "plugin.yaml").read_text() == MANIFEST.read_text()
    assert [p["accepted"] for p in report["pairs"]] == ["ls -lhS"]


REPO = Path(__file__).resolve().parents[1]


def test_the_repository_plugin_folder_is_what_install_plugin_writes():
    from ichor.hermes.install import LOADER, manifest_text

    folder = REPO / "hermes-plugin"
    assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == ["__init__.py", "plugin.yaml"]
    assert (folder / "plugin.yaml").read_text() == manifest_text()
    assert (folder / "__init__.py").read_text() == LOADER


def test_hermes_plugins_install_of_the_repository_folder_loads(tmp_path):
    """`hermes plugins install OWNER/REPO/hermes-plugin`, from a local clone instead of GitHub."""
    hermes = Path(sys.executable).parent / "hermes"
    if not shutil.which("git") or not hermes.exists():
        pytest.skip("needs git and the hermes command beside this Python")
    source = tmp_path / "source"
    shutil.copytree(REPO / "hermes-plugin", source / "hermes-plugin")
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "plugin"]):
        subprocess.run([*git, *args], cwd=source, check=True)
    home = tmp_path / "home"
    env = {**os.environ, "HERMES_HOME": str(home), "NO_COLOR": "1"}
    done = subprocess.run(
        [str(hermes), "plugins", "install", f"file://{source}#hermes-plugin", "--enable"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (home / "plugins" / "ichor" / "plugin.yaml").read_text() == MANIFEST.read_text()
    assert "ichor" in yaml.safe_load((home / "config.yaml").read_text())["plugins"]["enabled"]
    report = loop(tmp_path, session(turn(ASK, "ls"), turn(CORRECTION, "ls -lhS")), hide_entry_points=True)
    assert report["plugin"]["source"] == "user" and report["plugin"]["enabled"]
    assert [p["accepted"] for p in report["pairs"]] == ["ls -lhS"]
