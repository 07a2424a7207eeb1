"""What every stage shares: params.yaml sections → the configs that consume them, path flags, JSON outputs,
one-line errors.

params.yaml is the single source of every knob. A section maps onto one config class by its field names
(``dpo:`` → ``trl.DPOConfig``, ``lora:`` → ``peft.LoraConfig``, ``audit:`` → ``AuditParams``…), and the
stages' own params classes have no defaults, so nothing is defaulted twice. Paths are not knobs: they
live in ``dvc.yaml`` and reach a stage as flags (``path_args``). Override a knob for one run with
``dvc exp run -S dpo.beta=0.2``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

PARAMS_FILE = "params.yaml"


class PipelineError(Exception):
    """A problem worth one line to the user; ``code`` is the exit status (2 = bad input)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def load_params(path: str | os.PathLike = PARAMS_FILE) -> dict:
    import yaml

    file = Path(path)
    if not file.exists():
        raise PipelineError(f"{file}: no such params file (run from the workspace root or pass --params)")
    try:
        params = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise PipelineError(f"{file}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(params, dict):
        raise PipelineError(f"{file}: expected a mapping of sections")
    return params


def section(params: dict, name: str) -> dict:
    value = params.get(name) or {}
    if not isinstance(value, dict):
        raise PipelineError(f"params.yaml: `{name}` must be a mapping")
    return value


def config_from(params: dict, name: str, cls, **derived):
    """``cls(**params[name], **derived)``: the section's keys are ``cls``'s own field names. Unknown or
    missing keys are one-line errors naming the section."""
    values = section(params, name)
    try:
        return cls(**values, **derived)
    except TypeError as exc:
        raise PipelineError(f"params.yaml `{name}`: {exc}") from None


def unset_defaults(cls) -> list[str]:
    """Fields of a params dataclass that carry a default (there should be none: params.yaml sets them)."""
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    ]


def path_args(
    argv: list[str] | None, description: str, paths: dict[str, str], optional: dict[str, str] | None = None
) -> argparse.Namespace:
    """Parse a stage's path flags (``--name PATH``; dvc.yaml passes them: ``paths`` are required, ``optional``
    ones default to "") and ``--params``."""
    parser = argparse.ArgumentParser(
        description=description, epilog="Knobs come from params.yaml; override one with `dvc exp run -S KEY=VALUE`."
    )
    parser.add_argument("--params", default=PARAMS_FILE, help="the params file (default: %(default)s)")
    for name, help_text in paths.items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, required=True, metavar="PATH", help=help_text)
    for name, help_text in (optional or {}).items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default="", metavar="PATH", help=help_text)
    return parser.parse_args(argv)


def params_of(args: argparse.Namespace) -> dict:
    try:
        return load_params(args.params)
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(exc.code) from None


def write_json(path: str | os.PathLike, obj) -> Path:
    """Write ``obj`` as pretty JSON, creating the folder; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return out


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def run(main_body: Callable[[], object]) -> int:
    """Run a stage body, turning expected failures into one line on stderr and an exit status."""
    from ichor.export import ExportError

    try:
        result = main_body()
        return result if isinstance(result, int) else 0
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


# The rl and publish stages still build their configs this way; the DPO stages use config_from/path_args.
def _flag_type(field: dataclasses.Field) -> dict:
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    if "bool" in kind:
        return {"type": _as_bool, "metavar": "BOOL"}
    if "list" in kind:
        return {"type": _as_list, "metavar": "A,B"}
    if "float" in kind:
        return {"type": float}
    if "int" in kind:
        return {"type": int}
    return {"type": str}


def _as_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _as_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_config(config_cls, argv: list[str] | None, description: str):
    """Build ``config_cls`` from params.yaml, then apply ``--field value`` overrides from ``argv``."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--params", default=PARAMS_FILE)
    known, _ = pre.parse_known_args(argv)
    wants_help = any(a in ("-h", "--help") for a in (sys.argv[1:] if argv is None else argv))
    if wants_help and not Path(known.params).exists():
        defaults = config_cls()
    else:
        try:
            defaults = config_cls.from_params(load_params(known.params))
        except PipelineError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(exc.code) from None

    parser = argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Defaults come from params.yaml; a flag overrides one value for this run only.",
    )
    parser.add_argument("--params", default=PARAMS_FILE, help="the params file to read")
    for field in dataclasses.fields(config_cls):
        default = getattr(defaults, field.name)
        help_text = field.metadata.get("help", "")
        parser.add_argument(
            f"--{field.name.replace('_', '-')}", dest=field.name, default=default, help=help_text, **_flag_type(field)
        )
    args = vars(parser.parse_args(argv))
    args.pop("params")
    return config_cls(**args)
