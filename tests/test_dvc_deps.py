"""Every DVC stage depends on the code it runs: a change to any module a stage imports reruns it."""

import ast
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def first_party_imports(module: str, seen: set[str] | None = None) -> set[str]:
    """Modules of ``pipelines``, ``ichor`` and ``envs`` that ``module`` imports, following ``pipelines`` ones."""
    seen = set() if seen is None else seen
    path = ROOT / (module.replace(".", "/") + ".py")
    if module in seen or not path.is_file():
        return seen
    seen.add(module)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if name.split(".")[0] == "pipelines":
                first_party_imports(name, seen)
            elif name.split(".")[0] in ("ichor", "envs"):
                seen.add(name)
    return seen


def covered(module: str, deps: list[str]) -> bool:
    path = module.replace(".", "/")
    return any(path == dep or path.startswith(dep + "/") or path + ".py" == dep for dep in deps)


def test_each_stage_depends_on_every_first_party_module_it_imports():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    missing = {}
    for name, stage in stages.items():
        runs = re.search(r"-m (pipelines\.\w+)", stage["cmd"])
        assert runs, f"stage {name} runs no pipelines module"
        gaps = [m for m in sorted(first_party_imports(runs.group(1))) if not covered(m, stage["deps"])]
        if gaps:
            missing[name] = gaps
    assert missing == {}


def test_the_checker_sees_a_missing_dependency():
    imported = first_party_imports("pipelines.audit")
    assert "pipelines.audit" in imported and any(m.startswith("ichor") for m in imported)
    assert not covered("ichor.export", ["pipelines/audit.py"]) and covered("ichor.export", ["ichor"])
