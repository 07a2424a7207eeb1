import json
import os
import stat

import pytest

from ichor.export import (
    ExportConfig,
    ExportError,
    load_records,
    split_of,
    strip_acknowledgement,
    to_dpo_row,
    write_export,
)


def record(n, **overrides):
    rec = {
        "uid": f"u{n}",
        "kind": "correction",
        "label": "wrong flag",
        "user_said": "no",
        "prompt": [{"role": "user", "content": f"question {n}"}],
        "rejected": f"bad {n}",
        "accepted": f"good {n}",
    }
    rec.update(overrides)
    return rec


@pytest.mark.parametrize(
    "text, expected",
    [
        ("You're right, sorry! Use `pnpm install` instead.", "Use `pnpm install` instead."),
        ("My apologies. I misread the question. The flag is -h.", "The flag is -h."),
        ("Good catch — here is the fix", "Here is the fix"),
        ("Right-click the file.", "Right-click the file."),
        ("Sorting works like this.", "Sorting works like this."),
        ("You're right.", "You're right."),
    ],
)
def test_strip_acknowledgement_keeps_the_content(text, expected):
    assert strip_acknowledgement(text) == expected


def test_dpo_row_is_conversational_with_an_explicit_prompt():
    row = to_dpo_row(record(1, platform="telegram"), split="train")
    assert row["prompt"][-1]["role"] == "user"
    assert row["chosen"] == [{"role": "assistant", "content": "good 1"}]
    assert row["rejected"] == [{"role": "assistant", "content": "bad 1"}]
    assert "platform" not in json.dumps(row["metadata"]) and row["metadata"]["split"] == "train"


def test_split_is_seeded_and_prompt_disjoint():
    recs = [record(n) for n in range(200)] + [record(n, uid=f"dup{n}") for n in range(200)]
    splits = {}
    for rec in recs:
        splits.setdefault(json.dumps(rec["prompt"]), set()).add(split_of(rec, 0.25, 0))
    assert all(len(s) == 1 for s in splits.values())
    evals = sum(split_of(record(n), 0.25, 0) == "eval" for n in range(200))
    assert 30 < evals < 70
    assert [split_of(record(n), 0.25, 1) for n in range(50)] != [split_of(record(n), 0.25, 0) for n in range(50)]


def test_write_export_streams_every_file_privately(tmp_path):
    counts = write_export((record(n) for n in range(40)), tmp_path / "out", ExportConfig(eval_fraction=0.25))
    out = tmp_path / "out"
    dpo = (out / "dpo.jsonl").read_text().splitlines()
    train = (out / "dpo_train.jsonl").read_text().splitlines()
    evals = (out / "dpo_eval.jsonl").read_text().splitlines()
    atropos = (out / "atropos" / "pairs.jsonl").read_text().splitlines()
    assert counts["pairs"] == len(dpo) == len(atropos) == 40 and len(train) + len(evals) == 40
    assert counts["train"] == len(train) and counts["eval"] == len(evals)
    assert stat.S_IMODE(os.stat(out / "dpo.jsonl").st_mode) == 0o600


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"uid": "a"}\n', "missing field(s) prompt, rejected, accepted"),
        (b"not json\n", ":1: not valid JSON"),
        (b"[" * 50000 + b"\n", "nested too deeply"),
        (b"\xff\xfe\n", "not UTF-8 text"),
        (
            json.dumps(record(1, prompt=[{"role": "assistant", "content": "x"}])).encode() + b"\n",
            "must end with the user",
        ),
    ],
)
def test_load_records_names_the_bad_input(tmp_path, content, message):
    bad = tmp_path / "pairs.jsonl"
    bad.write_bytes(content)
    with pytest.raises(ExportError) as info:
        list(load_records(tmp_path))
    assert message in str(info.value) and str(bad) in str(info.value)
