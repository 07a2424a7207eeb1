import json
import os
import stat

import pytest

from ichor.export import (
    ExportConfig,
    ExportError,
    load_records,
    near_duplicates_of_train,
    split_records,
    strip_acknowledgement,
    supplies_information,
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
        ("Good catch — here is the fix", "here is the fix"),
        ("You\u2019re right, use `pnpm`.", "use `pnpm`."),
        ("Got it. The flag is -r.", "The flag is -r."),
        ("Ah, you're right: it is 3.12.", "it is 3.12."),
        ("Good call sites are listed below.", "Good call sites are listed below."),
        ("You are right that npm also works.", "You are right that npm also works."),
        ("Yes, you can pass -r twice.", "Yes, you can pass -r twice."),
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


def with_context(n, context):
    return record(
        n,
        prompt=[
            {"role": "user", "content": context},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": f"question {n}"},
        ],
    )


def test_split_keeps_a_question_in_one_split_whatever_its_context_and_is_seeded():
    recs = [with_context(n, f"context {n}.{c}") for n in range(200) for c in range(3)]
    splits = split_records(recs, ExportConfig(eval_fraction=0.2, validation_fraction=0.1))
    by_question = {}
    for rec, split in zip(recs, splits, strict=True):
        by_question.setdefault(rec["prompt"][-1]["content"], set()).add(split)
    assert all(len(s) == 1 for s in by_question.values())
    assert 20 < sum(s == {"eval"} for s in by_question.values()) < 60
    assert 5 < sum(s == {"validation"} for s in by_question.values()) < 40
    reseeded = split_records(recs, ExportConfig(eval_fraction=0.2, validation_fraction=0.1, seed=1))
    assert reseeded != splits


def test_split_keeps_a_session_together_through_its_opening_message():
    recs = [with_context(n, "open the repo") for n in range(30)]
    assert len(set(split_records(recs, ExportConfig()))) == 1


def test_near_duplicates_of_train_rows_are_dropped_from_held_out_splits_and_counted(tmp_path):
    base = "How do I install the dependencies of this project with the right package manager please"
    recs = [
        record(n, prompt=[{"role": "user", "content": f"{base} {n}"}], accepted="Run `pnpm install`.")
        for n in range(40)
    ]
    splits = split_records(recs, ExportConfig())
    near = near_duplicates_of_train(recs, splits, 0.7)
    assert near and all(splits[i] != "train" for i in near)
    assert near == {i for i, s in enumerate(splits) if s != "train"}
    counts = write_export(recs, tmp_path / "out", ExportConfig())
    assert counts["near_duplicates_dropped"] == len(near) and counts["pairs"] == 40 - len(near)
    assert (
        near_duplicates_of_train(
            [record(1), record(2, prompt=[{"role": "user", "content": "other"}])], ["train", "eval"], 0.7
        )
        == set()
    )


def test_a_retry_is_a_preference_pair_on_its_own_prompt():
    row = to_dpo_row(record(1, kind="retry", user_said="question 1"))
    assert row["prompt"] == [{"role": "user", "content": "question 1"}] and row["metadata"]["form"] == "preference"


def test_a_correction_that_states_an_error_is_a_preference_pair():
    rec = record(1, user_said="that flag is wrong", rejected="Use -x.", accepted="Use -r.")
    assert not supplies_information(rec)
    assert to_dpo_row(rec)["metadata"]["form"] == "preference"


def test_a_correction_that_supplies_information_carries_it_in_the_prompt():
    rec = record(
        1,
        prompt=[{"role": "user", "content": "install the deps"}],
        user_said="no, this repo uses pnpm",
        rejected="Run `npm install`.",
        accepted="Run `pnpm install`.",
    )
    row = to_dpo_row(rec)
    assert row["metadata"]["form"] == "turns" and row["metadata"]["user_said"] == "no, this repo uses pnpm"
    assert row["prompt"] == [
        {"role": "user", "content": "install the deps"},
        {"role": "assistant", "content": "Run `npm install`."},
        {"role": "user", "content": "no, this repo uses pnpm"},
    ]
    assert row["rejected"] == [{"role": "assistant", "content": "Run `npm install`."}]
    assert to_dpo_row(rec, information_form="preference")["prompt"] == rec["prompt"]


def test_an_undo_pair_is_paired_on_the_message_the_accepted_answer_answers():
    rec = record(
        1,
        kind="undo",
        prompt=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "A?"}],
        user_said="B?",
        rejected="answer to A",
        accepted="answer to B",
    )
    row = to_dpo_row(rec)
    assert row["metadata"]["form"] == "undo"
    assert row["prompt"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "B?"}]


def test_export_counts_stripped_acknowledgements_and_forms(tmp_path):
    recs = [record(1, accepted="You\u2019re right. good 1"), record(2, kind="retry"), record(3, kind="undo")]
    counts = write_export(recs, tmp_path / "out", ExportConfig(eval_fraction=0.0, validation_fraction=0.0))
    assert counts["acknowledgements_stripped"] == 1
    assert counts["forms"] == {"preference": 2, "undo": 1}
    rows = [json.loads(x) for x in (tmp_path / "out" / "dpo.jsonl").read_text().splitlines()]
    assert [r["metadata"]["user_said"] for r in rows] == ["no", "no", "no"]


def test_write_export_streams_every_file_privately(tmp_path):
    counts = write_export((record(n) for n in range(40)), tmp_path / "out", ExportConfig(eval_fraction=0.25))
    out = tmp_path / "out"
    dpo = (out / "dpo.jsonl").read_text().splitlines()
    train = (out / "dpo_train.jsonl").read_text().splitlines()
    evals = (out / "dpo_eval.jsonl").read_text().splitlines()
    validation = (out / "dpo_validation.jsonl").read_text().splitlines()
    atropos = (out / "atropos" / "pairs.jsonl").read_text().splitlines()
    assert counts["pairs"] == len(dpo) == len(atropos) == 40 and len(train) + len(evals) + len(validation) == 40
    assert counts["train"] == len(train) and counts["eval"] == len(evals) and counts["validation"] == len(validation)
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
