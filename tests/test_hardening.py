"""Hardening: private file modes, parameterised SQL only, no path escapes, the HF token never on disk."""

import ast
import os
import stat
from pathlib import Path

import pytest

from ichor import paths
from ichor.cli import main
from ichor.export import ExportConfig, write_export
from ichor.store import Store, StoreError
from tests.support import new_pair

ICHOR = Path(__file__).resolve().parents[1] / "ichor"
FAKE_TOKEN = "hf_ichorHardeningFakeToken0123456789abcd"


@pytest.fixture
def usual_umask():
    """The common 022 umask, so a file created without an explicit mode would come out world-readable."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def reachable_by_others(path: Path, root: Path) -> bool:
    """Whether a user other than the owner could read ``path`` if ``root`` were open to them: every folder
    between ``root`` and the file lets others through (o+x) and the file lets others read (o+r)."""
    for folder in path.parents:
        if folder == root:
            break
        if not mode(folder) & stat.S_IXOTH:
            return False
    return bool(mode(path) & stat.S_IROTH)


# --------------------------------------------------------------------------- file and folder modes


def test_database_and_its_wal_files_are_0600_in_a_0700_folder(usual_umask, store):
    store.add_pair(new_pair(1))  # a write, so SQLite has created the -wal and -shm files
    for suffix in ("", "-wal", "-shm"):
        db_file = Path(str(store.path) + suffix)
        assert db_file.exists(), db_file
        assert mode(db_file) == 0o600, (db_file, oct(mode(db_file)))
    assert mode(store.path.parent) == 0o700


def test_data_files_are_0600_and_their_folder_0700_even_outside_the_profile(tmp_path, monkeypatch, usual_umask):
    data_dir = tmp_path / "repo" / "data" / "pairs"
    monkeypatch.setenv("ICHOR_DATA_DIR", str(data_dir))
    with Store(tmp_path / "db" / "ichor.db") as store:
        for n in range(3):
            store.set_status(store.add_pair(new_pair(n)).id, ("kept", "shared", "kept")[n])
    files = sorted(data_dir.iterdir())
    assert len(files) == 3
    assert mode(data_dir) == 0o700
    assert all(mode(f) == 0o600 for f in files), [oct(mode(f)) for f in files]


def test_an_existing_loose_store_folder_is_tightened(tmp_path):
    folder = tmp_path / "loose"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    Store(folder / "ichor.db").close()
    assert mode(folder) == 0o700


def test_default_export_is_unreadable_to_other_users(tmp_path, home, store, usual_umask):
    store.set_status(store.add_pair(new_pair(1)).id, "kept")
    assert main(["export"]) == 0
    written = [p for p in paths.exports_dir().rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"dpo.jsonl", "dpo_train.jsonl", "dpo_eval.jsonl", "pairs.jsonl"}
    assert [p for p in written if reachable_by_others(p, tmp_path)] == []


def test_reachable_by_others_can_tell(tmp_path, usual_umask):
    open_file = tmp_path / "a" / "b" / "f.txt"
    open_file.parent.mkdir(parents=True, mode=0o755)
    open_file.write_text("x")
    assert reachable_by_others(open_file, tmp_path)
    os.chmod(open_file.parent.parent, 0o700)
    assert not reachable_by_others(open_file, tmp_path)
    os.chmod(open_file.parent.parent, 0o755)
    os.chmod(open_file, 0o600)
    assert not reachable_by_others(open_file, tmp_path)


# ------------------------------------------------------------------------ SQL is parameterised

SQL_SINKS = {"execute", "executemany", "executescript", "_write", "_read"}
# Functions that pass their own ``sql`` parameter on to a sink; their callers are checked instead.
SQL_WRAPPERS = {"_write", "_read"}


def _placeholder_join(node) -> bool:
    """``",".join("?" * n)``: a run of bare placeholders."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.BinOp)
        and isinstance(node.args[0].op, ast.Mult)
        and isinstance(node.args[0].left, ast.Constant)
        and node.args[0].left.value == "?"
    )


def _safe_names(tree: ast.Module, func: ast.AST | None) -> set[str]:
    """Names an f-string SQL may interpolate: module constants that are string literals, and local
    placeholder runs."""
    safe = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            safe.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(func) if func else ():
        if isinstance(node, ast.Assign) and _placeholder_join(node.value):
            safe.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return safe


def _sql_problem(arg, tree, func) -> str | None:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return None
    if isinstance(arg, ast.JoinedStr):
        safe = _safe_names(tree, func)
        for part in arg.values:
            if isinstance(part, ast.FormattedValue) and not (
                isinstance(part.value, ast.Name) and part.value.id in safe
            ):
                return f"f-string interpolates {ast.unparse(part.value)!r}"
        return None
    if (
        isinstance(arg, ast.Name)
        and arg.id == "sql"
        and isinstance(func, ast.FunctionDef)
        and func.name in SQL_WRAPPERS
        and "sql" in [a.arg for a in func.args.args]
    ):
        return None
    return f"SQL built as {type(arg).__name__}: {ast.unparse(arg)[:80]!r}"


def sql_violations(source: str, filename: str = "<src>") -> list[str]:
    """Every SQL sink call whose statement is not a literal, a constant-only f-string, or a wrapper's own
    ``sql`` parameter. ``%``, ``.format`` and concatenation are never accepted."""
    tree = ast.parse(source, filename)
    problems = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            scope = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in SQL_SINKS
                and child.args
            ):
                problem = _sql_problem(child.args[0], tree, func)
                if problem:
                    problems.append(f"{filename}:{child.lineno}: {problem}")
            visit(child, scope)

    visit(tree, None)
    return problems


def test_every_sql_statement_in_ichor_is_parameterised():
    sources = sorted(ICHOR.rglob("*.py"))
    assert len(sources) > 5
    problems = [p for src in sources for p in sql_violations(src.read_text(encoding="utf-8"), str(src))]
    assert problems == []


def test_the_sql_rule_catches_built_statements():
    bad = """
_COLUMNS = "id, uid"
def f(db, uid, table, ids):
    db.execute(f"SELECT * FROM pairs WHERE uid = '{uid}'")
    db.execute("SELECT * FROM pairs WHERE uid = '%s'" % uid)
    db.execute("SELECT * FROM pairs WHERE uid = '{}'".format(uid))
    db.execute("SELECT * FROM " + table)
    cols = "id"
    db.execute(f"SELECT {cols} FROM pairs")
    marks = ",".join(str(i) for i in ids)
    db.execute(f"SELECT 1 WHERE id IN ({marks})")
    sql = "SELECT 1"
    db.execute(sql)
"""
    good = """
_COLUMNS = "id, uid"
def g(db, ids):
    marks = ",".join("?" * len(ids))
    db.execute(f"SELECT {_COLUMNS} FROM pairs WHERE id IN ({marks})", ids)
    db.execute("SELECT 1 WHERE ? = ?", (1, 1))
def _write(self, sql, params=()):
    self._db.execute(sql, params)
"""
    assert len(sql_violations(bad)) == 7
    assert sql_violations(good) == []


# ------------------------------------------------------------------------------ path escapes


@pytest.mark.parametrize(
    "uid", ["../x", "..", "a/b", "/etc/passwd", "a\\b", "", ".", "a.b", "a b", "a\x00b", "~root", "C:evil"]
)
def test_data_file_refuses_uids_that_could_leave_the_folder(store, uid):
    with pytest.raises(StoreError):
        store.data_file(uid)


def test_accepted_uids_stay_inside_the_data_folder(store):
    for uid in ("abc123", "9f" * 16, "ünï", "٣"):
        target = store.data_file(uid)
        assert target.parent == store.data_dir
        assert target.resolve().parent == store.data_dir.resolve()


def test_export_writes_only_its_own_files_inside_its_folder(tmp_path):
    out = tmp_path / "sandbox" / "export"
    out.mkdir(parents=True)
    hostile = {
        "uid": "../../../escape",
        "kind": "../k",
        "label": "/etc/passwd",
        "prompt": [{"role": "user", "content": "../../x"}],
        "rejected": "a",
        "accepted": "b",
    }
    counts = write_export([hostile], out, ExportConfig(eval_fraction=0.5))
    assert counts["pairs"] == 1
    everything = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert everything == [
        "sandbox/export/atropos/pairs.jsonl",
        "sandbox/export/dpo.jsonl",
        "sandbox/export/dpo_eval.jsonl",
        "sandbox/export/dpo_train.jsonl",
        "sandbox/export/dpo_validation.jsonl",
    ]


def test_a_tampered_uid_in_the_database_cannot_write_outside(store, tmp_path):
    import sqlite3

    pair = store.add_pair(new_pair(1))
    db = sqlite3.connect(store.path)
    db.execute("UPDATE pairs SET uid = ? WHERE id = ?", ("../../../../outside", pair.id))
    db.commit()
    db.close()
    with pytest.raises(StoreError):
        store.set_status(pair.id, "kept")
    assert not (tmp_path / "outside.jsonl").exists()
    assert [p.name for p in tmp_path.rglob("*outside*")] == []


# --------------------------------------------------------------------------- the HF token


def test_the_hf_token_is_never_written_anywhere(home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", FAKE_TOKEN)
    monkeypatch.chdir(tmp_path)
    with Store.open() as store:
        ids = [store.add_pair(new_pair(n, user_said=f"no, use pnpm {n}")).id for n in range(3)]
    out_dir = tmp_path / "out"
    runs = [
        ["status"],
        ["status", "--json"],
        ["review"],
        ["review", "--json"],
        ["keep", str(ids[0])],
        ["share", str(ids[1])],
        ["set", "repo", "me/ichor-pairs"],
        ["set", "private"],
        ["off", "--global"],
        ["on", "--global"],
        ["export"],
        ["export", "--out", str(out_dir)],
        ["discard", str(ids[2])],
    ]
    for argv in runs:
        assert main(argv) == 0, argv
    printed = capsys.readouterr()
    assert FAKE_TOKEN not in printed.out + printed.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "ichor.db" for p in files) and any(p.name == "dpo.jsonl" for p in out_dir.rglob("*"))
    needle = FAKE_TOKEN.encode()
    leaks = [str(p) for p in files if needle in p.read_bytes()]
    assert leaks == []
