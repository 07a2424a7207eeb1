import io
import json
import subprocess
import sys

import pytest

from ichor.cli import main
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


def test_status_json_has_the_agreed_shape(home, capsys, monkeypatch):
    seed(2)
    code, out, _ = run(capsys, monkeypatch, "status", "--json")
    assert code == 0
    assert json.loads(out) == {
        "pending": 2,
        "kept": 0,
        "shared": 0,
        "uploaded": 0,
        "top_labels": [["wrong package manager", 2]],
    }


def test_review_json_is_null_then_the_oldest_pending_pair(home, capsys, monkeypatch):
    assert json.loads(run(capsys, monkeypatch, "review", "--json")[1]) is None
    first, _ = seed(2, scrubbed={"email": 1})
    data = json.loads(run(capsys, monkeypatch, "review", "--json")[1])
    assert data == {
        "id": first.id,
        "kind": "correction",
        "label": "wrong package manager",
        "user_said": "no, use pnpm",
        "prompt": first.prompt,
        "rejected": first.rejected,
        "accepted": first.accepted,
        "scrubbed": {"email": 1},
    }


def test_review_prints_a_card(home, capsys, monkeypatch):
    seed(1)
    out = run(capsys, monkeypatch, "review")[1]
    assert "captured pair #1" in out and "rejected" in out and "pnpm install" in out and "keep 1" in out


def test_keep_share_discard_change_the_status(home, capsys, monkeypatch):
    a, b, c = seed(3)
    assert run(capsys, monkeypatch, "keep", str(a.id))[1].strip() == f"ichor · pair #{a.id} kept (private)"
    assert "queued to share" in run(capsys, monkeypatch, "share", str(b.id))[1]
    assert "discarded" in run(capsys, monkeypatch, "discard", str(c.id))[1]
    with Store.open() as store:
        assert store.counts() == {"pending": 0, "kept": 1, "shared": 1, "uploaded": 0}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["keep", "42"], "no pair with id 42"),
        (["keep", "abc"], "not a pair id"),
        (["discard", "0"], "not a pair id"),
        (["set", "repo", "../etc"], "invalid repository name"),
        (["set", "sideways"], "usage: set"),
        (["forget-all"], "confirm with: forget-all yes"),
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


def test_set_and_toggle_settings(home, capsys, monkeypatch):
    run(capsys, monkeypatch, "set", "repo", "me/my-pairs")
    run(capsys, monkeypatch, "set", "public")
    run(capsys, monkeypatch, "off", "--global")
    run(capsys, monkeypatch, "off", "--scope", "telegram:42")
    with Store.open() as store:
        assert store.get_setting("repo") == "me/my-pairs"
        assert store.get_setting("visibility") == "public"
        assert store.get_setting("capture") is False
        assert store.get_setting("paused_scopes") == ["telegram:42"]
    run(capsys, monkeypatch, "on", "--scope", "telegram:42")
    with Store.open() as store:
        assert store.get_setting("paused_scopes") == []


def test_home_option_selects_the_profile(home, tmp_path, capsys, monkeypatch):
    seed(2)
    other = tmp_path / "other-profile"
    assert json.loads(run(capsys, monkeypatch, "--home", str(other), "status", "--json")[1])["pending"] == 0
    assert json.loads(run(capsys, monkeypatch, "status", "--json")[1])["pending"] == 2


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


@pytest.mark.parametrize(
    "stdin, message",
    [
        ('{"user": "x"}\nnot json\n', "stdin line 2: not valid JSON"),
        ("[1, 2]\n", "stdin line 1: expected a JSON object"),
        ('{"user": 5}\n', "stdin line 1: field 'user' must be a string"),
    ],
)
def test_detect_names_the_bad_line(capsys, monkeypatch, stdin, message):
    code, _, err = run(capsys, monkeypatch, "detect", stdin=stdin)
    assert code == 2 and message in err and err.count("\n") == 1


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
