import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ichor
from ichor import DISTRIBUTION, commands, settings, verbs
from ichor.cli import main
from ichor.settings import SETTINGS
from ichor.store import Store
from tests.support import new_pair


def run(capsys, monkeypatch, *argv, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def seed(n=1, **overrides):
    with Store.open() as store:
        return [store.add_pair(new_pair(i, **overrides)) for i in range(n)]


def test_status_json_counts_settings_and_paused_chats(home, capsys, monkeypatch):
    seed(2)
    run(capsys, monkeypatch, "off", "--scope", "telegram:42")
    code, out, _ = run(capsys, monkeypatch, "status", "--json")
    data = json.loads(out)
    assert code == 0
    assert {k: data[k] for k in ("pending", "kept", "shared", "uploaded")} == {
        "pending": 2,
        "kept": 0,
        "shared": 0,
        "uploaded": 0,
    }
    assert data["top_labels"] == [["wrong package manager", 2]]
    assert data["paused_chats"] == ["telegram:42"]
    assert set(data["settings"]) == {n for n, s in SETTINGS.items() if s.shown}


def test_status_text_says_queued_lists_paused_chats_and_settings(home, capsys, monkeypatch):
    (a,) = seed(1)
    run(capsys, monkeypatch, "share", str(a.id))
    run(capsys, monkeypatch, "off", "--scope", "telegram:42")
    out = run(capsys, monkeypatch, "status")[1]
    assert "1 queued to share" in out and " shared" not in out.splitlines()[0]
    assert "capture paused in: telegram:42" in out
    for name, setting in SETTINGS.items():
        assert (name.replace("_", "-") in out) is setting.shown


def test_top_mistakes_leave_out_retries(home, capsys, monkeypatch):
    seed(1)
    seed(3, kind="retry", label="rephrased re-send", session_id="s2")
    out = run(capsys, monkeypatch, "status")[1]
    assert "top mistakes: wrong package manager (1)" in out and "re-send" not in out


def test_review_json_is_null_then_the_oldest_pending_pair(home, capsys, monkeypatch):
    assert json.loads(run(capsys, monkeypatch, "review", "--json")[1]) is None
    first, _ = seed(2, scrubbed={"email": 1})
    data = json.loads(run(capsys, monkeypatch, "review", "--json")[1])
    assert data["id"] == first.id and data["uid"] == first.uid and data["status"] == "pending"
    assert (data["user_said"], data["prompt"], data["scrubbed"]) == ("no, use pnpm", first.prompt, {"email": 1})


def test_review_card_tells_a_shell_user_what_to_type(home, capsys, monkeypatch):
    seed(1)
    out = run(capsys, monkeypatch, "review")[1]
    assert "captured pair #1" in out and "rejected" in out and "pnpm install" in out
    assert "decide with ichor keep 1" in out and "/ichor" not in out


def test_chat_wording_says_slash_ichor(store):
    store.add_pair(new_pair(0))
    assert "decide with /ichor keep 1" in commands.run_chat(store, "review").text
    assert "/ichor set NAME VALUE" in commands.run_chat(store, "").text


def test_keep_share_discard_take_several_ids_and_uids(home, capsys, monkeypatch):
    a, b, c, d = seed(4)
    out = run(capsys, monkeypatch, "keep", str(a.id), b.uid)[1]
    assert out.splitlines() == [f"ichor · pair #{a.id} kept (private)", f"ichor · pair #{b.id} kept (private)"]
    assert "queued to share" in run(capsys, monkeypatch, "share", str(c.id))[1]
    assert "discarded" in run(capsys, monkeypatch, "discard", d.uid)[1]
    with Store.open() as store:
        assert store.counts() == {"pending": 0, "kept": 2, "shared": 1, "uploaded": 0}


def test_a_bad_id_among_several_changes_nothing(home, capsys, monkeypatch):
    a, b = seed(2)
    code, _, err = run(capsys, monkeypatch, "keep", str(a.id), "42", str(b.id))
    assert code == 2 and "no pair with id 42" in err
    with Store.open() as store:
        assert store.counts()["pending"] == 2


def test_list_filters_by_status_and_kind(home, capsys, monkeypatch):
    a, b = seed(2)
    (r,) = seed(1, kind="retry", session_id="s2")
    run(capsys, monkeypatch, "share", str(b.id))

    def listed(*argv):
        return [row["id"] for row in json.loads(run(capsys, monkeypatch, "list", *argv, "--json")[1])]

    assert listed() == [a.id, b.id, r.id]
    assert listed("--status", "queued") == listed("--status", "shared") == [b.id]
    assert listed("--status", "pending", "--kind", "retry") == [r.id]
    text = run(capsys, monkeypatch, "list")[1]
    assert f"#{b.id}  queued to share · correction" in text and "ichor show" in text
    code, _, err = run(capsys, monkeypatch, "list", "--status", "gone")
    assert code == 2 and "no status 'gone'" in err


def test_show_prints_the_whole_pair_as_stored(home, capsys, monkeypatch):
    long_answer = "pnpm install\n" + "x" * 2000
    (a,) = seed(1, accepted=long_answer)
    data = json.loads(run(capsys, monkeypatch, "show", a.uid, "--json")[1])
    with Store.open() as store:
        assert data == dataclasses.asdict(store.require(a.id))
    text = run(capsys, monkeypatch, "show", str(a.id))[1]
    assert long_answer in text and a.uid in text


def test_edit_rescrubs_what_the_editor_saved(home, tmp_path, capsys, monkeypatch):
    (a,) = seed(1)
    editor = tmp_path / "editor.py"
    email = "jane.doe" + "@" + "corp-mail.net"
    editor.write_text(
        "import json, sys\n"
        "pair = json.load(open(sys.argv[1]))\n"
        f"pair['accepted'] = 'pnpm install; mail {email}'\n"
        "json.dump(pair, open(sys.argv[1], 'w'))\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    code, out, _ = run(capsys, monkeypatch, "edit", str(a.id))
    assert code == 0 and "saved" in out and "1 email" in out
    with Store.open() as store:
        pair = store.require(a.id)
    assert pair.accepted.startswith("pnpm install; mail ") and email not in pair.accepted
    assert pair.scrubbed == {"email": 1} and pair.status == "pending"


def test_edit_refuses_broken_json_and_keeps_the_pair(home, tmp_path, capsys, monkeypatch):
    (a,) = seed(1)
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'w').write('{not json')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    code, _, err = run(capsys, monkeypatch, "edit", str(a.id))
    assert code == 2 and "not valid JSON" in err and err.count("\n") == 1
    with Store.open() as store:
        assert store.require(a.id).accepted == a.accepted


def test_edit_refuses_an_uploaded_pair(home, capsys, monkeypatch):
    (a,) = seed(1)
    with Store.open() as store:
        store.set_status(a.id, "shared")
        store.mark_uploaded([a.id], "commit-1")
    monkeypatch.setenv("EDITOR", "false")
    code, _, err = run(capsys, monkeypatch, "edit", str(a.id))
    assert code == 2 and "already on the Hub" in err


def test_share_dry_run_lists_the_queue_and_sends_nothing(home, capsys, monkeypatch):
    a, b = seed(2)
    assert "nothing queued" in run(capsys, monkeypatch, "share", "--dry-run")[1]
    run(capsys, monkeypatch, "share", str(a.id))
    run(capsys, monkeypatch, "set", "repo", "me/my-pairs")
    out = run(capsys, monkeypatch, "share", "--dry-run")[1]
    assert "would upload 1 queued pair(s) to me/my-pairs (private)" in out and f"#{a.id}" in out
    assert f"#{b.id}" not in out
    with Store.open() as store:
        assert store.counts()["shared"] == 1


def test_share_without_the_hub_extra_names_it(home, capsys, monkeypatch):
    (a,) = seed(1)
    run(capsys, monkeypatch, "share", str(a.id))
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # as if the extra were not installed
    code, out, err = run(capsys, monkeypatch, "share")
    assert code == 2 and out == ""
    assert err == f"ichor: sharing needs huggingface_hub, which is not installed: pip install '{DISTRIBUTION}[hub]'\n"
    with Store.open() as store:
        reply = commands.run_chat(store, "share")
    assert not reply.ok and reply.text == err.strip()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["keep", "42"], "no pair with id 42"),
        (["keep", "abc"], "not a pair id"),
        (["discard", "0"], "not a pair id"),
        (["show", "9" * 30], "not a pair id"),
        (["keep", "9" * 5000], "(5000 characters)"),
        (["set", "repo", "../etc"], "invalid repository name"),
        (["set", "repo", "a--b"], "invalid repository name"),
        (["set", "sideways"], "unknown setting 'sideways'"),
        (["set", "data-dri", "x"], "did you mean data-dir?"),
        (["set", "confirm", "maybe"], "expected on or off"),
        (["set", "data-dir", "~nosuchuser-ichor/pairs"], "not a usable path"),
        (["kep", "1"], "unknown command 'kep' (did you mean keep?)"),
        (["forget-all"], "confirm with: ichor forget-all yes"),
        (["off"], "ichor off --global"),
        (["status", "\r\n"], "unrecognized arguments: \\r\\n"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(home, capsys, monkeypatch, argv, message):
    seed(1)
    code, out, err = run(capsys, monkeypatch, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("ichor: ") and message in err
    with Store.open() as store:
        assert store.counts()["pending"] == 1


def test_forget_all_yes_deletes_everything(home, capsys, monkeypatch):
    seed(3)
    assert "deleted 3 pairs" in run(capsys, monkeypatch, "forget-all", "yes")[1]
    assert json.loads(run(capsys, monkeypatch, "status", "--json")[1])["pending"] == 0


SAMPLE_VALUES = {
    "data_dir": ("data-dir", "pairs-here"),
    "repo": ("repo", "me/my-pairs"),
    "visibility": ("visibility", "public"),
    "hf_token_env": ("hf-token-env", "MY_HF_TOKEN"),
    "license": ("license", "cc0-1.0"),
    "capture": ("capture", "off"),
    "confirm": ("confirm", "off"),
    "confirm_model": ("confirm-model", "small-model"),
}


def test_every_shown_setting_can_be_set_from_the_shell_and_from_chat(home, capsys, monkeypatch, tmp_path):
    shown = {n for n, s in SETTINGS.items() if s.shown}
    assert set(SAMPLE_VALUES) == shown  # a new setting needs a sample here, so it is tested too
    monkeypatch.chdir(tmp_path)
    for key, (name, raw) in SAMPLE_VALUES.items():
        code, out, err = run(capsys, monkeypatch, "set", name, raw)
        assert code == 0, err
        with Store.open() as store:
            assert settings.get(store, key) == settings.parse(key, raw)
            store.set_setting(key, None)
            assert commands.run_chat(store, f"set {name} {raw}").ok
            assert settings.get(store, key) == settings.parse(key, raw)
    status = json.loads(run(capsys, monkeypatch, "status", "--json")[1])["settings"]
    assert status["data_dir"] == str(tmp_path / "pairs-here") and status["hf_token_env"] == "MY_HF_TOKEN"


def test_set_public_private_and_toggles(home, capsys, monkeypatch):
    run(capsys, monkeypatch, "set", "public")
    run(capsys, monkeypatch, "off", "--global")
    run(capsys, monkeypatch, "off", "--scope", "telegram:42")
    with Store.open() as store:
        assert store.get_setting("visibility") == "public"
        assert store.get_setting("capture") is False
        assert store.get_setting("paused_scopes") == ["telegram:42"]
    run(capsys, monkeypatch, "on", "--scope", "telegram:42")
    run(capsys, monkeypatch, "set", "private")
    with Store.open() as store:
        assert store.get_setting("paused_scopes") == [] and store.get_setting("visibility") == "private"


def test_home_option_is_accepted_anywhere(home, tmp_path, capsys, monkeypatch):
    seed(2)
    other = tmp_path / "other-profile"
    other.mkdir()
    assert json.loads(run(capsys, monkeypatch, "--home", str(other), "status", "--json")[1])["pending"] == 0
    assert json.loads(run(capsys, monkeypatch, "status", "--json", "--home", str(other))[1])["pending"] == 0
    assert json.loads(run(capsys, monkeypatch, "status", "--json")[1])["pending"] == 2


def test_a_missing_home_is_refused_not_created(home, tmp_path, capsys, monkeypatch):
    typo = tmp_path / "hermse"
    code, out, err = run(capsys, monkeypatch, "status", "--home", str(typo))
    assert code == 2 and out == "" and err.count("\n") == 1 and "no Hermes home" in err
    assert not typo.exists()


def test_version_and_help(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "--version")
    assert code == 0 and out.strip() == f"ichor {ichor.__version__} ({DISTRIBUTION})"
    code, out, _ = run(capsys, monkeypatch, "help")
    assert code == 0
    for verb in commands.VERBS:
        assert f"ichor {verb.name}" in out
    for tool in ("detect", "scrub", "eval", "completion", "install-plugin"):
        assert f"ichor {tool}" in out
    code, out, _ = run(capsys, monkeypatch, "help", "keep")
    assert code == 0 and out.startswith("ichor keep ID")


def test_help_texts_and_the_readme_table_come_from_the_command_table(store):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert verbs.markdown_table(commands.VERBS) in readme
    chat_help = commands.run_chat(store, "help").text
    shell_help = verbs.help_text(commands.VERBS, verbs.SHELL)
    for verb in commands.VERBS:
        assert (f"/ichor {verb.name}" in chat_help) is verb.chat
        assert f"ichor {verb.name}" in shell_help and verb.help in shell_help
        assert f"`ichor {verb.name}" in readme
    assert "ichor edit" not in chat_help.replace("/ichor", "")


def test_chat_refuses_shell_only_verbs_and_suggests(store):
    assert commands.run_chat(store, "edit 1").text == "ichor: edit runs in a shell only: ichor edit"
    assert commands.run_chat(store, "help edit").text == "ichor: edit runs in a shell only: ichor edit ID"
    reply = commands.run_chat(store, "reveiw")
    assert not reply.ok and "did you mean review?" in reply.text


def test_completion_scripts_name_every_command(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "completion", "bash")
    assert code == 0
    for verb in [*(v.name for v in commands.VERBS), "detect", "scrub", "eval", "install-plugin"]:
        assert verb in out
    assert "--dry-run" in out and "complete -o default -F _ichor ichor" in out
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=out, text=True).returncode == 0
    code, out, _ = run(capsys, monkeypatch, "completion", "zsh")
    assert code == 0 and out.startswith("#compdef ichor") and "'keep:" in out


def test_a_closed_pipe_ends_quietly(home, tmp_path):
    seed(300)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ichor.cli", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert proc.stdout.readline().startswith(b"#1 ")  # `ichor list | head -1`
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0 and err == b""


def test_export_writes_trl_and_atropos_files(home, tmp_path, capsys, monkeypatch):
    pairs = seed(4)
    for p in pairs[:3]:
        run(capsys, monkeypatch, "keep", str(p.id))
    out_dir = tmp_path / "export"
    code, out, _ = run(capsys, monkeypatch, "export", "--out", str(out_dir))
    assert code == 0 and "exported 3 pairs" in out
    rows = [json.loads(line) for line in (out_dir / "dpo.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and {r["metadata"]["uid"] for r in rows} == {p.uid for p in pairs[:3]}
    assert len((out_dir / "atropos" / "pairs.jsonl").read_text().splitlines()) == 3


def test_detect_reads_and_writes_json_lines(capsys, monkeypatch):
    lines = [
        {
            "id": "a",
            "prev_user": "install deps",
            "prev_assistant": "npm install",
            "user": "no, use pnpm instead",
            "assistant": "You're right: pnpm install",
        },
        {
            "id": 7,
            "prev_user": "list files",
            "prev_assistant": "ls -la",
            "user": "thanks, perfect!",
            "assistant": "Glad it helped.",
        },
    ]
    code, out, _ = run(capsys, monkeypatch, "detect", stdin="\n".join(json.dumps(x) for x in lines) + "\n")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and [r["id"] for r in rows] == ["a", 7]
    assert set(rows[0]) == {"id", "is_correction", "kind", "label"}
    assert rows[0]["is_correction"] is True and rows[0]["kind"] == "correction"
    assert rows[1] == {"id": 7, "is_correction": False, "kind": "none", "label": None}


def test_detect_refuses_a_line_without_a_user_message(capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, "detect", stdin='{"text": "no, use pnpm"}\n')
    assert code == 2 and out == "" and "stdin line 1: no field 'user'" in err


@pytest.mark.parametrize(
    "stdin, message, summary",
    [
        ('{"user": "x"}\nnot json\n', "stdin line 2: not valid JSON", "1 of 2 lines skipped"),
        ("[1, 2]\n", "stdin line 1: expected a JSON object", "1 of 1 lines skipped"),
        ('{"user": 5}\n', "stdin line 1: field 'user' must be a string", "1 of 1 lines skipped"),
    ],
)
def test_detect_names_the_bad_line(capsys, monkeypatch, stdin, message, summary):
    code, _, err = run(capsys, monkeypatch, "detect", stdin=stdin)
    lines = err.splitlines()
    assert (
        code == 2 and len(lines) == 2 and lines[0].startswith(f"ichor: {message}") and lines[1] == f"ichor: {summary}"
    )


def test_scrub_plain_and_jsonl(capsys, monkeypatch):
    email = "jane.doe" + "@" + "corp-mail.net"
    code, out, _ = run(capsys, monkeypatch, "scrub", stdin=f"mail {email} now")
    data = json.loads(out)
    assert code == 0 and email not in data["text"] and data["removed"] == {"email": 1}
    code, out, _ = run(
        capsys, monkeypatch, "scrub", "--jsonl", stdin=json.dumps({"id": 3, "text": f"to {email}"}) + "\n"
    )
    row = json.loads(out)
    assert row["id"] == 3 and email not in row["text"] and row["removed"] == {"email": 1}


def test_eval_reports_precision_recall_with_intervals(tmp_path, capsys, monkeypatch):
    windows = tmp_path / "windows.jsonl"
    rows = [
        {
            "prev_user": "install deps",
            "prev_assistant": "npm install",
            "user": "no, use pnpm instead of npm",
            "assistant": "You're right, pnpm install",
            "is_correction": True,
            "kind": "correction",
        },
        {
            "prev_user": "list files",
            "prev_assistant": "ls",
            "user": "thanks, that worked",
            "assistant": "Great!",
            "is_correction": False,
            "kind": "none",
        },
    ]
    windows.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out, _ = run(capsys, monkeypatch, "eval", str(windows), "--json")
    metrics = json.loads(out)
    assert code == 0
    text = json.dumps(metrics)
    assert "precision" in text and "recall" in text and "f1" in text


def test_eval_rejects_a_bad_file(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prev_user": "a", "prev_assistant": "b", "user": "c", "assistant": "d"}\n')
    code, _, err = run(capsys, monkeypatch, "eval", str(bad))
    assert code == 2 and "line 1" in err and "is_correction" in err
    code, _, err = run(capsys, monkeypatch, "eval", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "can't read" in err


def test_console_script_help_explains_every_command():
    out = subprocess.run([sys.executable, "-m", "ichor.cli", "--help"], capture_output=True, text=True, check=True)
    for command in (
        "status",
        "review",
        "keep",
        "share",
        "discard",
        "export",
        "set",
        "off",
        "on",
        "forget-all",
        "detect",
        "scrub",
        "eval",
    ):
        assert command in out.stdout
