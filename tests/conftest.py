import os

import pytest
from hypothesis import settings

from ichor.store import Store

# No test may reach a hub or phone home.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

# Hypothesis' default per-example deadline is a timing assertion that fails on a loaded machine; speed is
# measured in bench/.  The suite's verdict is reproducible (the same examples every run); HYPOTHESIS_PROFILE=explore
# searches new examples each run, to hunt for bugs rather than to gate a change.
settings.register_profile("ichor", deadline=None, derandomize=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ichor"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private Hermes home; every ichor path resolves inside it."""
    path = tmp_path / "hermes"
    monkeypatch.setenv("HERMES_HOME", str(path))
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    return path


@pytest.fixture
def store(home):
    s = Store.open()
    yield s
    s.close()
