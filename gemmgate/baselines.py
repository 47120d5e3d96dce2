"""Per-chip baseline files (baselines/<chip>.json): the typed model, validation on load,
building from calibration runs, merging machines, and locked atomic writes (the model
and its validation live in gemmgate/baseline_schema.py, the noise levels in
gemmgate/baseline_noise.py, what it records of its runs, commits and timing in
gemmgate/baseline_provenance.py).

Schema "gemmgate.baseline" version 1 (fields added since are optional):
  {"schema", "version", "chip", "provenance": {environment record, shapes, modes, runs,
                                               machines: {id: {host, gpu_uuid, ...}},
                                               run_ids: [each run's id: `run_id`]},
   "cases": {"<mode>-<case id>": {"mode", "m", "n", "k", "layout", "ratio",
             "providers": {"triton"|"vendor": {"median_ms", "quantiles_ms", "tflops",
                                               "error"}},
             "noise": {...three levels, below...},
             "tuning": {"key", "config", "source", "kernel", ...} (GPU only)}}}

Noise, per case, at three levels (A/B, process, machine): gemmgate/baseline_noise.py.
`ratio_runs`, `tflops_runs`, `ab_runs` and `run_machines` keep each run's median and the
machine (host/GPU UUID, host/machine id on the CPU) it ran on, so later merges recompute
every level. Baselines from before machine ids count as one machine, "legacy:<commit>".
`behind` ({level: runs}, optional) counts the runs (machines, at a machine level) behind a
figure those lists no longer give: one kept by an update or taken from a merged part.

Files are written only by `gemmgate baseline ...`, atomically, under a file lock
(`write_merged`): the new cases are merged onto the file as it is at write time, so two
updates of different modes running at once both land.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from filelock import FileLock, Timeout

from gemmgate import stats
from gemmgate.baseline_noise import (
    counts,
    from_runs,
    machine_of,
    stored_floor,
    tflops_machines_of,
    with_counts,
)
from gemmgate.baseline_provenance import (
    any_dirty,
    commits,
    run_id,
    run_ids,
    unlike_kept,
    unlike_model,
    unlike_software,
)
from gemmgate.baseline_schema import (  # noqa: F401 - the model is part of this API
    SCHEMA,
    VERSION,
    Baseline,
    BaselineCase,
    BaselineError,
    Noise,
    ProviderFigures,
    default_path,
    from_json,
    load,
)
from gemmgate.files import write_json_atomic
from gemmgate.results import GATED, CaseResult, RunRecord

# --- building ----------------------------------------------------------------------------


def _median_or_none(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None and math.isfinite(x)]
    return stats.median(vals) if vals else None


def build(records: Sequence[RunRecord], chip_id: str, shapes: str) -> Baseline:
    """A baseline from one or more runs of the same set (medians over runs, noise at each
    level the runs allow)."""
    if not records:
        raise ValueError("no runs to build a baseline from")
    by_key: dict[str, list[tuple[CaseResult, str]]] = {}
    for rec in records:
        once: dict[str, CaseResult] = {}   # a run's case once: its own repeats are not
        for c in rec.cases:                # independent runs
            once.setdefault(c.key, c)
        for c in once.values():
            by_key.setdefault(c.key, []).append((c, machine_of(c, rec.environment)))
    cases = {}
    for key, tagged in by_key.items():
        cs = [c for c, _ in tagged]
        provs = {}
        for name in GATED:  # not the A/B reference (only its ratio is kept), no extras
            ps = [c.providers[name] for c in cs if name in c.providers]
            med = _median_or_none([p.median_ms for p in ps])
            if med is None:
                continue
            provs[name] = ProviderFigures(
                med, _median_or_none([p.tflops for p in ps]),
                _median_or_none([p.error if p.error is not None else math.inf for p in ps]),
                # every run's rounds (a round's, as the run file's): the first run's alone
                # stood beside the runs' median, a median below its own p10 (a review)
                stats.quantiles([x for p in ps for x in p.rounds_ms]))
        if "triton" not in provs:
            continue
        ratio_rows = [(c.ratio, m) for c, m in tagged if c.ratio]
        tf_rows = [(c.providers["triton"].tflops, m) for c, m in tagged
                   if c.providers["triton"].tflops]
        abs_ = [c.ab_median for c in cs if c.ab_median is not None]
        noise = from_runs([r for r, _ in ratio_rows], [m for _, m in ratio_rows],
                       [t for t, _ in tf_rows], [m for _, m in tf_rows], abs_, len(cs))
        tiles = [c.telemetry.get("tuning") for c in cs]
        tuning = {**tiles[0], "runs_agree": all(
            t and t.get("config") == tiles[0]["config"] for t in tiles)} if tiles[0] else None
        cases[key] = BaselineCase(cs[0].mode, cs[0].case, _median_or_none(
            [r for r, _ in ratio_rows]), provs, noise, tuning)
    env = dict(records[0].environment)
    env.pop("run_id", None)   # one run's: every run's is in run_ids
    env.update(shapes=shapes, runs=len(records),
               modes=sorted({c.mode for c in cases.values()}),
               machines=_machines(records), run_ids=[run_id(r) for r in records])
    # every run's commit and tree, not the first's: runs of two commits merged as one
    # calibration recorded the first alone, and `--ab-ref baseline` took it (a review)
    shas = list(dict.fromkeys(r.environment.get("commit") for r in records))
    if len(shas) > 1:
        env["merged_from"] = shas
    env["dirty"] = any_dirty([r.environment.get("dirty") for r in records])
    return Baseline(chip_id, env, cases)


def _machines(records: Sequence[RunRecord]) -> dict:
    """Provenance of every machine the runs used: host, GPU UUID and serial, power limit,
    clocks (from each run's environment record), keyed by machine id."""
    out: dict[str, dict] = {}
    for rec in records:
        env = rec.environment
        gpus = {g.get("uuid"): g for g in env.get("gpus") or [] if isinstance(g, dict)}
        for c in rec.cases:
            mid = machine_of(c, env)
            entry = out.setdefault(mid, {"host": env.get("host"), "runs": 0})
            if env.get("machine_id") and not c.telemetry.get("gpu_uuid"):
                entry["machine_id"] = env["machine_id"]
            gpu = gpus.get(c.telemetry.get("gpu_uuid"))
            if gpu:
                entry.update({k: v for k, v in gpu.items() if k != "index"})
        for mid in {machine_of(c, env) for c in rec.cases}:
            out[mid]["runs"] += 1
    return out


# --- combining -----------------------------------------------------------------------------


def carry_noise(new: Baseline, old: Baseline | None) -> Baseline:
    """An uncalibrated update keeps the old baseline's measured noise per case, where the
    old file was timed as this update was (`noise_timed_otherwise`: else none is kept)."""
    if not old or noise_timed_otherwise(old, new):
        return new
    cases = {k: replace(c, noise=_carried(old.cases[k].noise, c.noise))
             if c.noise.runs < 2 and k in old.cases else c for k, c in new.cases.items()}
    return replace(new, cases=cases)


def noise_timed_otherwise(old: Baseline | None, new: Baseline) -> str | None:
    """Why the old file's noise cannot judge `new`'s figures: it was measured with another
    timing method or --block (an update of every case carried a block-1 calibration's
    noise onto block-4 figures, graph noise onto eager ones, silently; a review). None
    where it can, or there is none."""
    if not old:
        return None
    return unlike_kept(old.provenance, new.provenance, len(old.cases))


def _carried(old: Noise, new: Noise) -> Noise:
    """The old noise figures, with the runs (and so the machines) the new figures came
    from: a check on the old calibration's machine must not judge the new machine's
    figures at process level."""
    return with_counts(replace(old, ratio_runs=new.ratio_runs, tflops_runs=new.tflops_runs,
                               run_machines=new.run_machines,
                               tflops_machines=new.tflops_machines), counts(old))


def merge(new: Baseline, old: Baseline | None) -> tuple[Baseline, list[str]]:
    """Cases measured now replace theirs; the old file's other cases are kept (a run of
    some modes or shapes refreshes those only). Returns the merged data and kept keys.
    BaselineError where the kept cases were timed otherwise (`unlike_kept`) or measured on
    another Triton or torch (`unlike_software`)."""
    if not old:
        return new, []
    kept = [k for k in old.cases if k not in new.cases]
    unlike = unlike_kept(old.provenance, new.provenance, len(kept)) or \
        unlike_software(old.provenance, new.provenance, len(kept)) or \
        unlike_model(old.chip, old.provenance, new.provenance, len(kept))
    if unlike:
        raise BaselineError(f"{unlike}; nothing written")
    cases = {**{k: old.cases[k] for k in kept}, **new.cases}
    prov = dict(new.provenance)
    prov["modes"] = sorted({c.mode for c in cases.values()})
    if kept:   # the kept cases' commits: `--ab-ref baseline` and bisect's GOOD read them
        prov["merged_from"] = list(dict.fromkeys(commits(old) + commits(new)))
        prov["dirty"] = any_dirty([old.provenance.get("dirty"), new.provenance.get("dirty")])
        prov["kept_from"] = old.provenance.get("commit") or old.provenance.get("date")
        prov["shapes"] = old.provenance.get("shapes", prov.get("shapes"))
        if "machines" in old.provenance or "machines" in prov:   # the kept cases' too
            prov["machines"] = {**(old.provenance.get("machines") or {}),
                                **(prov.get("machines") or {})}
        if run_ids(old):
            prov["run_ids"] = list(dict.fromkeys(run_ids(old) + run_ids(new)))
    return replace(new, provenance=prov, cases=cases), kept


def _tile(c: BaselineCase) -> dict | None:
    return c.tuning.get("config") if c.tuning else None


def _figure_runs(c: BaselineCase) -> int:
    """The runs a case's provider figures are the median of, to weigh its part by in a
    merge: the runs it lists (ratio_runs, tflops_runs), else, in a file listing none, its
    run count. Not `noise.runs` first: after `baseline update` that is the calibration's
    whose noise was kept, and an update's one run of a 5-run calibration outweighed a
    3-run calibration's vendor time, 5 to 3 (a review)."""
    return max(len(c.noise.ratio_runs), len(c.noise.tflops_runs)) or max(1, c.noise.runs)


def other_tiles(parts: Sequence[Baseline]) -> dict[str, list[int]]:
    """Per case, the parts (indices) that ran it on another tile than the first part
    that has the case with a recorded tile: a kernel change between calibrations, not
    machine noise (`combine` leaves them out of that case). Parts without a tile agree."""
    out: dict[str, list[int]] = {}
    for key in dict.fromkeys(k for p in parts for k in p.cases):
        tiles = [(i, _tile(p.cases[key])) for i, p in enumerate(parts) if key in p.cases]
        first = next((t for _, t in tiles if t is not None), None)
        other = [i for i, t in tiles if t is not None and t != first]
        if other:
            out[key] = other
    return out


def combine(parts: Sequence[Baseline]) -> Baseline:
    """One baseline from calibrations made on several machines (`gemmgate baseline
    merge`): per case, every run median pooled with its machine; figures are the pooled
    medians, noise recomputed at each level, no level below a part's stored figure
    (`stored_floor`). Cases need not all be in every part. A part that ran a case on
    another tile than the first part's (`other_tiles`) is left out of that case: pooled,
    the kernel's change would pass for machine noise (session 29: a run after tf32
    128 x 8192 x 8192's pick moved, +4% by A/B, took that case's machine noise from 1.4%
    to 4.4% and moved its stored ratio)."""
    if not parts:
        raise ValueError("nothing to merge")
    chips = {p.chip for p in parts}
    if len(chips) > 1:
        raise BaselineError(f"cannot merge baselines of different chips: {sorted(chips)}")
    keys = list(dict.fromkeys(k for p in parts for k in p.cases))
    skip = other_tiles(parts)
    cases = {}
    for key in keys:
        cs = [p.cases[key] for i, p in enumerate(parts)
              if key in p.cases and i not in skip.get(key, ())]
        ratios = [x for c in cs for x in c.noise.ratio_runs]
        machines = [m for c in cs for m in c.noise.run_machines]
        tflops = [x for c in cs for x in c.noise.tflops_runs]
        tf_machines = [m for c in cs for m in tflops_machines_of(c.noise)]
        abs_ = [x for c in cs for x in c.noise.ab_runs]
        noise = stored_floor(from_runs(ratios, machines, tflops, tf_machines, abs_,
                                     sum(c.noise.runs for c in cs)), [c.noise for c in cs])
        provs = {}
        # Triton's TFLOP/s and time are the pooled runs' medians, as `build`'s and the
        # ratio's are (the parts' medians' median weighed a 1-run part as a 5-run one: 11%
        # off, a review): each run's time is its TFLOP/s's (run.py made one from the other).
        # Figures with no per-run list in every part (the vendor's, any other provider's)
        # are the parts' medians' median, each part weighed by its runs (unweighed, a
        # 2-run part moved the vendor's time as a 5-run one: 10% off beside a pooled ratio
        # that said the two ran alike; a review)
        flops = cs[0].case.flops
        for name in cs[0].providers:
            held = [c for c in cs if name in c.providers]
            ps = [c.providers[name] for c in held]
            weights = [_figure_runs(c) for c in held]
            pooled = name == "triton" and all(c.noise.tflops_runs for c in cs)
            tf = tflops if pooled else [p.tflops for p, w in zip(ps, weights)
                                        for _ in range(w)]
            ms = [flops / (t * 1e9) for t in tflops] if pooled and flops else \
                [p.median_ms for p, w in zip(ps, weights) for _ in range(w)]
            # (no quantiles of several parts: their rounds are not stored, and the first
            # part's stood beside the pooled median; a review)
            provs[name] = replace(ps[0], median_ms=stats.median(ms), tflops=_median_or_none(tf),
                                  quantiles_ms=ps[0].quantiles_ms if len(ps) == 1 else {})
        tuning = cs[0].tuning
        if tuning is not None:
            agree = all(c.tuning and c.tuning.get("config") == tuning["config"] for c in cs)
            tuning = {**tuning, "runs_agree": bool(tuning.get("runs_agree", True) and agree)}
        ratio = stats.median(ratios) if ratios else cs[0].ratio
        cases[key] = BaselineCase(cs[0].mode, cs[0].case, ratio, provs, noise, tuning)
    prov = dict(parts[0].provenance)
    machines_prov: dict = {}
    for p in parts:   # a machine in several parts gave each part's runs: their sum (the
        # last part's count alone stood, 1 run for a machine behind 4; a review)
        for mid, entry in (p.provenance.get("machines") or {}).items():
            was = machines_prov.get(mid, {})
            runs = [x.get("runs") for x in (was, entry) if type(x.get("runs")) is int]
            machines_prov[mid] = {**was, **entry, **({"runs": sum(runs)} if runs else {})}
    prov.update(run_ids=list(dict.fromkeys(i for p in parts for i in run_ids(p))))
    prov.update(runs=sum(p.provenance.get("runs") or 0 for p in parts), machines=machines_prov,
                modes=sorted({c.mode for c in cases.values()}),
                merged_from=[s for p in parts for s in commits(p)],   # (a part's own
                dirty=any_dirty([p.provenance.get("dirty") for p in parts]))   # merge's too)
    return Baseline(parts[0].chip, prov, cases)


# --- writing -------------------------------------------------------------------------------


def save(path: str | Path, base: Baseline) -> None:
    data = base.to_json()
    from_json(json.loads(json.dumps(data)), str(path))  # what is written must load
    write_json_atomic(path, data)


def locked(path: str | Path, timeout_s: float = 600) -> FileLock:
    """The lock every writer of a baseline file holds while it reads and writes it: the
    file's own, whatever the spelling (a symbolic link is written through to its target,
    and a writer through the link took a lock of its own beside the link, so two
    updates of one file ran at once and one's cases were lost; a review)."""
    return FileLock(str(Path(path).resolve()) + ".lock", timeout=timeout_s)


def write_merged(path: str | Path, chip_id: str, measured: Baseline,
                 timeout_s: float = 600, on_wait: Callable[[str], None] | None = None,
                 ) -> tuple[Baseline, Baseline | None, list[str]]:
    """Merge freshly measured cases onto the baseline file as it is *now* and write it,
    all under a lock on the file: (written data, the file as found, kept case keys).
    Another update running at once either finished before (its cases are kept) or waits
    for this one; `on_wait` is told where the lock is held. Where it stays held past
    `timeout_s`, the measured cases are saved beside the file (`PATH.measured.json`, a
    baseline of their own) and BaselineError says so: it waited silently, then dropped what it
    had measured (hours of a calibration; a review). A file there that cannot be used
    (corrupt, another chip's, another schema version) is BaselineError and stays as it
    is: replacing it would lose what it holds (`existing`)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    lock = locked(p, timeout_s)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_wait is not None:
            on_wait(f"waiting up to {timeout_s:g} s for {lock.lock_file} (another write of "
                    f"{p} holds it)")
        try:
            lock.acquire()
        except Timeout:
            aside = p.with_name(p.name + ".measured.json")
            save(aside, measured)
            raise BaselineError(f"{p}: another writer held {lock.lock_file} for "
                                f"{timeout_s:g} s; nothing written there. The cases measured "
                                f"are kept in {aside}, a baseline of their own (not merged "
                                f"onto {p})") from None
    try:
        old = existing(p, chip_id)
        new, kept = merge(carry_noise(measured, old), old)
        save(p, new)
    finally:
        lock.release()
    return new, old, kept


def existing(path: Path, chip_id: str) -> Baseline | None:
    """The baseline file a write merges onto, None where there is none yet; one that
    cannot be used is BaselineError, nothing written."""
    if not path.exists():
        return None
    try:
        return load(path, chip_id)
    except BaselineError as e:
        raise BaselineError(f"{e}; nothing written over it (move it away to start a new "
                            "baseline there)") from None


def lost_levels(old: Baseline | None, new: Baseline) -> dict[str, list[str]]:
    """Per noise level a write dropped ("machine-level", "A/B"), the cases that had it in
    the file and lack it now: a calibration on one machine replaces a case's runs from
    several; a calibration without --ab-ref, or a merge of other files onto it, the A/B
    noise. Said on every baseline write (update, calibrate, merge)."""
    if not old:
        return {}
    got = {"machine-level": "machine", "A/B": "ab"}
    out = {level: [k for k, c in new.cases.items() if getattr(c.noise, f) is None
                   and k in old.cases and getattr(old.cases[k].noise, f) is not None]
           for level, f in got.items()}
    return {level: keys for level, keys in out.items() if keys}


def summary(base: Baseline | None) -> dict:
    """Per-mode geomean ratio and case count: shown old beside new on update."""
    if not base:
        return {}
    out: dict[str, list] = {}
    for c in base.cases.values():
        out.setdefault(c.mode, []).append(c.ratio)
    return {m: {"cases": len(rs), "geomean_ratio": stats.geomean([r for r in rs if r])}
            for m, rs in sorted(out.items())}
