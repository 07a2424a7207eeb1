"""Scrubber against its peers, side by side in one run on the same generated corpora.

Tools: ichor's scrubber; gitleaks' default catalogue alone (ichor's converted rows of it, applied by themselves);
detect-secrets 1.5.0 (every default plugin, in-memory ``scan_line``); scrubadub 2.0.1 (default detectors).

Eight corpora, reported apart:
- in-sample (bench/corpus.py): ≥ 1 MB of chat text with fake secrets and PII of every kind ichor knows, plus
  generated near-misses. Its templates were written next to ichor's rules, so it says what the rules do on the
  shapes they were written for, not how they generalise.
- held-out v1, misses examined (bench/corpus_heldout.py): realistic multi-line pastes (.env, .npmrc,
  kubeconfig, docker-compose, curl, SDK snippets, stack traces, shell prompts...), written before ichor was
  measured on them. Its misses (a password in a Markdown table cell, a --requirepass value as the next element
  of a JSON array) were then examined and their classes fixed, so it no longer measures how the rules
  generalise: read its figure as a regression check.
- blind v1, misses examined (bench/corpus_blind.py): 300 pastes of 74 shapes by an engineer who never read the
  scrubber, its rules or the corpora above. Measured once (removed 0.932, kept 0.960: the honest figure), then
  its misses and over-scrubbed near-misses were examined and their classes fixed, so like held-out v1 it is now a
  regression check, not a measure of how the rules generalise.
- blind v2, misses examined (bench/corpus_blind2.py): 300 pastes of 66 shapes by another engineer who read
  neither the scrubber nor any corpus above, written while blind v1's misses were being fixed and measured once
  after that (removed 0.941, kept 0.985: the honest figure). Its misses and over-scrubbed near-misses were then
  examined and their classes fixed, so it too is now a regression check, not a measure of how the rules
  generalise.
- blind v3, misses examined (bench/corpus_blind3.py): 300 pastes of 57 shapes by a third engineer who read
  neither the scrubber nor any corpus above, written while blind v2's misses were being fixed and measured once
  after that (removed 0.960, kept 1.0: the honest figure); its misses were then examined and their classes
  fixed, so it is a regression check.
- blind v4, misses examined (bench/corpus_blind4.py): 300 pastes of 49 shapes by a fourth engineer who read
  neither the scrubber nor any corpus above, written while blind v3's misses were being fixed and measured once
  after that (removed 0.952, kept 0.955: the honest figure). Its misses and over-scrubbed near-misses were then
  examined and their classes fixed, so it too is now a regression check, not a measure of how the rules
  generalise.
- blind v5, misses examined (bench/corpus_blind5.py): 300 pastes of 62 shapes by a fifth engineer who read
  neither the scrubber nor any corpus above, written while blind v4's misses were being fixed and measured once
  after that (removed 0.816, kept 0.958: the honest figure; 0.872 and 0.982 with people's names and bare IPs set
  aside). Its misses and over-scrubbed near-misses were then examined and their classes fixed, so it too is now a
  regression check, not a measure of how the rules generalise. Its writer was asked to keep IP addresses and to
  plant people's names in prose (``person_name``): ichor removes every IP and no names by design
  (docs/security.md), so beside the plain figures the run also reports kept without the bare IP addresses and
  removed without ``person_name``.
- blind v6 (bench/corpus_blind6.py): pastes of 54 shapes by a sixth engineer who read neither the scrubber nor
  any corpus above, told that names and IPs are out of scope, written while blind v5's misses were being fixed;
  measured once, nothing changed for it.
Every paste figure has n and a 95% Wilson interval.

An item counts as removed when its text no longer appears in the output. detect-secrets only detects, so it is
credited when it flags any secret on a line the item sits on (lenient) and, stricter, when a flagged value
overlaps the item. Also measured: throughput, per-message latency (p50/p99) and the worst time on 50,000
characters of hostile text.

    python -m bench.bench_scrub [--size 1100000] [--seed 0] [--pastes 260]
"""

from __future__ import annotations

import argparse
import bisect
import random
import time
from collections import Counter
from dataclasses import dataclass
from types import ModuleType

from . import (
    corpus,
    corpus_blind,
    corpus_blind2,
    corpus_blind3,
    corpus_blind4,
    corpus_blind5,
    corpus_blind6,
    corpus_heldout,
    write_result,
)


@dataclass
class ScrubBenchConfig:
    size: int = 1_100_000
    seed: int = 0
    near_misses_per_category: int = 40
    pastes: int = 260
    blind_pastes: int = 300


def wilson(hits: int, n: int, z: float = 1.96) -> list[float] | None:
    """The 95% Wilson score interval of hits/n."""
    if n == 0:
        return None
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def _share(hits: int, n: int) -> dict:
    return {"share": round(hits / n, 4) if n else None, "n": n, "wilson95": wilson(hits, n)}


def _recall(caught: list[tuple[str, bool]]) -> dict[str, float]:
    total, hit = Counter(), Counter()
    for kind, ok in caught:
        total[kind] += 1
        hit[kind] += ok
    return {kind: round(hit[kind] / total[kind], 4) for kind in sorted(total)}


def run_ichor(text: str, found: list[corpus.Embedded], near: list[str]) -> dict:
    from ichor.scrub import scrub

    start = time.perf_counter()
    out = scrub(text).text
    seconds = time.perf_counter() - start
    return {
        "seconds": round(seconds, 3),
        "mb_per_s": round(len(text.encode()) / seconds / 1e6, 3),
        "recall": _recall([(e.kind, e.secret not in out) for e in found]),
        "near_miss_untouched": round(sum(scrub(s).text == s for s in near) / len(near), 4),
    }


def _catalogue_scrub(text: str) -> str:
    from ichor import scrub as scrubber

    rules = tuple(
        rule
        for rule, row in zip(scrubber.CATALOGUE_RULES, scrubber.CATALOGUE_ROWS, strict=True)
        if row.source == "gitleaks"
    )
    return scrubber._apply(text, rules).text


def run_catalogue(text: str, found: list[corpus.Embedded], near: list[str]) -> dict:
    start = time.perf_counter()
    out = _catalogue_scrub(text)
    seconds = time.perf_counter() - start
    return {
        "what": "gitleaks default catalogue alone: ichor's converted rows of it, applied by themselves",
        "seconds": round(seconds, 3),
        "mb_per_s": round(len(text.encode()) / seconds / 1e6, 3),
        "recall": _recall([(e.kind, e.secret not in out) for e in found]),
        "near_miss_untouched": round(sum(_catalogue_scrub(s) == s for s in near) / len(near), 4),
    }


def _detect_secrets_lines(lines: list[str]) -> list[list[str]]:
    """The flagged secret values per line, with every default detect-secrets plugin.

    ``scan_line`` yields every candidate; like ``detect-secrets scan --string`` we keep those its plugin
    reports as "True" (for the high-entropy plugins: above their entropy limit).
    """
    from detect_secrets.core.plugins.initialize import from_secret_type
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    plugins = {}

    def reported(secret) -> bool:
        if secret.type not in plugins:
            plugins[secret.type] = from_secret_type(secret.type)
        return plugins[secret.type].format_scan_result(secret).startswith("True")

    with default_settings():
        return [[s.secret_value or "" for s in scan_line(line) if reported(s)] for line in lines]


def run_detect_secrets(text: str, found: list[corpus.Embedded], near: list[str]) -> dict:
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    start = time.perf_counter()
    flagged = _detect_secrets_lines(lines)
    seconds = time.perf_counter() - start

    lenient, strict = [], []
    for e in found:
        first, last = bisect.bisect_right(starts, e.start) - 1, bisect.bisect_right(starts, e.end - 1) - 1
        values = [v for i in range(first, last + 1) for v in flagged[i]]
        lenient.append((e.kind, bool(values)))
        strict.append(
            (
                e.kind,
                any(v and (v in e.secret or e.secret in v) for v in values)
                or (e.kind == "private_key" and bool(values)),
            )
        )
    near_flags = _detect_secrets_lines(near)
    return {
        "seconds": round(seconds, 3),
        "mb_per_s": round(len(text.encode()) / seconds / 1e6, 3),
        "recall": _recall(lenient),
        "recall_value_overlap": _recall(strict),
        "near_miss_untouched": round(sum(not f for f in near_flags) / len(near), 4),
    }


def run_scrubadub(text: str, found: list[corpus.Embedded], near: list[str]) -> dict:
    try:
        import scrubadub
    except ImportError as exc:  # optional peer: say so in the results instead of failing the bench
        return {"error": f"scrubadub not importable: {exc}"}
    scrubber = scrubadub.Scrubber()
    start = time.perf_counter()
    out = scrubber.clean(text)
    seconds = time.perf_counter() - start
    return {
        "version": scrubadub.__version__,
        "detectors": sorted(scrubber._detectors),
        "seconds": round(seconds, 3),
        "mb_per_s": round(len(text.encode()) / seconds / 1e6, 3),
        "recall": _recall([(e.kind, e.secret not in out) for e in found]),
        "near_miss_untouched": round(sum(scrubber.clean(s) == s for s in near) / len(near), 4),
    }


def overall(text: str, found: list[corpus.Embedded], near: list[str]) -> dict:
    """ichor's removed share over every planted item and kept share over every near-miss, with intervals."""
    from ichor.scrub import scrub

    out = scrub(text).text
    removed = sum(e.secret not in out for e in found)
    kept = sum(scrub(s).text == s for s in near)
    return {"removed": _share(removed, len(found)), "near_misses_kept": _share(kept, len(near))}


def _is_ip(value: str) -> bool:
    """Is a near-miss a bare IP address (which ichor removes by design, whatever a corpus asks)?"""
    import ipaddress

    try:
        ipaddress.ip_address(value.strip())
    except ValueError:
        return False
    return True


def _heldout_tool(pastes: list[corpus_heldout.Paste], clean) -> dict:
    by_kind: dict[str, list[int]] = {}
    by_shape: dict[str, list[int]] = {}
    kept = kept_n = 0
    kept_not_ip = [0, 0]
    for paste in pastes:
        out = clean(paste.text)
        for kind, value in paste.must_go:
            hit = value not in out
            by_kind.setdefault(kind, [0, 0])
            by_kind[kind][0] += hit
            by_kind[kind][1] += 1
            by_shape.setdefault(paste.shape, [0, 0])
            by_shape[paste.shape][0] += hit
            by_shape[paste.shape][1] += 1
        for value in paste.must_stay:
            kept += value in out
            kept_n += 1
            if not _is_ip(value):
                kept_not_ip[0] += value in out
                kept_not_ip[1] += 1
    removed = sum(h for h, _ in by_kind.values())
    total = sum(n for _, n in by_kind.values())
    names = by_kind.get("person_name", [0, 0])
    return {
        "removed": _share(removed, total),
        "kept": _share(kept, kept_n),
        "removed_without_person_names": _share(removed - names[0], total - names[1]),
        "kept_without_ip_addresses": _share(*kept_not_ip),
        "removed_by_kind": {k: _share(h, n) for k, (h, n) in sorted(by_kind.items())},
        "removed_by_shape": {k: _share(h, n) for k, (h, n) in sorted(by_shape.items())},
    }


def _detect_secrets_clean(text: str) -> str:
    """detect-secrets as a redactor, leniently: every line it flags is dropped whole."""
    lines = text.split("\n")
    flagged = _detect_secrets_lines(lines)
    return "\n".join("" if f else line for line, f in zip(lines, flagged, strict=True))


HELDOUT_V1 = (
    "held-out v1, misses examined: multi-line pastes written before ichor was measured on them; the classes "
    "behind its misses were fixed after examining them, so this is a regression check, not a measure of "
    "generalisation; removed = the item's text is gone"
)


@dataclass(frozen=True)
class BlindCorpus:
    """A paste corpus written by someone who never read the scrubber, measured once before its misses were read."""

    key: str  # its entry in the results
    name: str
    module: ModuleType
    measured_once: dict | None = None  # ichor's figure then, once its misses have been examined; None before

    @property
    def what(self) -> str:
        written = "pastes written by an engineer who never read the scrubber, its rules or the other corpora"
        gone = "removed = the item's text is gone"
        if self.measured_once is None:
            return (
                f"{self.name}: {written}, measured once; nothing in the scrubber may change for what it misses; {gone}"
            )
        removed, kept = self.measured_once["removed"], self.measured_once["kept"]
        return (
            f"{self.name}, misses examined: {written}; measured once (removed {removed['share']} "
            f"{removed['wilson95']} n={removed['n']}, kept {kept['share']} {kept['wilson95']} n={kept['n']}), then "
            f"the classes behind its misses were fixed, so this is a regression check, not a measure of "
            f"generalisation; {gone}"
        )

    @property
    def target(self) -> str:
        return self.name.replace(" ", "_") + ("_misses_examined" if self.measured_once else "")


def _once(removed: tuple[float, int, list[float]], kept: tuple[float, int, list[float]]) -> dict:
    return {name: {"share": v[0], "n": v[1], "wilson95": v[2]} for name, v in (("removed", removed), ("kept", kept))}


BLIND_CORPORA = (
    BlindCorpus("blind", "blind v1", corpus_blind, _once((0.932, 929, [0.914, 0.947]), (0.960, 620, [0.941, 0.973]))),
    BlindCorpus(
        "blind_v2", "blind v2", corpus_blind2, _once((0.941, 1109, [0.925, 0.953]), (0.985, 601, [0.972, 0.992]))
    ),
    BlindCorpus("blind_v3", "blind v3", corpus_blind3, _once((0.960, 624, [0.942, 0.973]), (1.0, 501, [0.992, 1.0]))),
    BlindCorpus(
        "blind_v4", "blind v4", corpus_blind4, _once((0.952, 457, [0.928, 0.968]), (0.955, 403, [0.931, 0.972]))
    ),
    BlindCorpus(
        "blind_v5", "blind v5", corpus_blind5, _once((0.816, 1383, [0.794, 0.835]), (0.958, 1581, [0.947, 0.967]))
    ),
    BlindCorpus("blind_v6", "blind v6", corpus_blind6),
)


def run_heldout(config: ScrubBenchConfig) -> dict:
    return run_pastes(corpus_heldout, config.seed + 1, config.pastes, HELDOUT_V1)


def run_blind(blind: BlindCorpus, config: ScrubBenchConfig) -> dict:
    """Every tool on a blind corpus, with ichor's once-measured figure beside it when there is one."""
    measured = run_pastes(blind.module, config.seed, config.blind_pastes, blind.what)
    once = {"ichor_measured_once": blind.measured_once} if blind.measured_once else {}
    return {**measured, "name": blind.name, "corpus": f"bench/{blind.module.__name__.rsplit('.', 1)[-1]}.py", **once}


def run_pastes(module, seed: int, n: int, what: str) -> dict:
    """Every tool on the pastes of a paste corpus (``generate(seed, n)``, ``SHAPES``), per kind and shape."""
    from ichor.scrub import scrub

    pastes = module.generate(seed=seed, n=n)
    return {
        "what": what,
        "seed": seed,
        "pastes": len(pastes),
        "shapes": sorted(module.SHAPES),
        "tools": {
            "ichor": _heldout_tool(pastes, lambda t: scrub(t).text),
            "gitleaks-catalogue": _heldout_tool(pastes, _catalogue_scrub),
            "ichor-then-gitleaks-catalogue": _heldout_tool(pastes, lambda t: _catalogue_scrub(scrub(t).text)),
            "detect-secrets (flagged lines dropped)": _heldout_tool(pastes, _detect_secrets_clean),
        },
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(config: ScrubBenchConfig, messages: int = 2000) -> dict:
    """Per-message time, as the capture path pays it: chat messages of 1 to 12 chunks of the in-sample corpus."""
    from ichor.scrub import scrub

    rng = random.Random(config.seed + 2)
    text, _ = corpus.generate_spans(config.seed + 2, 400_000)
    chunks = text.split("\n")
    times = []
    for _ in range(messages):
        message = "\n".join(rng.choice(chunks) for _ in range(rng.randint(1, 12)))
        start = time.perf_counter()
        scrub(message)
        times.append((time.perf_counter() - start) * 1000)
    return {
        "messages": messages,
        "p50_ms": round(_percentile(times, 0.5), 3),
        "p99_ms": round(_percentile(times, 0.99), 3),
    }


HOSTILE_N = 50_000


def hostile_texts() -> dict[str, str]:
    """50,000 characters each of text built to make a scrubber backtrack or rescan."""
    n = HOSTILE_N
    return {
        "letters": "a" * n,
        "digits": "1" * n,
        "digit-groups": "4242 " * (n // 5),
        "digit-groups-random": " ".join(f"{(i * 7919) % 10000:04d}" for i in range(n // 5))[:n],
        "zero-groups": " ".join(f"0{(i * 7919) % 1000:03d}" for i in range(n // 5))[:n],
        "assignments": 'API_KEY="' * (n // 9),
        "nested-assignments": "token=$x=" * (n // 9),
        "password-colon": "password: " * (n // 10),
        "urls": "a://b:c@" * (n // 8),
        "url-no-at": "x://u:" + "p" * n,
        "at-signs": "a@b" * (n // 3),
        "prompts": "u@h:~$ " * (n // 7),
        "begin": "-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32),
        "putty": "PuTTY-User-Key-File-2: " * (n // 23),
        "keywords": "glpat- npm_ SG. dapi xoxb- twitter= adafruit: sk_live_ " * (n // 56),
        "named": ("adafruit " * 10 + "= ") * (n // 92),
        "cli": "mysql -p " * (n // 9),
        "home": "/mnt/c/Users/" * (n // 13),
        "mixed": "sk-proj- ghp_ a@b. 1.2.3. +1 (555) ::1 /home/ KEY= Bearer eyJ. 06 12 " * (n // 70),
        # Each a real match or a validated candidate every few characters: per-match work, and a second pass
        # over text that the placeholders have made up to three times longer.
        "curl-users": "-u a:" * (n // 5),
        "names-colon": "token: a1" * (n // 9),
        "names-tab": "pass\t=\t" * (n // 7),
        "key-eq": "key=" * (n // 4),
        "single-quoted": "password='" * (n // 10),
        "ibans": "DE44 5001 0517 5407 3249 31 " * (n // 28),
        "ssns": "123-45-6789 " * (n // 12),
        "cards": "4111 1111 1111 1112 " * (n // 20),
        # A real match of every other finder every few characters, and text that is already scrubbed.
        "ipv4": "10.1.2.3 " * (n // 9),
        "ipv6": "fe80::1:2:3 " * (n // 12),
        "url-empty-users": "a://:" * (n // 5),
        "emails": "a@b.co " * (n // 7),
        "bearer": "Bearer abcdefghijklmnop1 " * (n // 25),
        "aws-secrets": "aws wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz " * (n // 45),
        "env-values": "PASSWORD=abc1234! " * (n // 18),
        "env-values-dense": "".join(f"pw=a{i:05d} " for i in range(n // 10)),  # the most matches 50k can hold
        "named-values": "twitter_secret = abcdefghij0123456789abcdefghij01 " * (n // 51),
        "scrubbed": "password = [REDACTED:env_secret] " * (n // 33),
        "placeholders": "[REDACTED:openai_key]:" * (n // 22),
        "table-cells": "| password | " * (n // 13),
        "table-values": "| password | Xy7abc9! |\n" * (n // 24),
        "flag-array": '["--password", ' * (n // 15),
        "option-values": "redis-server --requirepass Xy7abc9q " * (n // 36),
        "elements": "<password>Xy7abc9q</password>" * (n // 30),
        "name-value-fields": "- name: DB_PASSWORD\n  value: Xy7abc9q!\n" * (n // 40),
        "spaced-lines": "password Xy7abc9q!\n" * (n // 19),
        "cookies": "Cookie: sid=Xy7abc9q1234abcd; " * (n // 30),
        "authorization": "Authorization: Token Xy7abc9q1234abcd\n" * (n // 38),
        "pgpass-lines": "db:5432:app:bob:Xy7abc9q!\n" * (n // 26),
        "colons": "a:1:" * (n // 4),
        "url-token-users": "https://Xy7abc9q1234abcdef@h/ " * (n // 29),
        "piped-secrets": "echo Xy7abc9q | login --password-stdin " * (n // 40),
        "triple-quotes": 'password = """' * (n // 14),
        "yaml-blocks": "password: |\n  " * (n // 15),
        "calls": 'set_password("Xy7abc9q!") ' * (n // 27),
        "tilde-homes": "~a/" * (n // 3),
        "zsh-prompts": "a@b ~ % \n" * (n // 9),
        # Secrets given by a keyword, a directive, a file's column or a sentence; values that start like templates.
        "sql-passwords": _repeat("CREATE USER u IDENTIFIED BY 'Xy7abc9q!'; ALTER ROLE r PASSWORD 'Xy7abc9q!';\n", n),
        "header-directives": _repeat("proxy_set_header X-Api-Key Xy7abc9q1234abcd;\n", n),
        "secure-strings": _repeat('ConvertTo-SecureString "Xy7abc9q!" -AsPlainText ', n),
        "auth-blobs": _repeat('"auth": "dXNlcjpYeTdhYmM5cSE=", ', n),
        "cookie-jars": _repeat(".a.io\tTRUE\t/\tTRUE\t1767225600\tsid\tXy7abc9q1234abcd\n", n),
        "prose-passwords": _repeat("the password is Xy7abc9q! and login is admin / Xy7abc9q! ", n),
        "escaped-json": _repeat('\\"API_TOKEN\\": \\"Xy7abc9q1234\\", ', n),
        "graphql-types": _repeat("($password: String!, $token: [ID!]!) ", n),
        "bracketed-values": _repeat("PASSWORD=<Cedar>6111 SECRET={Xy7abc}#58 KEY=<random 64 hex chars> ", n),
        "zsh-folder-prompts": _repeat("priya@devbox api % ls\n", n),
        # A user and a password as a call's literals, secret-named lists, passphrases, brace-led values, switch
        # clusters before -u, runs shaped like a Discord bot token's first part, userinfo names, prose then a colon,
        # cookie strings after their name.
        "login-calls": _repeat('login("a", "b", ', n),
        "secret-lists": _repeat('api_key = ["Xy7abc9q1", ', n),
        "passphrases": _repeat("password: maple.pepper.summer\n", n),
        "braces": _repeat("password: {KsKeRZyjtbgUF}\n", n),
        "switch-clusters": _repeat("curl -su a:b ", n),
        "dotted-runs": _repeat("M" * 24 + ".abcdef.", n),
        "userinfo": _repeat("basic.auth.user.info=K1:Xy7abc9q1 ", n),
        "info-colons": _repeat("info: ", n),
        "prose-colons": _repeat("the password for the staging box: Xy7abc9q! ", n),
        "prose-words": _repeat("password a b c d e f g ", n),
        "cookie-strings": _repeat("document.cookie = 'sid=Xy7abc9q1234abcd; a=b'\n> document.cookie\n'", n),
        # A user name learned from paths and prompts and looked for everywhere else (many names, one name very
        # often), client constructors' literals, long call literals, key ids, long national groups after "+".
        "learned-users": "".join(f"/home/user{i:05d}/ user{i:05d} " for i in range(n // 26))[:n],
        "learned-user-repeated": _repeat("/home/priya/ priya ", n),
        "client-calls": _repeat("Client('a', 'b', ", n),
        "client-secrets": _repeat(
            "Client('AC42c862d0fa069de9212bcdc79fc0d9f4', 'cdc9fb9d5b1dee927a7c0a45f2351750')\n", n
        ),
        "call-literal-open": _repeat("('token', '", n),
        "key-ids": _repeat('"private_key_id": "d437bfe5bdddb32e430cf7c3d195983a0402aae6",\n', n),
        "phone-long-groups": _repeat("+91 9858844080 ", n),
        # National phone numbers: each distinct candidate may cost libphonenumber one parse per region.
        "national-phones": "07700 900123\n" * (n // 13),
        **_distinct_numbers(n),
    }


def _repeat(unit: str, n: int) -> str:
    """``unit`` repeated to at most ``n`` characters."""
    return unit * (n // len(unit))


def _distinct_numbers(n: int) -> dict[str, str]:
    """Numbers that pass their validator's cheap checks, all different, so no answer can be reused."""
    from stdnum import iban, luhn

    rng = random.Random(7)

    def digits(k: int) -> str:
        return "".join(rng.choice("0123456789") for _ in range(k))

    def fill(make) -> str:
        parts: list[str] = []
        while sum(map(len, parts)) < n:
            parts.append(make())
        return "".join(parts)[:n]

    def an_iban() -> str:
        bban = digits(18)
        number = "DE" + iban.calc_check_digits("DE00" + bban) + bban
        return " ".join(number[i : i + 4] for i in range(0, 22, 4)) + " "

    def a_card() -> str:
        body = "4" + digits(14)
        number = body + luhn.calc_check_digit(body)
        return " ".join(number[i : i + 4] for i in range(0, 16, 4)) + " "

    return {
        "national-phones-distinct": fill(lambda: f"0{digits(3)} {digits(6)}, "),
        "ssns-distinct": fill(lambda: f"{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)} "),
        "ibans-distinct": fill(an_iban),
        "cards-distinct": fill(a_card),
    }


HOSTILE_REPEATS = 5


def hostile() -> dict:
    """Each hostile text's best time of HOSTILE_REPEATS runs: the scrubber's cost, not the machine's other load.

    The runs are rounds over every text, not one text's runs back to back, so a slow spell of a shared machine
    (it lasts seconds) costs a text one of its runs, not all of them."""
    from ichor.scrub import scrub

    texts = hostile_texts()
    best = dict.fromkeys(texts, float("inf"))
    for _ in range(HOSTILE_REPEATS):
        for name, text in texts.items():
            start = time.perf_counter()
            scrub(text)
            best[name] = min(best[name], time.perf_counter() - start)
    times = {name: round(seconds * 1000, 2) for name, seconds in best.items()}
    worst = max(times, key=times.get)
    return {"chars": HOSTILE_N, "repeats": HOSTILE_REPEATS, "ms": times, "worst": worst, "worst_ms": times[worst]}


def compare(tools: dict) -> dict:
    ichor = tools["ichor"]
    peers = {name: r for name, r in tools.items() if name != "ichor" and "recall" in r}
    behind = {
        name: [k for k, r in ichor["recall"].items() if r < peer["recall"].get(k, 0.0)] for name, peer in peers.items()
    }
    from ichor.scrub import SECRET_KINDS

    ratio = ichor["mb_per_s"] / tools["detect-secrets"]["mb_per_s"]
    return {
        "throughput_ichor_over_detect_secrets": round(ratio, 1),
        **(
            {"throughput_ichor_over_scrubadub": round(ichor["mb_per_s"] / peers["scrubadub"]["mb_per_s"], 1)}
            if "scrubadub" in peers
            else {}
        ),
        "kinds_where_ichor_recall_is_below_a_peer": behind,
        "min_ichor_secret_recall": min(ichor["recall"][k] for k in SECRET_KINDS if k in ichor["recall"]),
        "min_ichor_recall_any_kind": min(ichor["recall"].values()),
        "targets": {
            "throughput_at_least_3x_detect_secrets": ratio >= 3,
            "recall_at_least_each_peer_on_every_kind": not any(behind.values()),
            "in_sample_removed_at_least_0.98_every_kind": all(r >= 0.98 for r in ichor["recall"].values()),
            "in_sample_near_misses_kept_at_least_0.97": ichor["near_miss_untouched"] >= 0.97,
        },
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=ScrubBenchConfig.size, help="corpus size in characters")
    parser.add_argument("--seed", type=int, default=ScrubBenchConfig.seed)
    parser.add_argument("--pastes", type=int, default=ScrubBenchConfig.pastes, help="held-out pastes")
    args = parser.parse_args(argv)
    config = ScrubBenchConfig(size=args.size, seed=args.seed, pastes=args.pastes)

    text, found = corpus.generate_spans(config.seed, config.size)
    rng = random.Random(config.seed)
    near = [
        corpus.near_miss(rng, c)
        for c in sorted(corpus.NEAR_MISS_FACTORIES)
        for _ in range(config.near_misses_per_category)
    ]
    tools = {}
    runs = (
        ("ichor", run_ichor),
        ("gitleaks-catalogue", run_catalogue),
        ("detect-secrets", run_detect_secrets),
        ("scrubadub", run_scrubadub),
    )
    for name, run in runs:
        print(f"scrub bench: {name} ...", flush=True)
        tools[name] = run(text, found, near)
    print("scrub bench: held-out pastes ...", flush=True)
    heldout = run_heldout(config)
    blinds = []
    for blind in BLIND_CORPORA:
        print(f"scrub bench: {blind.name} pastes ...", flush=True)
        blinds.append((blind, run_blind(blind, config)))
    result = {
        "corpus": {
            "bytes": len(text.encode()),
            "seed": config.seed,
            "items": dict(Counter(e.kind for e in found)),
            "near_misses": len(near),
        },
        "tools": tools,
        "overall_in_sample": overall(text, found, near),
        "heldout": heldout,
        **{blind.key: measured for blind, measured in blinds},
        "latency": latency(config),
        "hostile_50k": hostile(),
        **compare(tools),
    }
    result["targets"]["hostile_50k_under_50_ms"] = result["hostile_50k"]["worst_ms"] < 50
    for blind, measured in blinds:
        ichor = measured["tools"]["ichor"]
        result["targets"][f"{blind.target}_removed_at_least_0.98"] = ichor["removed"]["share"] >= 0.98
        result["targets"][f"{blind.target}_kept_at_least_0.97"] = ichor["kept"]["share"] >= 0.97
    out = write_result("scrub", result, "python -m bench.bench_scrub")
    print(
        f"ichor {tools['ichor']['mb_per_s']} MB/s, detect-secrets {tools['detect-secrets']['mb_per_s']} MB/s "
        f"({result['throughput_ichor_over_detect_secrets']}x); targets: {result['targets']} -> {out}"
    )
    return result


if __name__ == "__main__":
    main()
