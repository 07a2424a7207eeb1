"""The refit simulation when a user decides only the cards the detector shows."""

import pytest

from ichor import detect_refit


def _rows(repos: int = 6, per_repo: int = 30) -> list[dict]:
    """Each repository: corrections in a phrasing no model knows ('zorblax'), and ordinary requests."""
    rows = []
    for r in range(repos):
        for i in range(per_repo):
            positive = i % 3 == 0
            rows.append(
                {
                    "id": f"r{r}-{i}",
                    "source": f"owner/repo{r}@abc:log.md",
                    "prev_user": f"build part {i}",
                    "prev_assistant": "Done: I updated `main.py`.",
                    "user": f"no, that is wrong, part {i} is broken" if positive else f"now add part {i + 1}",
                    "assistant": "",
                    "is_correction": positive,
                }
            )
    return rows


def test_with_cards_only_the_windows_the_model_flags_are_decided(monkeypatch):
    pytest.importorskip("sklearn", reason="the simulation fits models: needs the fit extra")
    from ichor import detect_simulate

    decided = []
    real_update = detect_refit.update

    def recording(linear, examples, *args):
        decided.append(len(examples))
        return real_update(linear, examples, *args)

    monkeypatch.setattr(detect_simulate, "update", recording)
    every = detect_simulate.simulate(_rows(), ks=(5,), outer_folds=2)
    decided_all, decided[:] = list(decided), []
    cards = detect_simulate.simulate(_rows(), ks=(5,), outer_folds=2, cards=True)
    assert decided_all == [5] * 6 and decided == [5] * cards[5]["repositories"]
    # a repository's first 5 cards lie further into it than its first 5 windows: fewer windows are left
    assert 0 < cards[5]["windows"] < every[5]["windows"] == 6 * 25
