"""`ichor share` against a loopback Hub: the real huggingface_hub client does the HTTP."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import huggingface_hub.constants
import pytest

from ichor.export import to_dpo_row
from ichor.share import ShareError, share_queued
from ichor.store import Store
from tests.hubstub import HubStub
from tests.support import new_pair

TOKEN = "hf_ichorWriteToken7f3a9c2e5b8d1f4a6c0e"
READ_TOKEN = "hf_ichorReadOnlyToken2b4d6f8a0c1e3a5c7e"
REPO = "alice/ichor-pairs"


@pytest.fixture
def hub(tmp_path):
    stub = HubStub(tmp_path / "hub", {TOKEN: ("alice", "write"), READ_TOKEN: ("alice", "read")}).start()
    yield stub
    stub.stop()


@pytest.fixture
def env(tmp_path, monkeypatch, hub):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    # conftest turns offline mode on for the whole suite; this loopback stub is the one Hub we may reach.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return hub


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "profile" / "ichor.db", data_dir=tmp_path / "profile" / "pairs")
    yield s
    s.close()


def queue(store, n, start=0, **overrides):
    overrides = {"platform": "telegram", "session_id": "sess-4242-telegram", **overrides}
    pairs = [store.add_pair(new_pair(i, **overrides)) for i in range(start, start + n)]
    return [store.set_status(p.id, "shared") for p in pairs]


def data_paths(hub, repo=REPO):
    return sorted(p for p in hub.hub.repo(repo).files() if p.startswith("data/"))


def added_data_paths(hub, repo=REPO):
    """Every data file that commits added; none was ever offered again once the repository held it."""
    assert [p for p in hub.hub.resent if p.startswith("data/")] == [], "a pair was sent again"
    return [p for commit in hub.hub.commits_added(repo) for p in commit if p.startswith("data/")]


def test_share_creates_a_private_repo_with_one_row_file_per_pair_and_a_card(env, store):
    shared = queue(store, 3)
    kept = store.set_status(store.add_pair(new_pair(9)).id, "kept")

    result = share_queued(store, endpoint=env.endpoint)

    assert str(result) == f"ichor · uploaded 3 pairs to {REPO} (private)"
    assert env.hub.repo(REPO).private is True
    assert data_paths(env) == sorted(f"data/{p.uid}.jsonl" for p in shared)
    for pair in shared:
        row = json.loads(env.hub.read(REPO, f"data/{pair.uid}.jsonl"))
        assert row == to_dpo_row(pair.to_record())
        assert set(row) == {"prompt", "chosen", "rejected", "metadata"}
        assert "telegram" not in json.dumps(row) and "sess-4242" not in json.dumps(row)
    card = env.hub.read(REPO, "README.md").decode()
    for expected in (
        "**3 pairs**",
        "| wrong package manager | 3 |",
        "| correction | 3 |",
        "license: cc-by-4.0",
        f'load_dataset("{REPO}"',
        "`metadata.label`",
        "path: data/*.jsonl",
    ):
        assert expected in card
    assert store.counts() == {"pending": 0, "kept": 1, "shared": 0, "uploaded": 3}
    assert {store.get(p.id).upload_ref for p in shared} == {result.commits[0]}
    assert store.get(kept.id).status == "kept"


def test_set_public_creates_a_public_repo(env, store):
    store.set_setting("visibility", "public")
    queue(store, 1)
    result = share_queued(store, endpoint=env.endpoint)
    assert str(result) == f"ichor · uploaded 1 pair to {REPO} (public)"
    assert env.hub.repo(REPO).private is False


def test_an_existing_repos_visibility_is_left_alone_and_said_so(env, store):
    queue(store, 1)
    share_queued(store, endpoint=env.endpoint)
    store.set_setting("visibility", "public")
    queue(store, 1, start=5)
    result = share_queued(store, endpoint=env.endpoint)
    assert env.hub.repo(REPO).private is True
    assert str(result) == f"ichor · uploaded 1 pair to {REPO} (private, left as it was on the Hub)"


def test_set_repo_name_picks_the_repository_in_the_owners_namespace(env, store):
    store.set_setting("repo", "my-corrections")
    queue(store, 2)
    share_queued(store, endpoint=env.endpoint)
    assert len(data_paths(env, "alice/my-corrections")) == 2


def test_sharing_twice_uploads_nothing_new_and_the_card_counts_every_pair(env, store):
    first = queue(store, 2)
    share_queued(store, endpoint=env.endpoint)
    commits = len(env.hub.commits_added(REPO))

    nothing = share_queued(store, endpoint=env.endpoint)
    assert str(nothing) == "ichor · nothing to share: queue pairs with `share ID` first"
    # A pair whose "uploaded" mark was lost is recognised in the repository, not sent again.
    store.set_status(first[0].id, "shared")
    again = share_queued(store, endpoint=env.endpoint)
    assert str(again) == f"ichor · nothing new to share: 1 pair already on {REPO} (private)"
    assert len(env.hub.commits_added(REPO)) == commits
    assert len(added_data_paths(env)) == 2

    queue(store, 1, start=7, label="ignored the style guide")
    share_queued(store, endpoint=env.endpoint)
    card = env.hub.read(REPO, "README.md").decode()
    assert "**3 pairs**" in card and "| ignored the style guide | 1 |" in card
    assert sorted(added_data_paths(env)) == data_paths(env) and len(data_paths(env)) == 3


def test_a_failed_commit_midway_keeps_confirmed_pairs_and_a_retry_sends_only_the_rest(env, store):
    shared = queue(store, 5)
    env.hub.fail_commit_at = 2

    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=env.endpoint, batch_size=2)

    assert "500" in str(err.value) and "uploaded 2 pairs before that" in str(err.value)
    assert store.counts()["uploaded"] == 2 and store.counts()["shared"] == 3
    result = share_queued(store, endpoint=env.endpoint, batch_size=2)
    assert result.uploaded == 3 and result.already_there == 0
    assert sorted(added_data_paths(env)) == sorted(f"data/{p.uid}.jsonl" for p in shared)
    assert store.counts()["uploaded"] == 5


def test_a_share_killed_after_the_hub_took_a_commit_is_finished_by_a_retry_without_duplicates(env, store, tmp_path):
    shared = queue(store, 5)
    env.hub.hold_commit_at = 1  # the Hub applies the first commit, then the client is killed before the answer
    script = textwrap.dedent(f"""
        from ichor.share import share_queued
        from ichor.store import Store
        share_queued(Store({str(store.path)!r}, data_dir={str(store.data_dir)!r}), batch_size=2)
    """)
    child_env = {**os.environ, "HF_ENDPOINT": env.endpoint, "HF_HUB_OFFLINE": "0"}
    child = subprocess.Popen(
        [sys.executable, "-c", script], env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        assert env.hub.committed.wait(60), child.communicate(timeout=5)[0]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        env.hub.release.set()

    assert len(data_paths(env)) == 2
    assert store.counts()["uploaded"] == 0, "no pair may be marked before the Hub's answer"
    result = share_queued(store, endpoint=env.endpoint, batch_size=2)

    assert (result.already_there, result.uploaded) == (2, 3)
    assert sorted(added_data_paths(env)) == sorted(f"data/{p.uid}.jsonl" for p in shared)
    assert store.counts() == {"pending": 0, "kept": 0, "shared": 0, "uploaded": 5}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


ERRORS = {
    "no token": (lambda mp, store, hub: mp.delenv("HF_TOKEN"), "no Hugging Face token: export HF_TOKEN="),
    "bad token": (
        lambda mp, store, hub: mp.setenv("HF_TOKEN", "hf_notAValidTokenAtAll0000000000"),
        "the Hub refused the token in $HF_TOKEN (401)",
    ),
    "read-only token": (
        lambda mp, store, hub: mp.setenv("HF_TOKEN", READ_TOKEN),
        "the token in $HF_TOKEN may not write to alice/ichor-pairs (403)",
    ),
    "network down": (lambda mp, store, hub: None, "can't reach the Hub at http://127.0.0.1:"),
    "invalid name": (
        lambda mp, store, hub: store.set_setting("repo", "no spaces allowed"),
        "invalid repository name 'no spaces allowed'",
    ),
    "other token variable": (
        lambda mp, store, hub: store.set_setting("hf_token_env", "ICHOR_HF"),
        "no Hugging Face token: export ICHOR_HF=",
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_each_error_is_one_line_without_the_token_and_changes_nothing(env, store, monkeypatch, case):
    setup, expected = ERRORS[case]
    queue(store, 2)
    setup(monkeypatch, store, env)
    endpoint = f"http://127.0.0.1:{_closed_port()}" if case == "network down" else env.endpoint
    before = (store.counts(), sorted(os.listdir(store.data_dir)), dict(env.hub.repos))

    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=endpoint)

    message = str(err.value)
    assert message.startswith(expected), message
    assert "\n" not in message and TOKEN not in message and READ_TOKEN not in message
    assert (store.counts(), sorted(os.listdir(store.data_dir)), dict(env.hub.repos)) == before


def _cli(home, *argv, **env):
    child_env = {**os.environ, "HERMES_HOME": str(home), "HF_HUB_OFFLINE": "0", **env}
    return subprocess.run(
        [sys.executable, "-m", "ichor.cli", *argv], env=child_env, capture_output=True, text=True, timeout=120
    )


def test_the_token_is_in_no_file_log_or_output(env, tmp_path, caplog):
    home = tmp_path / "hermes"
    with Store.open(home) as store:
        queue(store, 2)
    caplog.set_level("DEBUG")

    ok = _cli(home, "share", HF_ENDPOINT=env.endpoint)
    refused = _cli(home, "share", HF_ENDPOINT=env.endpoint, HF_TOKEN="hf_notAValidTokenAtAll0000000000")
    with Store.open(home) as store:
        queue(store, 1, start=3)
        in_process = str(share_queued(store, endpoint=env.endpoint))

    assert ok.returncode == 0 and ok.stdout.strip() == f"ichor · uploaded 2 pairs to {REPO} (private)", ok
    assert in_process == f"ichor · uploaded 1 pair to {REPO} (private)"
    assert env.hub.requests and all(auth for _, path, auth in env.hub.requests if path.startswith("/api/"))
    outputs = [ok.stdout, ok.stderr, refused.stdout, refused.stderr, caplog.text]
    assert not any(TOKEN in text for text in outputs)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "ichor.db" for p in files) and any(p.parent.name == "blobs" for p in files)
    leaking = [str(p) for p in files if TOKEN.encode() in Path(p).read_bytes()]
    assert leaking == []


def test_cli_prints_one_error_line_and_exits_2(env, tmp_path):
    home = tmp_path / "hermes"
    with Store.open(home) as store:
        queue(store, 1)
    child_env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
    result = subprocess.run(
        [sys.executable, "-m", "ichor.cli", "share"],
        capture_output=True,
        text=True,
        env={**child_env, "HERMES_HOME": str(home), "HF_ENDPOINT": env.endpoint},
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("ichor: no Hugging Face token: export HF_TOKEN=")
    with Store.open(home) as store:
        assert store.counts()["shared"] == 1


def test_a_pair_that_still_holds_a_secret_is_refused_and_nothing_is_uploaded(env, store):
    clean = queue(store, 1)
    leaky = queue(store, 1, start=1, accepted="use the token ghp_" + "a1B2" * 9)
    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=env.endpoint)
    assert str(err.value) == (
        f"pair {leaky[0].id} still holds 1 secret; nothing was uploaded "
        f"(discard it with `ichor discard {leaky[0].id}`)"
    )
    assert env.hub.repos == {} and store.get(clean[0].id).status == "shared"


# ---- privacy and faults -------------------------------------------------------------------------


def test_a_public_repository_is_refused_while_visibility_is_private(env, store):
    store.set_setting("visibility", "public")
    queue(store, 1)
    share_queued(store, endpoint=env.endpoint)
    store.set_setting("visibility", "private")
    waiting = queue(store, 1, start=5)
    commits = len(env.hub.commits_added(REPO))
    with pytest.raises(ShareError, match="is public on the Hub but your visibility setting is private"):
        share_queued(store, endpoint=env.endpoint)
    assert len(env.hub.commits_added(REPO)) == commits and store.get(waiting[0].id).status == "shared"


@pytest.fixture
def quick_timeouts(monkeypatch):
    import ichor.hub

    monkeypatch.setattr(ichor.hub, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.setattr(ichor.hub, "READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(ichor.hub, "DEADLINE_S", 5.0)


@pytest.mark.timeout(60)
def test_a_hub_that_never_answers_is_one_line_about_the_read_timeout(env, store, quick_timeouts):
    queue(store, 1)
    env.hub.hang = True
    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=env.endpoint)
    assert str(err.value) == f"the Hub at {env.endpoint} did not answer within 0.5 s (read timeout)"
    assert store.counts()["shared"] == 1


@pytest.mark.timeout(60)
def test_a_hub_that_never_accepts_the_connection_is_one_line_about_the_connect_timeout(env, store, quick_timeouts):
    queue(store, 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    filler = []
    for _ in range(4):  # fill the accept queue: further connection attempts get no answer at all
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(listener.getsockname())
        filler.append(s)
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with pytest.raises(ShareError) as err:
            share_queued(store, endpoint=endpoint)
    finally:
        for s in [*filler, listener]:
            s.close()
    message = str(err.value)
    assert message in (
        f"the Hub at {endpoint} did not accept a connection within 0.5 s",
        f"the Hub at {endpoint} did not answer within 0.5 s (read timeout)",  # a kernel that accepted anyway
    ), message


def test_the_deadline_bounds_an_operation_made_of_many_requests(env, store, quick_timeouts, monkeypatch):
    import ichor.hub

    monkeypatch.setattr(ichor.hub, "DEADLINE_S", 1e-9)
    queue(store, 1)
    with pytest.raises(ShareError, match="did not finish whoami within"):
        share_queued(store, endpoint=env.endpoint)


@pytest.mark.timeout(120)
def test_the_deadline_bounds_a_request_the_client_retries_with_backoff(env, store, quick_timeouts):
    queue(store, 2)
    # huggingface_hub retries the preupload call on a timeout, sleeping 1, 2, 4, 8, 8 s between tries
    env.hub.hang_on = ("POST", f"/api/datasets/{REPO}/preupload/")
    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=env.endpoint)
    assert str(err.value) == f"the Hub at {env.endpoint} did not finish the commit within 5 s"
    assert store.counts()["shared"] == 2 and data_paths(env) == []


def _leaked_pieces(message: str, token: str, piece: int = 6) -> list[str]:
    return [token[i : i + piece] for i in range(len(token) - piece + 1) if token[i : i + piece] in message]


def test_the_token_never_survives_a_cut_at_any_position():
    from ichor.hub import MESSAGE_LIMIT, one_line

    for before in range(MESSAGE_LIMIT + 5):
        line = one_line("x" * before + TOKEN + " and the rest of the server's message", [TOKEN])
        assert len(line) <= MESSAGE_LIMIT and not _leaked_pieces(line, TOKEN), before


def test_a_hub_error_echoing_the_token_is_redacted_before_it_is_cut(env, store):
    from ichor.hub import Hub, HubError

    hub = Hub(TOKEN, "HF_TOKEN", env.endpoint)
    prefix = len("the Hub refused your namespace (400): ")
    for before in range(120, 200 - prefix + 1):  # every position where the cut would fall inside the token
        message = "y" * before + TOKEN + " is not allowed here"
        env.hub.answers = {("GET", "/api/whoami-v2"): (400, b"{}", {"X-Error-Message": message})}
        with pytest.raises(HubError) as err:
            hub.owner()
        assert str(err.value).startswith("the Hub refused your namespace (400): yyy"), str(err.value)
        assert not _leaked_pieces(str(err.value), TOKEN), before


MALFORMED = {
    "whoami is not JSON": (("GET", "/api/whoami-v2"), (200, b"<html>maintenance</html>", {})),
    "whoami has no name": (("GET", "/api/whoami-v2"), (200, b'{"type": "user"}', {})),
    "repo info is a list": (("GET", f"/api/datasets/{REPO}"), (200, b"[1, 2, 3]", {})),
    "commit has no id": (("POST", f"/api/datasets/{REPO}/commit/"), (200, b'{"commitUrl": "x"}', {})),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_hub_answer_is_one_line_and_changes_nothing(env, store, case):
    (route, answer) = MALFORMED[case]
    queue(store, 2)
    env.hub.answers = {route: (answer[0], answer[1], {"Content-Type": "application/json", **answer[2]})}
    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=env.endpoint)
    message = str(err.value)
    assert message.startswith(f"the Hub at {env.endpoint} sent"), message
    assert "\n" not in message and TOKEN not in message
    assert store.counts()["shared"] == 2


def test_a_missing_huggingface_hub_is_one_line_naming_the_extra(env, store, monkeypatch):
    from ichor.hub import INSTALL_HINT

    queue(store, 1)
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ShareError) as err:
        share_queued(store, endpoint=env.endpoint)
    assert str(err.value) == f"sharing needs huggingface_hub, which is not installed: {INSTALL_HINT}"
