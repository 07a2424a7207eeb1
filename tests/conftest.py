import os

import pytest

from ichor.store import Store

# No test may reach a hub or phone home.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("WANDB_MODE", "disabled")


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
