"""Render ``docs/benchmarks.md`` from the merged results.

Known benchmarks get a section in a fixed order with a purpose-written table; any other benchmark, or
a known one whose figures don't have the expected shape, gets a generic table of its figures, so a new
or changed benchmark is always reported rather than dropped.
"""

from __future__ import annotations

from collections.abc import Callable

META_KEYS = ("bench", "command", "machine", "date")

# (section title, benchmark names whose results belong there, what the section answers)
SECTIONS = [
    ("Capture cost per Hermes turn", ("capture", "detect"),
     "Time ichor adds to one turn (detector + scrubber + store), p50 and p99, for typical turns and for "
     "50,000-character hostile text."),
    ("Plugin: time added to a real Hermes turn", ("plugin",),
     "The same Hermes turns through the real agent loop with and without the plugin enabled."),
    ("Scrubber against detect-secrets", ("scrub",),
     "Same generated corpus for every tool: throughput (MB/s) and recall per secret kind. Target: ichor's "
     "recall ≥ each peer's on every kind, at ≥ 3× detect-secrets' throughput."),
    ("Export: 1k, 10k and 100k pairs", ("export",),
     "`load_records` from a data dir streamed into `write_export`, one interpreter per size. Target: time per "
     "pair flat, peak memory bounded (streaming, not load-all)."),
    ("Store: 8 processes × 1,000 captures", ("store",),
     "Eight writer processes released together on one SQLite file, next to one writer alone. Target: exactly "
     "8,000 pairs, no duplicate uid or fingerprint."),
    ("Training: stage overhead against bare TRL", ("train",),
     "The `train` stage against a bare TRL `DPOTrainer` run on the same rows and settings."),
]

# Targets that are checked against figures; (name, description, check(results) -> (measured, met) or None).
EXPORT_TIME_FLAT = 1.5   # 100k/1k per-pair time at most this
EXPORT_HEAP_BOUND = 4.0  # 100k/1k peak Python heap at most this, for 100× the pairs


def fmt(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    if value is None:
        return "–"
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(fmt(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _is_matrix(value) -> bool:
    """A dict of dicts of plain values: one table row per outer key."""
    return (isinstance(value, dict) and len(value) > 1 and all(isinstance(v, dict) for v in value.values())
            and all(not isinstance(x, (dict, list)) or _plain_list(x) for v in value.values() for x in v.values()))


def _plain_list(value) -> bool:
    return isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)


def _flatten(value, prefix: str = ""):
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _flatten(sub, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and not _plain_list(value):
        for i, sub in enumerate(value):
            yield from _flatten(sub, f"{prefix}[{i}]")
    else:
        yield prefix, value


def generic(result: dict) -> str:
    """Every figure in the results file: matrices as tables, the rest as key/value rows."""
    parts, rows = [], []
    for key, value in result.items():
        if key in META_KEYS:
            continue
        if _is_matrix(value):
            columns = list(dict.fromkeys(c for v in value.values() for c in v))
            parts.append(f"**{key}**\n\n" + table([key, *columns], [[k, *(v.get(c) for c in columns)]
                                                                     for k, v in value.items()]))
        else:
            rows.extend([k, v] for k, v in _flatten(value, key))
    if rows:
        parts.insert(0, table(["figure", "value"], rows[:80]))
    return "\n\n".join(parts) or "_(no figures in the results file)_"


def export_table(r: dict) -> str:
    rows = [[int(size), s["us_per_pair"], s["seconds"], s["tracemalloc_peak_mb"], s["peak_rss_mb"], s["output_mb"]]
            for size, s in sorted(r["sizes"].items(), key=lambda kv: int(kv[0]))]
    body = table(["pairs", "µs per pair", "total s", "peak Python heap MB", "peak RSS MB", "output MB"], rows)
    return (body + f"\n\nPer-pair time, largest/smallest: **{fmt(r['time_per_pair_ratio_largest_vs_smallest'])}×**; "
            f"peak heap, largest/smallest: **{fmt(r['heap_peak_ratio_largest_vs_smallest'])}×** for "
            f"{fmt(r['size_ratio'])}× the pairs. Input layout: {r['layout']}.")


def store_table(r: dict) -> str:
    rows = [[label, s["writers"], s["per_writer"], s["seconds"], s["pairs_per_s"], s["pairs"], s["distinct_uids"],
             s["distinct_fingerprints"], s["integrity"]]
            for label, s in (("1 writer", r["single"]), ("8 writers", r["concurrent"]))]
    body = table(["run", "processes", "captures each", "seconds", "pairs/s", "pairs", "distinct uids",
                  "distinct fingerprints", "integrity_check"], rows)
    return (body + f"\n\nExactly {fmt(r['expected_pairs'])} distinct pairs: **{fmt(r['exact'])}**. Throughput, 8 "
            f"writers / 1 writer: {fmt(r['throughput_ratio_concurrent_vs_single'])}× (writes serialise on SQLite's "
            "write lock; the point is that none is lost or doubled).")


RENDERERS: dict[str, Callable[[dict], str]] = {"export": export_table, "store": store_table}


def target_rows(results: dict) -> list[list]:
    rows = []
    export = results.get("export")
    if export and "time_per_pair_ratio_largest_vs_smallest" in export:
        t, h = export["time_per_pair_ratio_largest_vs_smallest"], export["heap_peak_ratio_largest_vs_smallest"]
        rows.append([f"Export time per pair flat (100k/1k ≤ {EXPORT_TIME_FLAT}×)", f"{fmt(t)}×", t <= EXPORT_TIME_FLAT])
        rows.append([f"Export peak memory bounded (100k/1k heap ≤ {EXPORT_HEAP_BOUND}×)", f"{fmt(h)}×",
                     h <= EXPORT_HEAP_BOUND])
    store = results.get("store")
    if store and "exact" in store:
        c = store["concurrent"]
        rows.append(["Store 8×1,000: exactly 8,000 pairs, no duplicates",
                     f"{fmt(c['pairs'])} pairs, {fmt(c['distinct_uids'])} uids, {fmt(c['pairs_per_s'])} pairs/s",
                     store["exact"]])
    for name, r in sorted(results.items()):
        for key, value in (r.get("targets") or {}).items() if isinstance(r, dict) else ():
            if isinstance(value, dict) and "met" in value:
                rows.append([f"{name}: {value.get('target', key)}", fmt(value.get("measured")), value["met"]])
    return rows


def _header(r: dict) -> str:
    m = r.get("machine") or {}
    where = f"{m.get('cores', '?')} cores, {m.get('cpu', '?')}" if m else "machine not recorded"
    return f"Reproduce: `{r.get('command', '?')}` · measured {r.get('date', '?')} on {where}."


def section(title: str, names: tuple[str, ...], about: str, results: dict, runs: dict) -> str:
    out = [f"## {title}", "", about, ""]
    present = [n for n in names if n in results]
    if not present:
        cmd = " or ".join(f"`python -m bench.bench_{n}`" for n in names)
        out += [f"_Not run._ ({cmd})", ""]
    for name in present:
        r = results[name]
        if len(present) > 1:
            out += [f"### bench_{name}", ""]
        run = runs.get(name) or {}
        if run and not run.get("ok", True):
            out += [f"> The last run of bench_{name} failed ({fmt(run.get('error'))}); the figures below are "
                    "from an earlier run.", ""]
        out += [_header(r), ""]
        try:
            out.append(RENDERERS[name](r) if name in RENDERERS else generic(r))
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            out.append(generic(r))
        out.append("")
    return "\n".join(out)


def _run_row(name: str, run: dict | None, result: dict | None) -> list:
    if run:
        verdict = "ok" if run["ok"] else f"failed: {run.get('error', '')}"
        return [f"bench_{name}", verdict, run["seconds"], run["date"]]
    if result:
        return [f"bench_{name}", "run on its own", None, result.get("date")]
    return [f"bench_{name}", "not run", None, None]


def render(merged: dict, names: list[str], manual: list[str]) -> str:
    results, runs, m = merged["results"], merged["runs"], merged["machine"]
    out = [
        "# Benchmarks",
        "",
        "<!-- Generated by `make bench` (python -m bench.run). Edit only inside manual:begin/end markers. -->",
        "",
        f"Report written {merged['generated']} on {m['cores']} cores, {m['cpu']}, Python {m['python']}. "
        "Every comparison is measured side by side in one run and reported as a ratio. Rerun everything with "
        "`make bench`, or one benchmark with the command under its section.",
        "",
        "## Targets",
        "",
    ]
    rows = target_rows(results)
    out += [table(["target", "measured", "met"], rows) if rows else "_No target could be checked yet._", ""]
    known = set()
    for title, sec_names, about in SECTIONS:
        known.update(sec_names)
        out.append(section(title, sec_names, about, results, runs))
    for name in sorted(set(results) - known):
        out.append(section(f"Other: bench_{name}", (name,), "", results, runs))
    out += ["## Runs", ""]
    run_rows = [_run_row(n, runs.get(n), results.get(n)) for n in names]
    out += [table(["benchmark", "last run", "seconds", "date"], run_rows) if run_rows else "_No benchmark found._", ""]
    for block in manual:
        out += [block, ""]
    return "\n".join(out).rstrip() + "\n"
