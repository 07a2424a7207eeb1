"""Property-based tests (hypothesis) for the store and every parser of user input.

Properties: nothing raises anything but the module's own one-line error; the store round-trips every
text exactly, never corrupts, and its counts follow a simple model through any keep/share/discard
sequence; bounded time per example (hypothesis' deadline).
"""

import io
import json
import sqlite3
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ichor import commands
from ichor.cli import main
from ichor.export import ExportError, load_records
from ichor.store import NewPair, Store, StoreError
from tests.support import new_pair

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Every code point, lone surrogates and NUL included.
any_char = st.characters(exclude_categories=())
any_text = st.text(any_char, max_size=40)
# What the store is given, for exact round-trips. Lone surrogates can't be stored as UTF-8: add_pair
# replaces them with U+FFFD, which tests/test_store.py checks.
store_char = st.characters(exclude_categories=("Cs",))
store_text = st.text(store_char, max_size=40)


def json_values(text):
    scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
    return st.recursive(
        scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
    )


def messages(text):
    return st.dictionaries(text, json_values(text), max_size=3).map(lambda d: {"role": "user", "content": "x", **d})


json_value = json_values(any_text)


@contextmanager
def fresh_store():
    with tempfile.TemporaryDirectory(prefix="ichor-prop-") as tmp:
        store = Store(Path(tmp) / "p" / "ichor.db", data_dir=Path(tmp) / "data")
        try:
            yield store
        finally:
            store.close()


def integrity(store: Store) -> str:
    db = sqlite3.connect(store.path)
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


# ------------------------------------------------------------------------------------ the store

new_pairs = st.builds(
    NewPair,
    kind=st.sampled_from(["correction", "retry", "undo"]),
    user_said=store_text,
    prompt=st.lists(messages(store_text), min_size=1, max_size=3),
    rejected=store_text,
    accepted=store_text,
    label=st.none() | store_text,
    platform=store_text,
    session_id=store_text,
    scrubbed=st.dictionaries(store_text, st.integers(0, 10**6), max_size=3),
)


@FAST
@given(pairs=st.lists(new_pairs, min_size=1, max_size=4))
@example(
    pairs=[
        NewPair(
            "correction",
            "\x00 nul",
            [{"role": "user", "content": "\U0010ffff", "\x00": [{"": None}]}],
            "a\x00b",
            "\x00",
            label="\ufeff",
            platform="\x00",
            session_id="\u202e",
        )
    ]
)
def test_any_text_round_trips_exactly_or_fails_cleanly(pairs):
    with fresh_store() as store:
        first: dict[str, NewPair] = {}  # a pair added again (same fingerprint) comes back as the first one
        stored = []
        for new in pairs:
            try:
                pair = store.add_pair(new)
            except StoreError:
                continue
            stored.append((pair.id, first.setdefault(new.fingerprint(), new)))
        for pid, new in stored:
            got = store.require(pid)
            assert (
                got.kind,
                got.user_said,
                got.prompt,
                got.rejected,
                got.accepted,
                got.label,
                got.platform,
                got.session_id,
                got.scrubbed,
            ) == (
                new.kind,
                new.user_said,
                new.prompt,
                new.rejected,
                new.accepted,
                new.label,
                new.platform,
                new.session_id,
                new.scrubbed,
            )
            try:
                store.set_status(pid, "kept")
            except StoreError:
                continue
            assert store.data_file(got.uid).exists()
        assert integrity(store) == "ok"
        assert sum(store.counts().values()) == len(first)


actions = st.lists(
    st.tuples(st.sampled_from(["add", "pending", "kept", "shared", "discard", "forget"]), st.integers(0, 7)),
    min_size=1,
    max_size=25,
)


@FAST
@given(steps=actions)
def test_status_and_discard_sequences_keep_counts_consistent_with_a_model(steps):
    with fresh_store() as store:
        model: dict[int, str] = {}  # id -> status
        uids: dict[int, str] = {}
        for n, (action, k) in enumerate(steps):
            ids = sorted(model)
            if action == "add":
                pair = store.add_pair(new_pair(n))
                model[pair.id], uids[pair.id] = "pending", pair.uid
            elif action == "forget":
                assert store.forget_all() == len(model)
                model.clear()
            elif not ids:
                with pytest.raises(StoreError):
                    store.set_status(k + 1, "kept") if action != "discard" else store.discard(k + 1)
            elif action == "discard":
                store.discard(ids[k % len(ids)])
                del model[ids[k % len(ids)]]
            else:
                store.set_status(ids[k % len(ids)], action)
                model[ids[k % len(ids)]] = action
            expected = {s: 0 for s in ("pending", "kept", "shared", "uploaded")}
            for status in model.values():
                expected[status] += 1
            assert store.counts() == expected
            on_disk = {p.name for p in store.data_dir.glob("*.jsonl")} if store.data_dir.exists() else set()
            assert on_disk == {store.data_file(uids[i]).name for i, s in model.items() if s in ("kept", "shared")}
        assert integrity(store) == "ok"


# ---------------------------------------------------------------------------- /ichor arguments

verbs = st.sampled_from(
    [
        "",
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
        "help",
        "KEEP",
        "set repo",
        "set public",
        "off --global",
        "on --global",
    ]
)
arg_words = (
    st.sampled_from(
        [
            "1",
            "2",
            "0",
            "-1",
            "99999999999999999999",
            "yes",
            "--global",
            "repo",
            "public",
            "private",
            "a/b",
            "../x",
            "'",
            '"',
            "\\",
            "\x00",
            "\ud800",
        ]
    )
    | any_text
)


@pytest.fixture
def no_token(monkeypatch):
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@FAST
@given(
    argstrings=st.lists(
        any_text | st.builds(lambda v, a: " ".join([v, *a]), verbs, st.lists(arg_words, max_size=3)),
        min_size=1,
        max_size=6,
    ),
    scope=st.none() | any_text,
)
@example(argstrings=["keep 9223372036854775808", "share ²", "discard ٣", "keep 00"], scope=None)
def test_ichor_command_never_raises_and_always_answers_text(no_token, argstrings, scope):
    with fresh_store() as store:
        for n in range(3):
            store.add_pair(new_pair(n))
        for argstring in argstrings:
            reply = commands.run_chat(store, argstring, scope)
            assert isinstance(reply.text, str) and reply.text
        assert integrity(store) == "ok"


# ------------------------------------------------------------------------------------- the CLI

cli_words = st.sampled_from(
    [
        "status",
        "review",
        "keep",
        "share",
        "discard",
        "export",
        "forget-all",
        "set",
        "off",
        "on",
        "detect",
        "scrub",
        "eval",
        "--json",
        "--jsonl",
        "--global",
        "--scope",
        "--home",
        "--out",
        "--help",
        "-h",
        "yes",
        "1",
        "0",
        "x",
        "public",
        "repo",
        "--",
        "-",
        "",
    ]
) | st.text(any_char, max_size=12).filter(lambda w: not w.startswith(("/", "~")) and ".." not in w)


def run_cli(argv, stdin: bytes = b"") -> tuple[int, str, str]:
    """``main(argv)`` in-process with strict UTF-8 standard streams, as in a terminal or a pipe."""
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    try:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
            stream.detach()  # so that closing the wrapper later doesn't close the buffer
        sys.stdin, sys.stdout, sys.stderr = saved
    return code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8")


@pytest.fixture
def cli_home(tmp_path, monkeypatch, no_token):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes"))
    monkeypatch.delenv("ICHOR_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    with Store.open() as store:
        for n in range(2):
            store.add_pair(new_pair(n))
    return tmp_path


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(cli_words, max_size=5))
@example(argv=["keep", "abc"]).via("explicit")
@example(argv=["export", "--out", "dpo.jsonl"]).via("explicit")
@example(argv=["--home", "\x00"]).via("explicit")
def test_cli_never_shows_a_traceback(cli_home, argv):
    (cli_home / "dpo.jsonl").write_text("a file where a folder is wanted")
    code, out, err = run_cli(argv)
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err
    if code == 2 and not err.startswith("usage:"):
        assert len(err.strip().splitlines()) == 1, err


json_line = st.dictionaries(
    st.sampled_from(["id", "text", "prev_user", "prev_assistant", "user", "assistant", "is_correction", "kind"]),
    json_value | st.booleans(),
    max_size=8,
).map(lambda d: json.dumps(d).encode())
stdin_bytes = st.lists(
    json_line
    | st.binary(max_size=60)
    | st.text(any_char, max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass")),
    max_size=5,
).map(lambda lines: b"\n".join(lines))


def assert_clean_exit(code: int, err: str, what, data: bytes) -> None:
    """Exit 0 in silence, or 2 with one ``ichor:`` line per bad input line (at most 5 for eval) and one summary."""
    assert code in (0, 2), (what, code, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    if code == 0:
        assert lines == [], (what, err)
    else:
        assert 1 <= len(lines) <= min(data.count(b"\n") + 1, 5) + 1, (what, err)
        assert all(line.startswith("ichor: ") for line in lines), (what, err)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=stdin_bytes, command=st.sampled_from([["detect"], ["scrub", "--jsonl"], ["scrub"]]))
@example(data=b"\xff\xfe not utf-8\n", command=["detect"]).via("explicit")
@example(data=b'{"text": "\\ud800"}\n', command=["scrub", "--jsonl"]).via("explicit")
@example(data=b"[" * 100000, command=["detect"]).via("explicit")
def test_detect_and_scrub_on_any_input_exit_0_or_2_with_a_line_per_bad_line(cli_home, data, command):
    code, out, err = run_cli(command, data)
    assert_clean_exit(code, err, (command, data[:80]), data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=stdin_bytes)
@example(
    data=b'{"prev_user": "a", "prev_assistant": "b", "user": "no, c", "assistant": "d", '
    b'"is_correction": true, "kind": "correction"}'
).via("explicit")
@example(data=b"\xff\n").via("explicit")
def test_eval_on_any_file_exits_0_or_2_with_a_line_per_bad_line(cli_home, data):
    path = cli_home / "windows.jsonl"
    path.write_bytes(data)
    code, out, err = run_cli(["eval", str(path)])
    assert_clean_exit(code, err, data[:80], data)


# ------------------------------------------------------------------------------- load_records

# Valid UTF-8 text, nested at most a few levels: load_records lets UnicodeDecodeError (bytes that aren't
# UTF-8) and RecursionError (a line of 50,000 "[") through rather than ExportError (reported to its owner).
record_line = st.fixed_dictionaries(
    {
        "uid": any_text,
        "prompt": json_value | st.lists(messages(any_text), max_size=2),
        "rejected": json_value,
        "accepted": json_value,
    },
    optional={"kind": json_value},
).map(json.dumps)


@FAST
@given(lines=st.lists(record_line | store_text, max_size=6))
@example(lines=['{"uid": "a", "prompt": [{"role": "user", "content": "x"}], "rejected": "r", "accepted": "a"}'])
@example(
    lines=['{"uid": "\\ud800", "prompt": [{"role": "user", "content": "\\udfff"}], "rejected": "", "accepted": ""}']
)
def test_load_records_yields_records_or_raises_export_error(tmp_path, lines):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        records = list(load_records(path))
    except ExportError as exc:
        assert str(path) in str(exc)
        return
    for record in records:
        assert isinstance(record["prompt"], list) and record["prompt"][-1]["role"] == "user"
        assert isinstance(record["rejected"], str) and isinstance(record["accepted"], str)


# ------------------------------------------------------------------------------- the detector

detector_text = st.one_of(
    any_text, st.text(st.sampled_from("no,wrong use pnpm npm ` ( [ { * + ? \\ \n\t"), max_size=300)
)


@settings(max_examples=120, deadline=None)
@given(prev_user=detector_text, prev_assistant=detector_text, user=detector_text, assistant=detector_text)
@example(prev_user="install deps", prev_assistant="npm install", user="no, use pnpm", assistant="pnpm install")
@example(prev_user="\ud800", prev_assistant="\x00", user="\udfff" * 3, assistant="")
@example(prev_user="(" * 30000, prev_assistant="a" * 60000, user="no " * 20000, assistant="`" * 50000)
@example(prev_user="x", prev_assistant="y", user="no, " + "a+" * 25000, assistant="sorry " * 10000)
def test_detect_never_raises_and_answers_in_bounded_time(prev_user, prev_assistant, user, assistant):
    from ichor.detect import KINDS, detect

    found = detect(prev_user, prev_assistant, user, assistant)
    assert found.kind in KINDS
    assert found.is_correction == (found.kind in ("correction", "retry"))
    assert isinstance(found.score, float) and found.score == found.score  # a number, never NaN
    assert found.label is None or (isinstance(found.label, str) and 2 <= len(found.label.split()) <= 4)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(json_value | st.binary(max_size=20) | st.just(object()), min_size=4, max_size=4))
def test_detect_takes_any_object_without_raising(values):
    from ichor.detect import KINDS, detect

    assert detect(*values).kind in KINDS
