"""params.yaml is the single source of every DPO-pipeline knob: each section is consumed, key for key, by the
one config class that reads it, and the stages' own params classes define no defaults of their own."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest
import yaml

from ichor.export import ExportConfig
from pipelines import audit, base_model, common, evaluate
from tests.support import REPO

PARAMS = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
OWN = {
    "data": audit.DataParams,
    "audit": audit.AuditParams,
    "model": base_model.ModelParams,
    "eval": evaluate.EvalParams,
    "judge": evaluate.JudgeParams,
}
# Read by the rl and publish stages, whose configs are checked in their own suites.
OTHER_STAGES = {"reward", "rl", "grpo", "hub"}


def library_sections() -> dict:
    from peft import LoraConfig
    from transformers import EarlyStoppingCallback
    from trl import DPOConfig

    return {"dpo": DPOConfig, "lora": LoraConfig, "early_stopping": EarlyStoppingCallback, "export": ExportConfig}


def accepted_keys(cls) -> set[str]:
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls) if f.init}
    return set(inspect.signature(cls).parameters) - {"self", "args", "kwargs"}


def test_every_section_has_one_reader():
    assert set(PARAMS) - OTHER_STAGES == set(OWN) | set(library_sections())


@pytest.mark.parametrize("name", sorted(OWN))
def test_own_sections_match_their_params_class_exactly_and_it_has_no_defaults(name):
    cls = OWN[name]
    assert set(PARAMS[name]) == accepted_keys(cls)
    assert common.unset_defaults(cls) == []
    assert common.config_from(PARAMS, name, cls)  # builds from the file as it is


def test_library_sections_use_the_libraries_own_field_names():
    for name, cls in library_sections().items():
        unknown = set(PARAMS[name]) - accepted_keys(cls)
        assert not unknown, f"params.yaml `{name}` keys {cls.__name__} does not take: {unknown}"


def test_ichor_export_uses_the_same_values_as_the_export_stage():
    assert dataclasses.asdict(ExportConfig()) == PARAMS["export"]


def test_an_unknown_key_is_a_one_line_error():
    with pytest.raises(common.PipelineError, match=r"params.yaml `audit`: .*unexpected keyword"):
        common.config_from({"audit": {"fail_on_leak": True, "fail_fast": 1}}, "audit", audit.AuditParams)


def test_stages_do_not_default_a_knob_in_code():
    """No ``params[...].get(key, default)`` and no path default: paths come from dvc.yaml, knobs from here."""
    for stage in ("audit", "export", "base_model", "train", "evaluate"):
        source = (REPO / "pipelines" / f"{stage}.py").read_text(encoding="utf-8")
        assert not re.search(r"params\[[^\]]+\]\.get\(|section\(params", source), stage
        assert "from_params" not in source and "parse_config" not in source, stage


def test_dvc_yaml_reads_every_own_section_and_depends_on_the_package():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    read = {p.split(".")[0] for s in stages.values() for p in s.get("params", [])}
    assert set(OWN) | set(library_sections()) <= read
    for name in ("audit", "export", "evaluate"):
        assert "ichor" in stages[name]["deps"], name
