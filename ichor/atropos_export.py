"""Write an ``atropos_env/`` folder: the pairs, IchorEnv, the reward weights it was exported with, a README.

IchorEnv's source lives once, in ``envs/atropos/``. A source checkout or editable install finds it next
to the package; a wheel installs it under ``<prefix>/share/ichor/atropos/`` (``[tool.setuptools.data-files]``
in pyproject.toml). The reward code is not copied: the env imports ``ichor.reward`` from the installed
package, and reads its weights from the folder's ``reward.json``. Standard library only: this runs inside Hermes.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from .paths import open_private

ENV_FILES = ("ichor_env.py",)

README = """# IchorEnv: an Atropos environment built from your own corrections

`pairs.jsonl` holds {pairs} preference pairs ({eval} held out for evaluation): a prompt, the answer
you rejected, what you said about it, and the one you accepted. `ichor_env.py` samples fresh answers to
those prompts and rewards the ones that do what you asked (`ichor.reward`: checks derived from your
correction, the words that differ between the two answers, an optional judge, and penalties for echo,
keyword lists, repetition and truncation). `reward.json` holds the weights this folder was exported with.

    pip install "hermes-ichor[rl]"      # IchorEnv imports its reward from the ichor package

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
    """Where ``ichor_env.py`` is: the checkout's ``envs/atropos/`` or the wheel's data dir."""
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
    total = held_out = 0
    with open(pairs, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                total += 1
                held_out += json.loads(line).get("split") == "eval"
    return total, held_out


def write_atropos_env(
    out_dir: str | os.PathLike, pairs: str | os.PathLike | None = None, reward_spec: dict | None = None
) -> Path:
    """Write ``out_dir/atropos_env/`` from ``pairs`` (default ``out_dir/atropos/pairs.jsonl``, as
    ``ichor.export.write_export`` leaves it) with ``reward_spec`` (``{"weights": ..., "judge": ...}``;
    default: ``ichor.reward.DEFAULT_WEIGHTS`` and no judge) as its ``reward.json``. Returns the folder."""
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
    with open_private(folder / "reward.json") as fh:
        fh.write(json.dumps(reward_spec or default_spec(), indent=2) + "\n")
    total, held_out = _count(source_pairs)
    with open_private(folder / "README.md") as fh:
        fh.write(README.format(pairs=total, eval=held_out))
    return folder


def _copy_private(src: Path, dst: Path) -> None:
    with open(src, "rb") as fin, open_private(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)


def default_spec() -> dict:
    from .reward import DEFAULT_WEIGHTS

    return {"weights": dict(DEFAULT_WEIGHTS), "judge": {}}
