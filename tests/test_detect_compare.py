import json

import pytest

from ichor import detect_compare


def _files(tmp_path, repos=12, per_repo=4):
    rows = [
        {"id": f"w{r}-{i}", "source": f"o/r{r}@c:f", "user": "still broken", "kind": "correction" if i % 2 else "none"}
        for r in range(repos)
        for i in range(per_repo)
    ]
    data = tmp_path / "windows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(name, decide):
        held = {r["id"]: {"standalone": decide(r), "candidate": True} for r in rows}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"held_out": held}))
        return str(path)

    before = run("before", lambda r: r["id"].endswith("-1"))  # half the corrections found
    after = run("after", lambda r: r["kind"] == "correction")  # all of them
    return str(data), before, after


def test_compare_prints_both_f1s_and_a_difference_above_zero(tmp_path, capsys):
    data, before, after = _files(tmp_path)
    assert detect_compare.main(["--data", data, "--before", before, "--after", after]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("| all |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:5] == ["all", "48", "12", f"{2 / 3:.3f}", "1.000"]
    assert cells[5].startswith("+0.333 [+")  # every repository gained: the interval is above zero


def test_compare_of_a_run_with_itself_is_zero(tmp_path):
    data, before, _ = _files(tmp_path)
    rows = detect_compare.F.load_rows(data)
    table = detect_compare.compare(rows, *(detect_compare.held_out(before),) * 2, "standalone")
    assert table["all"]["difference"] == 0 and table["all"]["interval"] == (0.0, 0.0)


@pytest.mark.parametrize(
    "after, message",
    [
        ("missing.json", "not a detect_cv --json file"),
        ("empty.json", "holds no held-out decisions"),
        ("short.json", "windows have no decision in both runs"),
    ],
)
def test_bad_runs_are_one_line(tmp_path, capsys, after, message):
    data, before, _ = _files(tmp_path)
    (tmp_path / "empty.json").write_text(json.dumps({"figures": {}}))
    (tmp_path / "short.json").write_text(json.dumps({"held_out": {"w0-0": {"standalone": True}}}))
    with pytest.raises(SystemExit) as exit_:
        detect_compare.main(["--data", data, "--before", before, "--after", str(tmp_path / after)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
