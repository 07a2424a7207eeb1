"""The built wheel, installed the README's way beside hermes-agent 0.19.0, works through real Hermes.

The wheel is built from this checkout (no build isolation, so nothing is downloaded) and installed
with ``--no-deps`` into a fresh virtual environment. That environment sees the hermes-agent 0.19.0
already installed for the tests through a ``.pth`` line, the offline stand-in for
``pip install hermes-agent==0.19.0``; ichor itself is imported from the wheel, never the checkout.
Then: ``hermes plugins enable ichor``, a correction over two ``hermes chat`` processes, and
``/ichor list``, ``show``, ``keep``, ``share`` and ``share --dry-run`` through Hermes' own CLI
command dispatch.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
import yaml

from ichor.testing.hermes_harness import SCRUBBED_ENV, StubLLM, write_home

REPO = Path(__file__).resolve().parents[1]
ASK = "list the files in this folder, largest first"
CORRECTION = "no, make it human readable and sorted by size"
SLASH_COMMANDS = ["/ichor list", "/ichor show 1", "/ichor keep 1", "/ichor share 1", "/ichor share --dry-run"]

pytestmark = pytest.mark.slow


WHEEL_SOURCES = ("pyproject.toml", "README.md", "ichor", "envs/atropos")


def build_wheel(tmp: Path) -> Path:
    """Build from a copy of what the wheel is made of, so the checkout gets no build/ or egg-info."""
    source = tmp / "source"
    for name in WHEEL_SOURCES:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    out = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        env=clean_env(),
        timeout=300,
    )
    [wheel] = out.glob("hermes_ichor-*.whl")
    return wheel


def clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH: the checkout must not stand in for the installed wheel."""
    env = {k: v for k, v in os.environ.items() if k not in (*SCRUBBED_ENV, "PYTHONPATH")}
    return {**env, **extra}


def fresh_env(root: Path, wheel: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "hermes_agent_019.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        env=clean_env(),
        timeout=300,
    )
    hermes = root / "bin" / "hermes"
    hermes.write_text(f"#!{python}\nimport sys\nfrom hermes_cli.main import main\nsys.exit(main())\n")
    hermes.chmod(0o755)
    return root / "bin"


def run(bin_dir: Path, home: Path, *argv: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = clean_env(HERMES_HOME=str(home), NO_COLOR="1", HF_HUB_OFFLINE="1")
    command = [str(bin_dir / "python"), "-c", code] if code else [str(bin_dir / argv[0]), *argv[1:]]
    done = subprocess.run(
        command, env=env, cwd=str(home.parent), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


SLASH = """
import sys
from cli import HermesCLI

cli = HermesCLI()
for command in sys.argv[1:]:
    print("=== " + command, flush=True)
    cli.process_command(command)
"""


def test_the_wheel_installed_the_readme_way_captures_and_answers_slash_commands(tmp_path):
    wheel = build_wheel(tmp_path)
    bin_dir = fresh_env(tmp_path / "venv", wheel)
    stub = StubLLM()
    try:
        home = write_home(tmp_path / "home", stub.base_url, plugins=())
        where = run(bin_dir, home, code="import ichor; print(ichor.__file__)").stdout
        assert where.startswith(str(tmp_path / "venv")), where
        run(bin_dir, home, "hermes", "plugins", "enable", "ichor", "--no-allow-tool-override")
        assert yaml.safe_load((home / "config.yaml").read_text())["plugins"]["enabled"] == ["ichor"]
        # A one-shot `hermes chat -q` exits before a background confirmation by the host's model returns.
        run(bin_dir, home, "ichor", "set", "confirm", "off", "--home", str(home))

        stub.replies.append("ls -S")
        first = run(bin_dir, home, "hermes", "chat", "-Q", "-q", ASK)
        session = re.search(r"session_id: (\S+)", first.stdout + first.stderr).group(1)
        stub.replies.append("ls -lhS")
        second = run(bin_dir, home, "hermes", "chat", "-Q", "-r", session, "-q", CORRECTION)
        assert "ichor · captured pair #1" in second.stdout

        code = SLASH + "\n"
        replies = run(bin_dir, home, code=code.replace("sys.argv[1:]", repr(SLASH_COMMANDS))).stdout
    finally:
        stub.close()
    sections = dict(part.split("\n", 1) for part in replies.split("=== ")[1:])
    assert sections["/ichor list"].startswith("#1  pending · correction")
    assert "ls -S" in sections["/ichor show 1"] and "ls -lhS" in sections["/ichor show 1"]
    assert sections["/ichor keep 1"].strip() == "ichor · pair #1 kept (private)"
    assert sections["/ichor share 1"].strip() == "ichor · pair #1 queued to share"
    assert (
        "would upload 1 queued pair(s) to <your account>/ichor-pairs (private)" in sections["/ichor share --dry-run"]
    )
