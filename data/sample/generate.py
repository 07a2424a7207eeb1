"""Write the generated half of the sample pairs: ``python data/sample/generate.py`` (idempotent).

The pairs are written as the capture code would store them: the prompt is the conversation *before* the
correction (it never already contains what the correction adds), ``user_said`` is the user's next message,
and the rejected and accepted answers come from the same sentence template with a different slot value,
so no length or punctuation artifact separates them. Corrections that supply information (a package
manager, a version, a path) mix with corrections of plain errors (a wrong flag or API), retries (the same
message re-sent) and undos (the exchange taken back and a different question asked).
"""

from __future__ import annotations

import hashlib
import json
from itertools import cycle
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEMS = cycle(
    [
        "You are a coding assistant working in the user's terminal. Answer briefly with exact commands.",
        "You are Hermes, a helpful assistant. Keep answers short and concrete.",
        "You help with software projects. Prefer one command or one code line per answer.",
    ]
)
MANAGERS = {
    "npm": ("npm install", "npm install", "npm run", "npm uninstall", "package-lock.json"),
    "pnpm": ("pnpm install", "pnpm add", "pnpm", "pnpm remove", "pnpm-lock.yaml"),
    "yarn": ("yarn install", "yarn add", "yarn", "yarn remove", "yarn.lock"),
    "bun": ("bun install", "bun add", "bun run", "bun remove", "bun.lockb"),
    "pip": ("pip install -r requirements.txt", "pip install", "python -m", "pip uninstall", "requirements.txt"),
    "uv": ("uv sync", "uv add", "uv run", "uv remove", "uv.lock"),
    "poetry": ("poetry install", "poetry add", "poetry run", "poetry remove", "poetry.lock"),
}
MANAGER_SWAPS = [
    ("npm", "pnpm", ["lodash", "zod", "axios", "dayjs"], "dev"),
    ("npm", "yarn", ["react-query", "chalk", "commander", "uuid"], "start"),
    ("npm", "bun", ["hono", "drizzle-orm", "valibot", "nanoid"], "dev"),
    ("yarn", "pnpm", ["vitest", "prettier", "eslint", "tsx"], "build"),
    ("pip", "uv", ["httpx", "rich", "pydantic", "typer"], "pytest"),
    ("pip", "poetry", ["requests", "click", "sqlalchemy", "jinja2"], "flask"),
    ("poetry", "uv", ["polars", "structlog", "tenacity", "orjson"], "mypy"),
]
MANAGER_SAID = [
    "no, this repo uses {right}",
    "we use {right} here, not {wrong}",
    "wrong tool, it's a {right} project",
    "{right} please, there's a {lock} in the repo",
]
MANAGER_TASKS = [
    ("Install the project's dependencies.", "Run `{install}` from the repository root."),
    ("Add {pkg} to the project.", "Run `{add} {pkg}`; it updates the manifest and the lockfile."),
    ("How do I run {script} here?", "Use `{run} {script}` so it runs inside the project's environment."),
    ("Get rid of the {pkg} dependency.", "Run `{remove} {pkg}`, then commit the changed lockfile."),
]

# (question, answer template with {v}, wrong value, right value, the user's correction)
VERSIONS = [
    (
        "Which Node version should go in .nvmrc?",
        "Put `{v}` in `.nvmrc` and run `nvm use`.",
        "18",
        "22",
        "CI runs Node 22",
    ),
    (
        "What should requires-python say in pyproject.toml?",
        'Set `requires-python = ">={v}"`.',
        "3.8",
        "3.11",
        "we dropped everything below 3.11",
    ),
    (
        "Which Java toolchain do I set in build.gradle?",
        "Use `languageVersion = JavaLanguageVersion.of({v})`.",
        "17",
        "21",
        "the team moved to Java 21",
    ),
    (
        "What goes on the go directive in go.mod?",
        "Write `go {v}` on the go directive line.",
        "1.19",
        "1.22",
        "our builders have go 1.22",
    ),
    (
        "Which Ruby version goes in .ruby-version?",
        "Put `{v}` in `.ruby-version`, then run `bundle install`.",
        "3.1.4",
        "3.3.0",
        "production is on ruby 3.3.0",
    ),
    (
        "What Postgres image tag should the compose file use?",
        "Use `image: postgres:{v}` for the db service.",
        "14",
        "16",
        "the managed database is postgres 16",
    ),
    (
        "Which Terraform version do I pin?",
        'Set `required_version = "~> {v}"` in the terraform block.',
        "1.3",
        "1.7",
        "the state was written by terraform 1.7",
    ),
    (
        "What Kubernetes version should the kind cluster use?",
        "Create it with `--image kindest/node:v{v}`.",
        "1.27.3",
        "1.29.2",
        "match prod, it's 1.29.2",
    ),
    (
        "Which Rust edition goes in Cargo.toml?",
        'Set `edition = "{v}"` under [package].',
        "2018",
        "2021",
        "we're on the 2021 edition",
    ),
    (
        "What Python image should the Dockerfile start from?",
        "Start with `FROM python:{v}-slim`.",
        "3.9",
        "3.12",
        "the app needs python 3.12",
    ),
]

PATHS = [
    (
        "Where do I change the log level?",
        "Edit `{v}` and set the level to DEBUG.",
        "config/logging.yaml",
        "settings/base.py",
        "our settings live in settings/base.py",
    ),
    (
        "Where are the database migrations?",
        "They are in `{v}`; add a new file there.",
        "migrations/",
        "db/migrate/",
        "it's a rails app, look in db/migrate/",
    ),
    (
        "Where should I put the environment variables for local runs?",
        "Put them in `{v}`; it is git-ignored.",
        ".env",
        ".env.local",
        "we use .env.local, .env is committed",
    ),
    (
        "Which file configures the linters?",
        "The rules are in `{v}`.",
        ".eslintrc.json",
        "eslint.config.js",
        "we moved to the flat config, eslint.config.js",
    ),
    (
        "Where is the CI pipeline defined?",
        "It is defined in `{v}`.",
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        "this is on gitlab, .gitlab-ci.yml",
    ),
    (
        "Where do the unit tests live?",
        "They live under `{v}`; mirror the module path.",
        "tests/unit/",
        "src/__tests__/",
        "tests are colocated in src/__tests__/",
    ),
    (
        "Where do I set the API base URL for the frontend?",
        "Set it in `{v}`.",
        "src/config.ts",
        "public/runtime-config.json",
        "it's read at runtime from public/runtime-config.json",
    ),
    (
        "Which file holds the nginx site config?",
        "Edit `{v}` and reload nginx.",
        "/etc/nginx/nginx.conf",
        "/etc/nginx/sites-available/app.conf",
        "the site is in sites-available/app.conf",
    ),
]

# Plain errors the model could have avoided: the correction names the problem, not the answer.
# (question, answer template {v}, wrong, right, correction, label)
ERRORS = [
    (
        "Extract backup.tar.gz here.",
        "Run `tar {v} backup.tar.gz`.",
        "-czf",
        "-xzf",
        "that creates an archive",
        "wrong flag",
    ),
    ("List files newest first.", "Run `ls -l{v}`.", "S", "t", "that sorts by size", "wrong flag"),
    (
        "Copy the assets folder to /srv/www.",
        "Run `cp {v} assets /srv/www/`.",
        "-v",
        "-r",
        "it says omitting directory",
        "wrong flag",
    ),
    (
        "Copy app.log from the server on port 2222 with scp.",
        "Run `scp {v} 2222 host:app.log .`.",
        "-p",
        "-P",
        "that didn't use the port",
        "wrong flag",
    ),
    (
        "Follow redirects when downloading with curl.",
        "Run `curl {v} -O https://example.org/file`.",
        "-I",
        "-L",
        "that only fetched the headers",
        "wrong flag",
    ),
    ("Sort the numbers in sizes.txt.", "Run `sort {v} sizes.txt`.", "-r", "-n", "10 comes before 9", "wrong flag"),
    (
        "Show the rsync changes without copying anything.",
        "Run `rsync -av{v} src/ dst/`.",
        "z",
        "n",
        "it actually copied the files",
        "wrong flag",
    ),
    (
        "Read config.json into a string with pathlib.",
        "Use `Path('config.json').{v}()`.",
        "read",
        "read_text",
        "AttributeError on that",
        "wrong API",
    ),
    (
        "Make the folder out/data and its parents, even if it exists.",
        "Call `os.makedirs('out/data', {v})`.",
        "parents=True",
        "exist_ok=True",
        "TypeError: unexpected keyword",
        "wrong API",
    ),
    (
        "Check whether the string has a digit anywhere with re.",
        "Use `re.{v}(r'\\d', text)`.",
        "match",
        "search",
        "it misses 'abc1'",
        "wrong API",
    ),
    (
        "Write the dict to data.json.",
        "Use `json.{v}(data, fh)` with the file open for writing.",
        "dumps",
        "dump",
        "that returned a string and wrote nothing",
        "wrong API",
    ),
    (
        "Get the current UTC time in Python.",
        "Use `datetime.now({v})`.",
        "",
        "timezone.utc",
        "that gives local time",
        "wrong API",
    ),
    (
        "Fail the script when the subprocess fails.",
        "Call `subprocess.run(cmd, {v})`.",
        "shell=True",
        "check=True",
        "it kept going after the error",
        "wrong API",
    ),
    (
        "Delete all stopped Docker containers.",
        "Run `docker container {v}`.",
        "rm -a",
        "prune",
        "unknown shorthand flag",
        "wrong command",
    ),
    (
        "Undo my last commit but keep the changes.",
        "Run `git reset {v} HEAD~1`.",
        "--hard",
        "--soft",
        "that threw my changes away",
        "wrong flag",
    ),
    (
        "Show the git log one line per commit.",
        "Run `git log {v}`.",
        "--short",
        "--oneline",
        "unrecognized argument",
        "wrong flag",
    ),
]

# Retries: the same message re-sent; the second answer is the one the user kept.
RETRIES = [
    (
        "Count the lines in every .py file under src.",
        "Run `{v}`.",
        "wc -l src/*.py",
        "find src -name '*.py' | xargs wc -l",
    ),
    ("Find which process listens on port 8080.", "Run `{v}`.", "ps aux | grep 8080", "lsof -i :8080"),
    (
        "Select the ten newest orders in SQL.",
        "Use `{v}`.",
        "SELECT * FROM orders LIMIT 10",
        "SELECT * FROM orders ORDER BY created_at DESC LIMIT 10",
    ),
    ("Match an ISO date like 2024-05-01 with a regex.", "Use `{v}`.", "\\d+-\\d+-\\d+", "\\d{4}-\\d{2}-\\d{2}"),
    ("Show disk usage of each folder here, human readable.", "Run `{v}`.", "df -h", "du -sh */"),
    (
        "Replace foo with bar in every .md file in place.",
        "Run `{v}`.",
        "sed 's/foo/bar/g' *.md",
        "sed -i 's/foo/bar/g' *.md",
    ),
    ("Print the value of the PATH variable.", "Run `{v}`.", "echo PATH", "echo $PATH"),
    ("Create a Python virtual environment in .venv.", "Run `{v}`.", "python -m venv", "python -m venv .venv"),
    ("Kill the process with PID 4242 forcefully.", "Run `{v}`.", "kill 4242", "kill -9 4242"),
    (
        "Show the last 50 lines of app.log and keep following it.",
        "Run `{v}`.",
        "tail -50 app.log",
        "tail -n 50 -f app.log",
    ),
    ("Find files bigger than 100 MB under /var.", "Run `{v}`.", "find /var -size 100M", "find /var -size +100M"),
    ("Make deploy.sh executable.", "Run `{v}`.", "chmod 644 deploy.sh", "chmod +x deploy.sh"),
]

# Undos: the user took the exchange back and asked something else; the accepted answer answers that.
# (first question, its answer, the new question, its answer)
UNDOS = [
    (
        "Show me the running containers.",
        "Run `docker ps`.",
        "Show me all containers, stopped ones too.",
        "Run `docker ps -a`.",
    ),
    (
        "How big is this folder?",
        "Run `du -sh .`.",
        "How big is each subfolder, largest last?",
        "Run `du -sh */ | sort -h`.",
    ),
    ("List the branches.", "Run `git branch`.", "List the remote branches too.", "Run `git branch -a`."),
    ("Show the open ports.", "Run `ss -tln`.", "Show which program owns each open port.", "Run `sudo ss -tlnp`."),
    ("Print the Python version.", "Run `python --version`.", "Print where that Python lives.", "Run `which python`."),
    (
        "Count the files here.",
        "Run `ls | wc -l`.",
        "Count the files here including hidden ones.",
        "Run `ls -A | wc -l`.",
    ),
    ("Show my git config.", "Run `git config --list`.", "Show only my git user name.", "Run `git config user.name`."),
    (
        "Show the environment variables.",
        "Run `env`.",
        "Show only the variables with PROXY in the name.",
        "Run `env | grep -i proxy`.",
    ),
    (
        "Check the nginx syntax.",
        "Run `sudo nginx -t`.",
        "Reload nginx without dropping connections.",
        "Run `sudo systemctl reload nginx`.",
    ),
    (
        "Show the pip packages.",
        "Run `pip list`.",
        "Show only the outdated pip packages.",
        "Run `pip list --outdated`.",
    ),
]


def conversation(question: str) -> list[dict]:
    return [{"role": "system", "content": next(SYSTEMS)}, {"role": "user", "content": question}]


def pair(kind: str, label: str, said: str, prompt: list[dict], rejected: str, accepted: str) -> dict:
    body = json.dumps([prompt, rejected, accepted], sort_keys=True)
    return {
        "uid": hashlib.md5(body.encode()).hexdigest(),
        "kind": kind,
        "label": label,
        "user_said": said,
        "prompt": prompt,
        "rejected": rejected,
        "accepted": accepted,
        "platform": "cli",
        "scrubbed": {},
        "created_at": "2026-11-20T10:00:00Z",
    }


def manager_pairs() -> list[dict]:
    out, said = [], cycle(MANAGER_SAID)
    for wrong, right, pkgs, script in MANAGER_SWAPS:
        w, r = MANAGERS[wrong], MANAGERS[right]
        for i, (question, answer) in enumerate(MANAGER_TASKS):
            slots = {"pkg": pkgs[i], "script": script}

            def fill(m, q=answer, s=slots):
                return q.format(install=m[0], add=m[1], run=m[2], remove=m[3], **s)

            text = next(said).format(right=right, wrong=wrong, lock=r[4])
            out.append(
                pair(
                    "correction",
                    "wrong package manager",
                    text,
                    conversation(question.format(**slots)),
                    fill(w),
                    fill(r),
                )
            )
    return out


def slot_pairs(rows, label: str) -> list[dict]:
    return [
        pair("correction", label, said, conversation(q), a.format(v=wrong), a.format(v=right))
        for q, a, wrong, right, said in rows
    ]


def error_pairs() -> list[dict]:
    return [
        pair("correction", label, said, conversation(q), a.format(v=wrong).replace("(, ", "("), a.format(v=right))
        for q, a, wrong, right, said, label in ERRORS
    ]


def retry_pairs() -> list[dict]:
    return [
        pair("retry", "retried answer", q, conversation(q), a.format(v=w), a.format(v=r)) for q, a, w, r in RETRIES
    ]


def undo_pairs() -> list[dict]:
    return [pair("undo", "undone answer", new_q, conversation(q), a, new_a) for q, a, new_q, new_a in UNDOS]


def main() -> None:
    pairs = (
        manager_pairs()
        + slot_pairs(VERSIONS, "wrong version")
        + slot_pairs(PATHS, "wrong path")
        + error_pairs()
        + retry_pairs()
        + undo_pairs()
    )
    for old in HERE.glob("ichor-g-*.jsonl"):
        old.unlink()
    for p in pairs:
        (HERE / f"ichor-g-{p['uid']}.jsonl").write_text(json.dumps(p, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(pairs)} generated pairs in {HERE}")


if __name__ == "__main__":
    main()
