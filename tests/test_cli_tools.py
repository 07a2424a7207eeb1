"""``ichor detect``, ``eval`` and ``scrub`` as a demanding user runs them: bad bytes, bad lines, closed or full
output, options that make no sense, and the profile's refitted detector."""

import http.server
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ichor import openai_chat
from ichor.cli import main
from ichor.detect_refit import DECISIONS, PROFILE_MODEL, note_decision
from ichor.evaluate import evaluate, format_report, source_of
from ichor.store import Store

ROOT = Path(__file__).resolve().parents[1]


def row(wid, user, gold="none", **extra):
    return {
        "id": wid,
        "prev_user": "install the deps",
        "prev_assistant": "Run `npm install`.",
        "user": user,
        "assistant": "ok",
        "is_correction": gold != "none",
        "kind": gold,
        **extra,
    }


GOOD = [row("a", "no, use pnpm instead", "correction"), row("b", "thanks, perfect!")]


def jsonl(*rows) -> bytes:
    return b"".join(r if isinstance(r, bytes) else json.dumps(r).encode() + b"\n" for r in rows)


def run(capsys, monkeypatch, *argv, stdin=b""):
    """``ichor ARGV`` in-process, stdin given as bytes behind a text stream, as a terminal or a pipe gives it."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="ascii"))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def shell(command: str, env=None, **kwargs) -> subprocess.CompletedProcess:
    """``command`` in sh, ``ichor`` being this checkout's command line."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    ichor = f"{sys.executable} -m ichor.cli"
    return subprocess.run(
        ["sh", "-c", command.replace("ichor ", ichor + " ", 1)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        **kwargs,
    )


# ------------------------------------------------------------------------------- output and input


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize(
    "command", ["ichor detect < {good}", "ichor eval {good}", "ichor status", "ichor --help", "ichor help eval"]
)
def test_a_full_disk_is_one_line_not_a_traceback(command, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(*GOOD))
    proc = shell(command.format(good=good) + " > /dev/full", env={"HERMES_HOME": str(tmp_path)})
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "ichor: can't write (the output): No space left on device"
    ]


@pytest.mark.parametrize(
    "command, message",
    [
        ("ichor detect <&-", "ichor: stdin is closed: pipe JSON lines in or name a FILE"),
        ("ichor scrub <&-", "ichor: stdin is closed: pipe JSON lines in or name a FILE"),
        ("ichor detect < {good} >&-", "ichor: stdout is closed: nowhere to write the output"),
        ("ichor status >&-", "ichor: stdout is closed: nowhere to write the output"),
        ("ichor --help >&-", "ichor: stdout is closed: nowhere to write the output"),
        ("ichor detect --help >&-", "ichor: stdout is closed: nowhere to write the output"),
    ],
)
def test_a_closed_stdin_or_stdout_is_one_line(command, message, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(*GOOD))
    proc = shell(command.format(good=good), env={"HERMES_HOME": str(tmp_path)})
    assert proc.returncode == 2 and proc.stderr.splitlines() == [message]


@pytest.mark.parametrize("value", ["nan", "inf", "1e10", "-1", "0", "soon"])
def test_timeout_must_be_finite_above_zero_and_at_most_600(value, capsys, monkeypatch):
    argv = ["detect", "--llm", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", value]
    code, out, err = run(capsys, monkeypatch, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--timeout: must be a number of seconds above 0 and at most 600" in err


def test_a_bom_is_accepted_and_bad_lines_are_each_reported_then_counted(capsys, monkeypatch):
    stdin = b"\xef\xbb\xbf" + jsonl(GOOD[0], b"not json\n", b'{"user": "caf\xff\xfe"}\n', GOOD[1], b"[1]\n", {"x": 1})
    code, out, err = run(capsys, monkeypatch, "detect", stdin=stdin)
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["a", "b"]
    assert err.splitlines() == [
        "ichor: stdin line 2: not valid JSON (Expecting value)",
        "ichor: stdin line 3: not valid UTF-8 (byte 0xff at byte 14)",
        "ichor: stdin line 5: expected a JSON object",
        "ichor: stdin line 6: no field 'user'",
        "ichor: 4 of 6 lines skipped",
    ]
    assert code == 2


@pytest.mark.parametrize("env", [{"LC_ALL": "C"}, {"LC_ALL": "C.UTF-8"}, {"PYTHONIOENCODING": "utf-8:strict"}])
def test_invalid_utf8_is_the_same_error_whatever_the_locale(env, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(GOOD[0], b'{"user": "\xff\xfe"}\n', GOOD[1]))
    proc = shell(f"ichor detect < {bad}", env=env)
    assert proc.returncode == 2 and len(proc.stdout.splitlines()) == 2
    assert proc.stderr.splitlines() == [
        "ichor: stdin line 2: not valid UTF-8 (byte 0xff at byte 11)",
        "ichor: 1 of 3 lines skipped",
    ]
    proc = shell(f"ichor eval {bad}", env=env)
    assert proc.returncode == 2 and f"{bad} line 2: not valid UTF-8" in proc.stderr


def test_detect_reads_a_file_and_a_file_named_like_an_action(tmp_path, capsys, monkeypatch):
    data = tmp_path / "refit"
    data.write_bytes(jsonl(*GOOD))
    monkeypatch.chdir(tmp_path)
    for target in (str(data), "./refit"):
        code, out, _ = run(capsys, monkeypatch, "detect", target)
        assert code == 0 and [json.loads(line)["id"] for line in out.splitlines()] == ["a", "b"]
    code, out, _ = run(capsys, monkeypatch, "detect", "-", stdin=jsonl(*GOOD))
    assert code == 0 and len(out.splitlines()) == 2
    code, _, err = run(capsys, monkeypatch, "detect", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "can't read" in err


def test_json_output_survives_an_ascii_stdout_and_text_output_is_one_line(tmp_path):
    proc = shell("printf 'caf\\303\\251' | ichor scrub", env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and json.loads(proc.stdout)["text"] == "café"
    with Store.open(tmp_path) as store:
        store.set_setting("license", "café")
    proc = shell(f"ichor status --home {tmp_path}", env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 2 and proc.stderr == "ichor: stdout's encoding (ascii) can't hold this text: use UTF-8\n"


def test_a_nan_id_comes_back_as_valid_json(capsys, monkeypatch):
    code, out, _ = run(
        capsys, monkeypatch, "detect", stdin=b'{"id": NaN, "user": "ok"}\n{"id": -Infinity, "user": "x"}\n'
    )
    assert code == 0 and [json.loads(line)["id"] for line in out.splitlines()] == ["NaN", "-Infinity"]


def test_deep_nesting_names_its_line(capsys, monkeypatch):
    code, _, err = run(capsys, monkeypatch, "detect", stdin=jsonl(GOOD[0], b"[" * 100000 + b"\n"))
    assert code == 2 and "stdin line 2: not valid JSON (nested too deeply)" in err


def test_scrub_jsonl_goes_on_after_a_bad_line_and_plain_scrub_refuses_invalid_utf8(capsys, monkeypatch):
    code, out, err = run(
        capsys, monkeypatch, "scrub", "--jsonl", stdin=jsonl({"id": 1, "text": 5}, {"id": 2, "text": "hi"})
    )
    assert code == 2 and json.loads(out)["id"] == 2
    assert err.splitlines() == ["ichor: stdin line 1: field 'text' must be a string", "ichor: 1 of 2 lines skipped"]
    code, out, err = run(capsys, monkeypatch, "scrub", stdin=b"\xef\xbb\xbfok \xff")
    assert code == 2 and out == "" and "stdin: not valid UTF-8 (byte 0xff at byte 7)" in err


# ------------------------------------------------------------------------------------------ eval


def test_eval_reads_stdin_given_as_dash(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "eval", "-", "--json", stdin=jsonl(*GOOD))
    assert code == 0 and json.loads(out)["n"] == 2


def test_eval_refuses_a_file_listing_five_bad_lines_and_the_count(tmp_path, capsys, monkeypatch):
    rows = [
        row("1", "x", kind="bogus"),
        row("2", "x", "correction", is_correction=False),
        row("3", "x", kind=["none"]),
        {k: v for k, v in row("4", "x").items() if k != "user"},
        dict(row("5", "x"), user=7),
        row("6", "x", is_correction="yes"),
        row("7", "x", "retry", is_correction=False),
        *GOOD,
    ]
    code, out, err = run(capsys, monkeypatch, "eval", "-", stdin=jsonl(*rows))
    lines = err.splitlines()
    assert code == 2 and out == "" and len(lines) == 6
    assert lines[0] == "ichor: stdin line 1: field 'kind' must be one of correction, retry, none (or absent)"
    assert lines[1] == "ichor: stdin line 2: 'kind': \"correction\" disagrees with 'is_correction': false"
    assert lines[3] == "ichor: stdin line 4: no field 'user'" and lines[4].startswith(
        "ichor: stdin line 5: field 'user'"
    )
    assert lines[5] == "ichor: stdin: 7 bad lines, the first 5 above; nothing evaluated"


def test_eval_takes_kind_as_optional(capsys, monkeypatch):
    rows = [{k: v for k, v in r.items() if k != "kind"} for r in GOOD]
    code, out, _ = run(capsys, monkeypatch, "eval", "-", "--json", stdin=jsonl(*rows))
    assert code == 0 and json.loads(out)["overall"]["tp"] == 1


def test_a_null_source_is_no_source():
    rows = [row(str(i), "no, use pnpm" if i % 2 else "thanks", "correction" if i % 2 else "none") for i in range(12)]
    with_null = [dict(r, source=None) for r in rows]
    assert source_of(with_null[0]) == "" and source_of({"source": "repo@3"}) == "repo"
    assert evaluate(with_null)["overall"]["sources"] == evaluate(rows)["overall"]["sources"] == 12
    assert "resampling 12 windows" in format_report(evaluate(with_null))


def test_a_ratio_over_no_window_is_a_dash_in_tables_and_null_in_json(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "eval", "-", stdin=jsonl(*GOOD))
    retry = next(line for line in out.splitlines() if line.startswith("retry"))
    assert code == 0 and "– (0/0)" in retry and "0.000" not in retry and retry.rstrip().endswith("–")
    code, out, _ = run(capsys, monkeypatch, "eval", "-", "--json", stdin=jsonl(*GOOD))
    retry_json = json.loads(out)["kinds"]["retry"]
    assert retry_json["precision"]["value"] is None and retry_json["f1"] is None


# ------------------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "argv, message",
    [
        (["detect", "--model", "m"], "--model goes with --llm URL"),
        (["detect", "--key-env", "K"], "--key-env goes with --llm URL"),
        (["detect", "--timeout", "5"], "--timeout goes with --llm URL"),
        (["eval", "-", "--model", "m"], "--model goes with --llm URL"),
        (["detect", "--llm", "", "--model", "m"], "--llm needs the endpoint's URL"),
        (["detect", "--json"], "--json goes with 'ichor detect refit'"),
        (["detect", "refit", "--yes"], "--yes goes with 'ichor detect forget'"),
        (["detect", "forget", "--json"], "--json goes with 'ichor detect refit'"),
        (["detect", "refit", "--llm", "http://x/v1"], "--llm does not go with 'ichor detect refit'"),
    ],
)
def test_options_that_make_no_sense_are_refused(argv, message, capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, *argv, stdin=jsonl(*GOOD))
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


@pytest.mark.parametrize("value", ["sk-SECRETKEY123", "hf_SECRETTOKEN123abc", "a key with spaces"])
def test_a_key_given_to_key_env_is_never_echoed(value, capsys, monkeypatch):
    argv = ["detect", "--llm", "http://127.0.0.1:9/v1", "--model", "m", "--key-env", value]
    code, out, err = run(capsys, monkeypatch, *argv)
    assert code == 2 and err == "ichor: --key-env takes the name of an environment variable, not a key\n"
    assert value not in out + err


@pytest.mark.parametrize("value", ["sk-proj-SECRETKEY123", "hf_SECRETTOKEN123abc"])
def test_the_token_setting_refuses_a_key_without_echoing_it(value, home, capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, "set", "hf-token-env", value)
    assert code == 2 and value not in out + err and "takes the name of an environment variable" in err
    code, out, _ = run(capsys, monkeypatch, "status")
    assert value not in out


def test_a_key_stored_before_names_were_checked_is_not_shown(home, capsys, monkeypatch):
    with Store.open() as store:
        store.set_setting("hf_token_env", "hf_SECRETTOKEN123abc")
    code, out, _ = run(capsys, monkeypatch, "status")
    assert code == 0 and "hf_SECRETTOKEN123abc" not in out and "hidden" in out


def test_confirm_model_can_be_cleared(home, capsys, monkeypatch):
    for cleared in ("none", ""):
        run(capsys, monkeypatch, "set", "confirm-model", "small-model")
        code, out, _ = run(capsys, monkeypatch, "set", "confirm-model", cleared)
        assert code == 0 and out.strip() == "ichor · confirm-model = host's model"
        out = run(capsys, monkeypatch, "status")[1]
        assert "confirm-model  host's model" in out
        assert json.loads(run(capsys, monkeypatch, "status", "--json")[1])["settings"]["confirm_model"] is None


# ---------------------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", ["detect", "eval", "scrub", "completion"])
def test_help_shows_a_shell_only_command(command, capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "help", command)
    assert code == 0 and out.startswith(f"usage: ichor {command}")


def test_chat_help_points_a_shell_only_command_to_the_shell(store):
    from ichor import commands

    assert commands.run_chat(store, "help detect").text == "ichor: detect runs in a shell only: ichor help detect"


def test_detect_and_eval_help_give_an_example_and_describe_their_input(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "detect", "--help")
    assert code == 0
    assert "example:" in out and "| ichor detect" in out and "./refit" in out and "shipped detector" in out
    out = " ".join(run(capsys, monkeypatch, "eval", "--help")[1].split())
    assert "example:" in out and "ichor eval corrections-dev.jsonl" in out
    assert "kind (correction, retry or none" in out and "source (the repository" in out and "fitted on" in out


def test_set_help_names_every_setting(capsys, monkeypatch):
    from ichor.commands import shown_settings

    out = " ".join(run(capsys, monkeypatch, "set", "--help")[1].split()).replace("- ", "-")
    assert all(name in out for name in shown_settings())


def test_the_readme_names_every_network_call():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    sentence = readme[readme.index("The only network calls") :].split(". ")[0]
    assert "`ichor share`" in sentence and "`ichor detect --llm`" in sentence and "`ichor eval --llm`" in sentence


# ------------------------------------------------------------------------------------- stage 2


@pytest.fixture
def not_found_url():
    """An endpoint that answers 404 to everything, as a server whose API is under /v1 answers a URL without it."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_404_hints_at_v1_and_never_shows_the_key(not_found_url, monkeypatch):
    monkeypatch.setenv("ICHOR_TEST_KEY", "sk-very-secret")
    with pytest.raises(openai_chat.ChatError) as caught:
        openai_chat.complete([], url=not_found_url, model="m", api_key_env="ICHOR_TEST_KEY")
    assert "HTTP Error 404" in str(caught.value) and "(does the URL end in /v1?)" in str(caught.value)
    assert "sk-very-secret" not in str(caught.value)


def test_eval_exits_1_and_says_so_when_stage_2_answered_no_call(not_found_url, tmp_path):
    data = tmp_path / "windows.jsonl"
    data.write_bytes(jsonl(*GOOD))
    proc = shell(f"ichor eval {data} --llm {not_found_url} --model m --timeout 5")
    assert proc.returncode == 1 and "stage 1 + 2" in proc.stdout
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("ichor: stage 2 answered none of 1 calls (") and "does the URL end in /v1?" in last
    assert last.endswith("): the stage 1 + 2 figures are stage 1's")


def test_detect_exits_1_and_says_so_when_the_model_answered_no_call(not_found_url, tmp_path):
    data = tmp_path / "windows.jsonl"
    data.write_bytes(jsonl(*GOOD))
    proc = shell(f"ichor detect {data} --llm {not_found_url} --model m --timeout 5")
    assert proc.returncode == 1
    assert [json.loads(line)["stage"] for line in proc.stdout.splitlines()] == [1] * len(GOOD)
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("ichor: stage 2 answered none of 1 calls (") and "does the URL end in /v1?" in last
    assert last.endswith("): every line above is the local detector's decision")


def test_a_dead_endpoint_prints_three_fallbacks_then_a_count(not_found_url, tmp_path):
    data = tmp_path / "windows.jsonl"
    data.write_bytes(jsonl(*(dict(GOOD[0], id=str(i)) for i in range(7))))
    proc = shell(f"ichor detect {data} --llm {not_found_url} --model m --timeout 5")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 7
    assert len(lines) == 5 and all("stage 1 decides" in line for line in lines[:3])
    assert lines[3] == "ichor: 4 more stage-2 fallbacks like these"
    assert lines[4].startswith("ichor: stage 2 answered none of 7 calls (")


def test_detect_exits_1_when_every_answer_was_garbage(tmp_path, capsys, monkeypatch):
    from ichor.testing.hermes_harness import CONFIRMATION, StubLLM

    stub = StubLLM()
    stub.reply_when[CONFIRMATION] = "I think so, yes."
    try:
        argv = ["detect", "--llm", stub.base_url, "--model", "m"]
        code, out, err = run(capsys, monkeypatch, *argv, stdin=jsonl(GOOD[0]))
    finally:
        stub.close()
    assert code == 1 and json.loads(out)["stage"] == 1 and len(stub.requests) == 1
    assert err.splitlines()[-1].startswith("ichor: stage 2 answered none of 1 calls (garbage)")


# -------------------------------------------------------------------------------- the refit


def decide_some(home, n=4):
    with Store.open(home) as store:
        for i in range(n):
            note_decision(store, "list files", "ls -S", f"no, human readable {i}", "ls -lhS", True, key=f"k{i}")
            note_decision(store, "list files", "ls -S", f"thanks, now the docs {i}", "ok", False, key=f"d{i}")
        return Path(store.path).parent


def test_the_refit_report_says_what_its_figures_are_and_how_to_undo_it(home, capsys, monkeypatch):
    decide_some(home)
    code, out, _ = run(capsys, monkeypatch, "detect", "refit")
    assert code == 0 and "the ones it was fitted on (so not a measure of quality)" in out
    models = [line for line in out.splitlines() if line.endswith(" after")]
    assert len(models) == 1 and models[0].startswith("  windows with or without the assistant's reply: ")
    assert "now decides in Hermes for this profile" in out and "ichor detect forget --yes" in out


def test_forget_asks_first_then_deletes_the_log_and_the_refitted_detector(home, capsys, monkeypatch):
    folder = decide_some(home)
    run(capsys, monkeypatch, "detect", "refit")
    code, _, err = run(capsys, monkeypatch, "detect", "forget")
    assert code == 2 and str(folder / DECISIONS) in err and "--yes" in err and (folder / PROFILE_MODEL).exists()
    code, out, _ = run(capsys, monkeypatch, "detect", "forget", "--yes")
    assert code == 0 and "the shipped detector decides again" in out
    assert not (folder / DECISIONS).exists() and not (folder / PROFILE_MODEL).exists()
    code, out, _ = run(capsys, monkeypatch, "detect", "forget")
    assert code == 0 and out.startswith("nothing to forget")


def test_refitted_says_when_the_profile_has_no_refitted_detector(home, capsys, monkeypatch):
    home.mkdir()
    for argv in (["detect", "--refitted"], ["eval", "-", "--refitted"]):
        code, _, err = run(capsys, monkeypatch, *argv, stdin=jsonl(*GOOD))
        assert code == 2 and "no refitted detector in" in err and "(make one with: ichor detect refit)" in err
    assert not (home / "plugin-data").exists()


def model_paths_loaded(monkeypatch) -> list:
    """Every model path the detector loads from here on (None: the shipped model)."""
    import ichor.detect as detect

    paths: list = []
    real = detect.detect_model.load
    monkeypatch.setattr(detect.detect_model, "load", lambda path=None: paths.append(path) or real(path))
    return paths


def test_refitted_detector_decides_detect_and_eval(home, capsys, monkeypatch):
    decide_some(home)
    run(capsys, monkeypatch, "detect", "refit")
    paths = model_paths_loaded(monkeypatch)
    run(capsys, monkeypatch, "detect", "--refitted", stdin=jsonl(*GOOD))
    run(capsys, monkeypatch, "eval", "-", "--refitted", stdin=jsonl(*GOOD))
    assert paths and all(Path(p).name == PROFILE_MODEL for p in paths)
    paths.clear()
    run(capsys, monkeypatch, "detect", stdin=jsonl(*GOOD))
    assert paths and not any(paths)  # without --refitted, the shipped detector


def test_refitted_decides_stage_1_under_a_confirming_model_too(home, capsys, monkeypatch):
    from ichor.testing.hermes_harness import StubLLM

    decide_some(home)
    run(capsys, monkeypatch, "detect", "refit")
    paths = model_paths_loaded(monkeypatch)
    stub = StubLLM()
    stub.reply_when["use pnpm"] = '{"is_correction": true, "kind": "correction", "label": "use pnpm"}'
    try:
        argv = ["detect", "--refitted", "--llm", stub.base_url, "--model", "m"]
        code, out, _ = run(capsys, monkeypatch, *argv, stdin=jsonl(GOOD[0]))
    finally:
        stub.close()
    assert code == 0 and json.loads(out)["stage"] == 2 and len(stub.requests) == 1
    assert paths and all(Path(p).name == PROFILE_MODEL for p in paths)


@pytest.mark.parametrize("via", ["env", "option"])
def test_refit_never_creates_a_profile_in_a_missing_home(via, tmp_path, capsys, monkeypatch):
    missing = tmp_path / "nonexist"
    monkeypatch.setenv("HERMES_HOME", str(missing if via == "env" else tmp_path))
    argv = ["detect", "refit"] + (["--home", str(missing)] if via == "option" else [])
    code, out, err = run(capsys, monkeypatch, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and f"no Hermes home at {missing}" in err
    assert not missing.exists()


def test_refit_in_a_home_without_ichor_creates_no_store(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    code, out, _ = run(capsys, monkeypatch, "detect", "refit")
    assert code == 0 and out.startswith("no decisions yet")
    assert list(tmp_path.iterdir()) == []


def test_detect_and_eval_refuse_a_missing_home(tmp_path, capsys, monkeypatch):
    for argv in (["detect"], ["eval", "-"]):
        code, _, err = run(capsys, monkeypatch, *argv, "--home", str(tmp_path / "nope"), stdin=jsonl(*GOOD))
        assert code == 2 and "no Hermes home" in err


def test_the_chat_knows_every_shell_only_tool():
    import argparse

    from ichor import commands
    from ichor.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) - set(commands.VERB_BY_NAME) == set(commands.SHELL_TOOLS)
