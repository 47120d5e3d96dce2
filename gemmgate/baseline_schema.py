"""The baseline file's typed model and its validation on load (schema "gemmgate.baseline"
version 1; the fields and the three noise levels are described in gemmgate/baselines.py).
`from_json` turns a file's JSON into a Baseline or raises BaselineError naming the file
and the field; `to_json` is its inverse.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from gemmgate import stats
from gemmgate.files import read_text
from gemmgate.precision import MODE_NAMES
from gemmgate.results import ResultsError, case_from_json, real_number
from gemmgate.shapes import Case
from gemmgate.stats import MAX_BLOCK

SCHEMA, VERSION = "gemmgate.baseline", 1


class BaselineError(ValueError):
    """A baseline file that cannot be used: missing, corrupt, wrong version or chip."""


@dataclass(frozen=True)
class ProviderFigures:
    median_ms: float
    tflops: float | None = None
    error: float | None = None
    quantiles_ms: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"median_ms": self.median_ms, "quantiles_ms": self.quantiles_ms,
                "tflops": self.tflops, "error": self.error}


NOISE_LEVELS = ("ratio", "tflops", "ab", "machine", "tflops_machine")   # Noise's figures


@dataclass(frozen=True)
class Noise:
    ratio: float | None = None            # process level (fresh processes, one machine)
    tflops: float | None = None
    ab: float | None = None               # A/B, in one process
    machine: float | None = None          # across physical GPUs / hosts
    tflops_machine: float | None = None
    ratio_runs: tuple[float, ...] = ()
    tflops_runs: tuple[float, ...] = ()
    ab_runs: tuple[float, ...] = ()
    run_machines: tuple[str, ...] = ()    # the machine of each entry of ratio_runs
    runs: int = 0
    tflops_machines: tuple[str, ...] = ()  # the machine of each entry of tflops_runs
    # per level (`NOISE_LEVELS`), the runs (machines, at a machine level) its figure came
    # from, where the runs listed beside it do not give it: a figure kept by `baseline
    # update` or taken from a merged part (gemmgate/baseline_noise.py `behind`)
    behind: dict[str, int] = field(default_factory=dict)

    @property
    def machines(self) -> frozenset[str]:
        return frozenset(self.run_machines) | frozenset(self.tflops_machines)

    def to_json(self) -> dict:
        d = {"ratio": self.ratio, "tflops": self.tflops, "runs": self.runs,
             "ratio_runs": list(self.ratio_runs), "tflops_runs": list(self.tflops_runs)}
        if self.ab is not None:
            d.update(ab=self.ab, ab_runs=list(self.ab_runs))
        if self.machine is not None or self.tflops_machine is not None:
            d.update(machine=self.machine, tflops_machine=self.tflops_machine)
        if self.run_machines:
            d["run_machines"] = list(self.run_machines)
        if self.tflops_machines and self.tflops_machines != self.run_machines:
            d["tflops_machines"] = list(self.tflops_machines)  # else: the same as run_machines
        if self.behind:
            d["behind"] = dict(self.behind)
        return d


@dataclass(frozen=True)
class BaselineCase:
    mode: str
    case: Case
    ratio: float | None
    providers: dict[str, ProviderFigures]
    noise: Noise
    tuning: dict | None = None

    @property
    def key(self) -> str:
        return self.case.key(self.mode)

    def ratio_on(self, machine: str) -> float | None:
        """The speed ratio `machine` itself measured in the calibration (median of its
        runs), else the pooled figure: on a calibration machine the gate compares with
        that machine's own runs, not with a median that other hosts pulled away."""
        own = [x for x, m in zip(self.noise.ratio_runs, self.noise.run_machines) if m == machine]
        return stats.median(own) if own else self.ratio

    def tflops_on(self, machine: str) -> float | None:
        own = [x for x, m in zip(self.noise.tflops_runs, self.noise.tflops_machines)
               if m == machine]
        return stats.median(own) if own else self.providers["triton"].tflops

    def runs_on(self, machine: str, figure: str = "ratio") -> int:
        """How many runs the figure `ratio_on` (`tflops_on`: figure "tflops") gives
        `machine` is the median of: its own runs, else the pooled runs the file lists (0
        where it lists none)."""
        n = self.noise
        runs, machines = (n.ratio_runs, n.run_machines) if figure == "ratio" else \
            (n.tflops_runs, n.tflops_machines)
        own = sum(m == machine for m in machines)
        return own or len(runs)

    def to_json(self) -> dict:
        d = {"mode": self.mode, "m": self.case.m, "n": self.case.n, "k": self.case.k,
             "layout": self.case.layout_id, "ratio": self.ratio,
             "providers": {n: p.to_json() for n, p in self.providers.items()},
             "noise": self.noise.to_json()}
        if self.tuning is not None:
            d["tuning"] = self.tuning
        return d


@dataclass(frozen=True)
class Baseline:
    chip: str
    provenance: dict
    cases: dict[str, BaselineCase]

    @property
    def machines(self) -> frozenset[str]:
        """Every machine (host/GPU) some calibration run of this baseline ran on."""
        return frozenset(m for c in self.cases.values() for m in c.noise.run_machines)

    @property
    def has_ab_noise(self) -> bool:
        return any(c.noise.ab is not None for c in self.cases.values())

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "version": VERSION, "chip": self.chip,
                "provenance": self.provenance,
                "cases": {k: c.to_json() for k, c in self.cases.items()}}


def default_path(chip_id: str) -> Path:
    return Path("baselines") / f"{chip_id}.json"


def load(path: str | Path, chip_id: str | None = None) -> Baseline:
    p = Path(path)
    if not p.exists():
        raise BaselineError(f"no baseline at {p}: create one with `gemmgate baseline "
                            f"calibrate --chip {chip_id or '<chip>'}`")
    try:
        text = read_text(p, "baseline")
    except (OSError, ValueError) as e:   # read_text's message names the file already
        raise BaselineError(str(e) if isinstance(e, ValueError)
                            else f"cannot read baseline {p}: {e}") from None
    try:
        data = json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant,
                          parse_float=_finite)
    except (ValueError, RecursionError) as e:   # (nested past the parser's depth, too)
        raise BaselineError(f"baseline {p} is corrupt (not JSON: {e})") from None
    base = from_json(data, str(p))
    if chip_id is not None and base.chip != chip_id:
        raise BaselineError(f"baseline {p} is for chip {base.chip}, not {chip_id}")
    return base


def _unique(pairs: list) -> dict:
    """A JSON object whose keys are each given once: a case key given twice was read as
    its last copy, silently (a review); gemmgate never writes one."""
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} is given twice in one object")
        out[k] = v
    return out


def _no_constant(name: str):
    """NaN, Infinity, -Infinity: not JSON, and gemmgate never writes them (allow_nan=False),
    so a file holding one was edited; read, one passed validation and the next write of
    the file failed after measuring (a review)."""
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number that a float holds: 1e400 read as inf, and the next write failed as
    NaN did (a review)."""
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is past a float's range")
    return x


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise BaselineError(f"baseline {where} is corrupt: {what}")


def _positive(x, zero: bool = False) -> bool:
    return real_number(x) and (x >= 0 if zero else x > 0)   # (an integer past a float's range:
    # not a number here, as a run file's; it raised OverflowError, exit 1, a review)


# The least figure a check divides by (a speed ratio, Triton's TFLOP/s, their runs): a
# run's times lie within 1e-6 to 1e7 ms (results.MIN_SAMPLE_MS, MAX_SAMPLE_MS), so no
# measured ratio or TFLOP/s of a case of 2 FLOPs or more is near it. A subnormal figure
# (5e-324) passed as positive, the change against it was inf, and the check, its cases
# measured, ended at writing --json: exit 2, the cases lost (a review).
MIN_FIGURE = 1e-30


def _figure(x, zero: bool = False) -> bool:
    """A figure a change is taken against: finite, positive (or 0 where `zero`: none
    measured), at least MIN_FIGURE."""
    return _positive(x, zero) and (x >= MIN_FIGURE or (zero and x == 0))


def _opt(x):
    """An optional number as stored: None, a number, or an error string ('inf', 'nan')."""
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def from_json(data, where: str = "<data>") -> Baseline:
    """The typed baseline of a file's JSON; BaselineError names the file and the field."""
    _need(isinstance(data, dict), where, "top level is not an object")
    if isinstance(data.get("schema"), str) and data["schema"].startswith("gemmgate.") and \
            data["schema"] != SCHEMA:   # another of gemmgate's files: say which
        raise BaselineError(f"{where} is not a baseline: it is a {data['schema']} file "
                            f"(a baseline's schema is {SCHEMA!r}: `gemmgate baseline "
                            "calibrate` writes one)")
    _need(data.get("schema") == SCHEMA, where, f"schema is {data.get('schema')!r}, "
                                               f"expected {SCHEMA!r}")
    if type(data.get("version")) is not int or data["version"] != VERSION:   # (true and
        # 1.0 equal 1 in Python and were read as version 1; a review)
        raise BaselineError(f"baseline {where} has schema version {data.get('version')!r}; "
                            f"this gemmgate reads version {VERSION}: recalibrate it")
    _need(isinstance(data.get("chip"), str), where, "no chip id")
    prov = data.get("provenance")
    _need(isinstance(prov, dict), where, "no provenance")
    # the fields a check takes its defaults from (`gemmgate check` without --shapes ...)
    _need(prov.get("shapes") is None or isinstance(prov["shapes"], str), where,
          f"provenance.shapes is {prov.get('shapes')!r}, not a shape set")
    modes = prov.get("modes")
    _need(modes is None or (isinstance(modes, list) and all(m in MODE_NAMES for m in modes)),
          where, f"provenance.modes is {modes!r}, not a list of mode names "
                 f"({', '.join(MODE_NAMES)})")
    block = prov.get("block")
    _need(block is None or (isinstance(block, int) and not isinstance(block, bool)
                            and 1 <= block <= MAX_BLOCK), where,
          f"provenance.block is {block!r}, not 1 to {MAX_BLOCK}")
    _check_provenance(prov, where)
    cases = data.get("cases")
    _need(isinstance(cases, dict), where, "no cases object")
    legacy = f"legacy:{str(prov.get('commit') or prov.get('date') or '?')[:10]}"
    return Baseline(data["chip"], prov,
                    {k: _case(k, c, where, legacy) for k, c in cases.items()})


MAX_NOISE = 1e6   # a noise figure (a relative spread) past any a run could measure
MAX_RUNS = 10**6   # runs behind a case: past any calibration or merge of a fleet's


def _strings(x, none: bool = False) -> bool:
    return isinstance(x, list) and all(isinstance(s, str) or (none and s is None) for s in x)


def _check_provenance(prov: dict, where: str) -> None:
    """The provenance fields merges, updates and `--ab-ref baseline` read (a wrong type
    raised a bare TypeError there, after measuring; a review)."""
    for f in ("commit", "date", "kept_from", "timing"):   # (timing: a merge's dict key)
        _need(prov.get(f) is None or isinstance(prov[f], str), where,
              f"provenance.{f} is {prov.get(f)!r}, not a string")
    runs = prov.get("runs")
    _need(runs is None or (type(runs) is int and runs >= 0), where,
          f"provenance.runs is {runs!r}, not a whole number >= 0")
    machines = prov.get("machines")
    _need(machines is None or (isinstance(machines, dict) and all(
        isinstance(m, dict) for m in machines.values())), where,
          "provenance.machines is not an object of machine records")
    _need(prov.get("run_ids") is None or _strings(prov["run_ids"]), where,
          "provenance.run_ids is not a list of run ids")
    _need(prov.get("merged_from") is None or _strings(prov["merged_from"], none=True),
          where, "provenance.merged_from is not a list of commits")


def _case(key: str, c, where: str, legacy: str) -> BaselineCase:
    _need(isinstance(c, dict), where, f"case {key} is not an object")
    for f in ("mode", "m", "n", "k", "layout", "providers", "noise"):
        _need(f in c, where, f"case {key} lacks {f!r}")
    try:
        case = case_from_json(c, f"case {key}")
    except ResultsError as e:
        raise BaselineError(f"baseline {where} is corrupt: {e}") from None
    _need(key == case.key(c["mode"]), where,
          f"case {key} holds {case.key(c['mode'])} (key and fields disagree)")
    r = c.get("ratio")
    _need(r is None or _figure(r), where, f"case {key} has a bad ratio {r!r}")
    _need(isinstance(c["providers"], dict), where, f"case {key}: providers is not an object")
    t = c["providers"].get("triton")
    _need(isinstance(t, dict) and _positive(t.get("median_ms")), where,
          f"case {key} lacks triton median_ms > 0")
    provs = {}
    for name, p in c["providers"].items():
        _need(isinstance(p, dict) and _positive(p.get("median_ms")), where,
              f"case {key}: providers.{name}.median_ms is missing or not > 0")
        tf = p.get("tflops")
        _need(tf is None or _figure(tf, zero=True), where,
              f"case {key}: providers.{name}.tflops is {tf!r}, not 0 or a number from "
              f"{MIN_FIGURE:g}")
        q = p.get("quantiles_ms", {})
        _need(isinstance(q, dict) and all(_positive(x, zero=True) for x in q.values()), where,
              f"case {key}: providers.{name}.quantiles_ms is not an object of times")
        e = p.get("error")   # (checked as a run file's is: a negative or a word was drawn
        _need(e is None or e in ("nan", "inf") or _positive(e, zero=True), where,  # or lost)
              f"case {key}: providers.{name}.error is {e!r}, not a relative error >= 0")
        provs[name] = ProviderFigures(p["median_ms"], tf, _opt(e), q)
    noise = c["noise"]
    _need(isinstance(noise, dict), where, f"case {key}: noise is not an object")
    for f in NOISE_LEVELS:   # (1e308 scaled to
        _need(noise.get(f) is None or (_positive(noise[f], zero=True)   # an inf tolerance)
                                       and noise[f] <= MAX_NOISE), where,
              f"case {key} has a bad noise.{f} {noise.get(f)!r}")
    runs = {}
    for f in ("ratio_runs", "tflops_runs", "ab_runs"):
        xs = noise.get(f, [])
        _need(isinstance(xs, list) and all(_figure(x) for x in xs), where,
              f"case {key}: noise.{f} is not a list of positive numbers "
              f"(from {MIN_FIGURE:g})")
        runs[f] = tuple(xs)
    machines = noise.get("run_machines") or [legacy] * len(runs["ratio_runs"])
    _need(isinstance(machines, list) and len(machines) == len(runs["ratio_runs"])
          and all(isinstance(m, str) for m in machines), where,
          f"case {key}: noise.run_machines does not name one machine per ratio run")
    tf_machines = noise.get("tflops_machines") or (
        machines if len(machines) == len(runs["tflops_runs"]) else [legacy] * len(
            runs["tflops_runs"]))
    _need(isinstance(tf_machines, list) and len(tf_machines) == len(runs["tflops_runs"])
          and all(isinstance(m, str) for m in tf_machines), where,
          f"case {key}: noise.tflops_machines does not name one machine per TFLOP/s run")
    n_runs = noise.get("runs", len(runs["ratio_runs"]))
    # (a merge weighs each part's figures by its runs, one list entry a run: 10**12 ran
    # out of memory after minutes; True passed as 1; a review)
    _need(type(n_runs) is int and 0 <= n_runs <= MAX_RUNS, where,
          f"case {key}: noise.runs is {n_runs!r}, not a whole number of runs from 0 to "
          f"{MAX_RUNS:g}")
    behind = noise.get("behind", {})
    _need(isinstance(behind, dict) and all(
        f in NOISE_LEVELS and isinstance(x, int) and not isinstance(x, bool) and x >= 1
        and noise.get(f) is not None for f, x in behind.items()), where,
          f"case {key}: noise.behind is {behind!r}, not runs >= 1 per stored noise level")
    tun = c.get("tuning")
    _need(tun is None or (isinstance(tun, dict) and isinstance(tun.get("key"), str)
                          and isinstance(tun.get("config"), dict)), where,
          f"case {key} has a bad tuning record")
    return BaselineCase(c["mode"], case, r, provs, Noise(
        noise.get("ratio"), noise.get("tflops"), noise.get("ab"), noise.get("machine"),
        noise.get("tflops_machine"), runs["ratio_runs"], runs["tflops_runs"],
        runs["ab_runs"], tuple(machines), n_runs, tuple(tf_machines), dict(behind)), tun)
