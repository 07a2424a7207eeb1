"""Scrubber against its peers, side by side in one run on the same generated corpus.

ichor's scrubber, detect-secrets 1.5.0 (every default plugin, in-memory ``scan_line``) and scrubadub 2.0.1
(default detectors) each get the same ≥ 1 MB of chat text with fake secrets and PII of every kind ichor knows.
For each tool: throughput (MB/s) and recall per kind. For ichor a secret counts as caught when it no longer
appears in the output; detect-secrets only detects, so it is credited when it flags any secret on a line the
secret sits on ("flagged line", the lenient figure ichor is compared with) and, stricter, when a flagged value
overlaps the secret. scrubadub redacts, so it is judged like ichor. The generated near-misses (versions, SHAs,
UUIDs, ...) give each tool's rate of leaving harmless text alone.

    python -m bench.bench_scrub [--size 1100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import bisect
import random
import time
from collections import Counter
from dataclasses import dataclass

from . import corpus, write_result


@dataclass
class ScrubBenchConfig:
    size: int = 1_100_000
    seed: int = 0
    near_misses_per_category: int = 40


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
        "min_ichor_secret_recall": min(ichor["recall"][k] for k in SECRET_KINDS),
        "targets": {
            "throughput_at_least_3x_detect_secrets": ratio >= 3,
            "recall_at_least_each_peer_on_every_kind": not any(behind.values()),
            "secret_recall_at_least_0.98": all(ichor["recall"][k] >= 0.98 for k in SECRET_KINDS),
            "near_misses_untouched_at_least_0.95": ichor["near_miss_untouched"] >= 0.95,
        },
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=ScrubBenchConfig.size, help="corpus size in characters")
    parser.add_argument("--seed", type=int, default=ScrubBenchConfig.seed)
    args = parser.parse_args(argv)
    config = ScrubBenchConfig(size=args.size, seed=args.seed)

    text, found = corpus.generate_spans(config.seed, config.size)
    rng = random.Random(config.seed)
    near = [
        corpus.near_miss(rng, c)
        for c in sorted(corpus.NEAR_MISS_FACTORIES)
        for _ in range(config.near_misses_per_category)
    ]
    tools = {}
    for name, run in (("ichor", run_ichor), ("detect-secrets", run_detect_secrets), ("scrubadub", run_scrubadub)):
        print(f"scrub bench: {name} ...", flush=True)
        tools[name] = run(text, found, near)
    result = {
        "corpus": {
            "bytes": len(text.encode()),
            "seed": config.seed,
            "items": dict(Counter(e.kind for e in found)),
            "near_misses": len(near),
        },
        "tools": tools,
        **compare(tools),
    }
    out = write_result("scrub", result, "python -m bench.bench_scrub")
    print(
        f"ichor {tools['ichor']['mb_per_s']} MB/s, detect-secrets {tools['detect-secrets']['mb_per_s']} MB/s "
        f"({result['throughput_ichor_over_detect_secrets']}x); targets: {result['targets']} -> {out}"
    )
    return result


if __name__ == "__main__":
    main()
