"""Per-chip baseline files (baselines/<chip>.json): schema, validation, building, writing.

Schema "gemmgate.baseline" version 1:
  {"schema", "version", "chip", "provenance": {environment record, shapes, modes, runs},
   "cases": {"<mode>-<case id>": {"mode", "m", "n", "k", "layout", "ratio",
             "providers": {"triton"|"vendor": {"median_ms", "quantiles_ms", "tflops",
                                               "error"}},
             "noise": {"ratio": rel, "tflops": rel, "runs": n,
                       "ratio_runs": [per-run median ratio], "tflops_runs": [...],
                       "ab": rel, "ab_runs": [...] (calibrated with --ab-ref only)},
             "tuning": {"key", "config", "source", "kernel", ...} (GPU only)}}}
Figures are medians over the calibration runs; noise is their A/A spread
(gemmgate.compare.aa_noise). `ab` is the A/A noise of `check --ab-ref`'s figure (the
reference kernel's time over the current one's, per run, when both are this tree's
kernel; gemmgate.compare.ab_noise). `tuning` is the Triton tile the case was measured with:
`gemmgate check` pins it (gemmgate/tuning.py). Files are only written by
`gemmgate baseline ...`, atomically, and under a file lock (`write_merged`): the file is
read again under the lock and the new cases merged onto what is there now, so two
updates of different modes running at once both land.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from gemmgate import stats
from gemmgate.compare import aa_noise, ab_noise
from gemmgate.files import read_text, write_json_atomic
from gemmgate.results import REFERENCE, ResultsError, case_from_json

SCHEMA, VERSION = "gemmgate.baseline", 1


class BaselineError(ValueError):
    """A baseline file that cannot be used: missing, corrupt, wrong version or chip."""


def default_path(chip_id: str) -> Path:
    return Path("baselines") / f"{chip_id}.json"


def load(path: str | Path, chip_id: str | None = None) -> dict:
    p = Path(path)
    if not p.exists():
        raise BaselineError(f"no baseline at {p}: create one with `gemmgate baseline "
                            f"calibrate --chip {chip_id or '<chip>'}`")
    try:
        text = read_text(p, "baseline")
    except (OSError, ValueError) as e:
        raise BaselineError(f"cannot read baseline {p}: {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BaselineError(f"baseline {p} is corrupt (not JSON: {e})") from None
    validate(data, str(p))
    if chip_id is not None and data["chip"] != chip_id:
        raise BaselineError(f"baseline {p} is for chip {data['chip']}, not {chip_id}")
    return data


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise BaselineError(f"baseline {where} is corrupt: {what}")


def validate(data, where: str = "<data>") -> None:
    _need(isinstance(data, dict), where, "top level is not an object")
    _need(data.get("schema") == SCHEMA, where, f"schema is {data.get('schema')!r}, "
                                               f"expected {SCHEMA!r}")
    if data.get("version") != VERSION:
        raise BaselineError(f"baseline {where} has schema version {data.get('version')!r}; "
                            f"this gemmgate reads version {VERSION}: recalibrate it")
    _need(isinstance(data.get("chip"), str), where, "no chip id")
    _need(isinstance(data.get("provenance"), dict), where, "no provenance")
    cases = data.get("cases")
    _need(isinstance(cases, dict), where, "no cases object")
    for key, c in cases.items():
        _need(isinstance(c, dict), where, f"case {key} is not an object")
        for f in ("mode", "m", "n", "k", "layout", "providers", "noise"):
            _need(f in c, where, f"case {key} lacks {f!r}")
        try:
            case = case_from_json(c, f"case {key}:")
        except ResultsError as e:
            raise BaselineError(f"baseline {where} is corrupt: {e}") from None
        _need(key == f"{c['mode']}-{case.id}", where,
              f"case {key} holds {c['mode']}-{case.id} (key and fields disagree)")
        r = c.get("ratio")
        _need(r is None or _positive(r), where, f"case {key} has a bad ratio {r!r}")
        _need(isinstance(c["providers"], dict), where, f"case {key}: providers is not an object")
        t = c["providers"].get("triton")
        _need(isinstance(t, dict) and _positive(t.get("median_ms")), where,
              f"case {key} lacks triton median_ms > 0")
        for name, prov in c["providers"].items():
            _need(isinstance(prov, dict) and _positive(prov.get("median_ms")), where,
                  f"case {key}: providers.{name}.median_ms is missing or not > 0")
            tf = prov.get("tflops")
            _need(tf is None or _positive(tf, zero=True), where,
                  f"case {key}: providers.{name}.tflops is {tf!r}, not a number")
        noise = c["noise"]
        _need(isinstance(noise, dict), where, f"case {key}: noise is not an object")
        for f in ("ratio", "tflops", "ab"):
            _need(noise.get(f) is None or _positive(noise[f], zero=True), where,
                  f"case {key} has a bad noise.{f} {noise.get(f)!r}")
        tun = c.get("tuning")
        _need(tun is None or (isinstance(tun, dict) and isinstance(tun.get("key"), str)
                              and isinstance(tun.get("config"), dict)), where,
              f"case {key} has a bad tuning record")


def _positive(x, zero: bool = False) -> bool:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    return ok and (x >= 0 if zero else x > 0)


def _median_or_none(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None and math.isfinite(x)]
    return stats.median(vals) if vals else None


def build(runs: Sequence[dict], chip_id: str, shapes: str) -> dict:
    """A baseline from one or more run JSONs (`gemmgate run --json`) of the same set."""
    if not runs:
        raise ValueError("no runs to build a baseline from")
    by_key: dict[str, list[dict]] = {}
    for run in runs:
        for c in run["cases"]:
            by_key.setdefault(c["id"], []).append(c)
    cases = {}
    for key, cs in by_key.items():
        first = cs[0]
        provs = {}
        for name in first["providers"]:
            if name == REFERENCE:  # the A/A twin of triton: only its ratio is kept
                continue
            ps = [c["providers"][name] for c in cs]
            med = _median_or_none([p["median_ms"] for p in ps])
            if med is None:
                continue
            provs[name] = {"median_ms": med,
                           "quantiles_ms": ps[0]["quantiles_ms"],
                           "tflops": _median_or_none([p["tflops"] for p in ps]),
                           "error": _median_or_none([_f(p["error"]) for p in ps])}
        if "triton" not in provs:
            continue
        ratios = [c["ratio"] for c in cs if c["ratio"]]
        tflops = [c["providers"]["triton"]["tflops"] for c in cs
                  if c["providers"]["triton"]["tflops"]]
        cases[key] = {
            "mode": first["mode"], "m": first["m"], "n": first["n"], "k": first["k"],
            "layout": first["layout"], "ratio": _median_or_none(ratios),
            "providers": provs,
            "noise": {"ratio": aa_noise(ratios) if len(ratios) > 1 else None,
                      "tflops": aa_noise(tflops) if len(tflops) > 1 else None,
                      "runs": len(cs), "ratio_runs": ratios, "tflops_runs": tflops},
        }
        abs_ = [m for m in map(ab_median, cs) if m is not None]
        if len(abs_) > 1:
            cases[key]["noise"].update(ab=ab_noise(abs_), ab_runs=abs_)
        tiles = [c.get("telemetry", {}).get("tuning") for c in cs]
        if tiles[0]:
            cases[key]["tuning"] = {**tiles[0], "runs_agree": all(
                t and t.get("config") == tiles[0]["config"] for t in tiles)}
    env = dict(runs[0]["environment"])
    env.update(shapes=shapes, runs=len(runs),
               modes=sorted({c["mode"] for c in cases.values()}))
    return {"schema": SCHEMA, "version": VERSION, "chip": chip_id, "provenance": env,
            "cases": cases}


def ab_median(case: dict) -> float | None:
    """Median of a run JSON case's per-round reference/triton time ratios (None without
    a timed reference)."""
    p = case["providers"]
    ref, tri = p.get(REFERENCE, {}).get("samples_ms"), p["triton"].get("samples_ms")
    if not ref or not tri:
        return None
    return stats.median([r / t for t, r in zip(tri, ref) if t > 0])


def _f(x):
    return x if isinstance(x, (int, float)) else math.inf


def carry_noise(new: dict, old: dict | None) -> dict:
    """An uncalibrated update keeps the old baseline's measured noise per case."""
    if old:
        for key, c in new["cases"].items():
            if c["noise"]["runs"] < 2 and key in old["cases"]:
                c["noise"] = dict(old["cases"][key]["noise"])
    return new


def merge(new: dict, old: dict | None) -> tuple[dict, list[str]]:
    """Cases measured now replace theirs; the old file's other cases are kept (a run of
    some modes or shapes refreshes those only). Returns the merged data and kept keys."""
    if not old:
        return new, []
    kept = [k for k in old["cases"] if k not in new["cases"]]
    cases = {**{k: old["cases"][k] for k in kept}, **new["cases"]}
    prov = dict(new["provenance"])
    prov["modes"] = sorted({c["mode"] for c in cases.values()})
    if kept:
        prov["kept_from"] = old["provenance"].get("commit") or old["provenance"].get("date")
        prov["shapes"] = old["provenance"].get("shapes", prov.get("shapes"))
    return {**new, "provenance": prov, "cases": cases}, kept


def save(path: str | Path, data: dict) -> None:
    validate(data, str(path))
    write_json_atomic(path, data)


def write_merged(path: str | Path, chip_id: str, measured: dict,
                 timeout_s: float = 600) -> tuple[dict, dict | None, list[str]]:
    """Merge freshly measured cases onto the baseline file as it is *now* and write it,
    all under a lock on the file: (written data, the file as found, kept case keys).
    An unusable old file is replaced; another update running at once either finished
    before (its cases are kept) or waits for this one."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(p) + ".lock", timeout=timeout_s):
        try:
            old = load(p, chip_id) if p.exists() else None
        except BaselineError:
            old = None
        new, kept = merge(carry_noise(measured, old), old)
        save(p, new)
    return new, old, kept


def summary(data: dict | None) -> dict:
    """Per-mode geomean ratio and case count: shown old beside new on update."""
    if not data:
        return {}
    out: dict[str, dict] = {}
    for c in data["cases"].values():
        out.setdefault(c["mode"], []).append(c["ratio"])
    return {m: {"cases": len(rs), "geomean_ratio": stats.geomean([r for r in rs if r])}
            for m, rs in sorted(out.items())}
