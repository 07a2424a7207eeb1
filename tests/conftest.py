import os

import pytest

from ichor.store import NewPair, Store

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


def new_pair(n: int = 0, **overrides) -> NewPair:
    fields = dict(
        kind="correction",
        user_said="no, use pnpm",
        prompt=[{"role": "user", "content": f"install the dependencies of project {n}"}],
        rejected=f"npm install  # {n}",
        accepted=f"pnpm install  # {n}",
        label="wrong package manager",
        platform="cli",
        session_id="s1",
        scrubbed={},
    )
    fields.update(overrides)
    return NewPair(**fields)
