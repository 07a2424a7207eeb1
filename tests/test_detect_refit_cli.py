"""``ichor detect refit``: the command line over the detector's refit from a profile's own decisions."""

import json

from ichor.cli import main
from ichor.detect_refit import note_decision
from ichor.store import Store


def test_refit_without_decisions_says_so(home, capsys):
    home.mkdir()
    assert main(["detect", "refit"]) == 0
    assert "no decisions yet" in capsys.readouterr().out


def test_refit_reports_the_change_and_writes_the_profile_model(home, capsys):
    with Store.open(home) as store:
        for i in range(4):
            note_decision(store, "list files", "ls -S", f"no, human readable {i}", "ls -lhS", True, key=f"k{i}")
            note_decision(store, "list files", "ls -S", f"thanks, now the docs {i}", "ok", False, key=f"d{i}")
    assert main(["detect", "refit", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["decisions"], report["positives"]) == (8, 4)
    assert report["written"].endswith("detector.json")
    assert main(["detect", "refit"]) == 0
    assert "refit from 8 decisions (4 kept or shared)" in capsys.readouterr().out
