"""The results model: one case's measurement and a run's record, as typed objects that
read and write the run JSON (`gemmgate run --json`, schema "gemmgate.run/1").

Everything that reads a run file (calibration runs from fresh processes, baselines,
trials, reports) goes through `RunRecord.load`, which validates as it reads: an unknown
mode, a non-integer dimension or a provider lacking a field is a `ResultsError`
(exit 2) that names the file and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gemmgate import stats
from gemmgate.accuracy import FAIL, PASS
from gemmgate.case import MAX_DIM
from gemmgate.files import head_holds, read_text
from gemmgate.precision import MODES
from gemmgate.shapes import Case
from gemmgate.stats import MAX_BLOCK

REFERENCE = "reference"   # the kernel at another commit, timed beside triton (A/B)
GATED = ("triton", "vendor")   # the pair the gate and baselines compare; others are extras
UNSUPPORTED = "unsupported"
STATUSES = (PASS, FAIL, "downgraded", UNSUPPORTED)
RUN_SCHEMA = "gemmgate.run/1"


# Past what any call or chip measures (1 ns to 2.8 hours a call; 1 EFLOP/s): a 1e-200 ms
# sample against a 1e200 one made an infinite ratio, and the report's plots raised an
# OverflowError with exit 1 (a review of hand-edited files)
MIN_SAMPLE_MS, MAX_SAMPLE_MS, MAX_TFLOPS = 1e-6, 1e7, 1e6


class ResultsError(ValueError):
    """A run file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class ProviderResult:
    name: str
    accuracy: str                        # pass | fail | downgraded | unsupported
    error: float | None = None
    message: str = ""
    samples_ms: tuple[float, ...] = ()
    tflops: float | None = None
    excess: float | None = None          # beyond the output's own rounding (16-bit outputs)
    block: int = 1                       # its case's (`CaseResult` sets it): calls a round
    block_excess: float | None = None    # `excess` in the output's worst block (recorded)
    element: float | None = None         # the worst element's error over a typical
    #                                      element's size (accuracy.Errors.element)

    @property
    def rounds_ms(self) -> list[float]:
        """One time a round: with `block` > 1 each round's calls as their median."""
        return stats.block_medians(self.samples_ms, self.block)

    @property
    def median_ms(self) -> float | None:
        """The rounds' median, as the TFLOP/s figure and the gate take it (over every call
        of a blocked run it was another median, and baselines, tuning tables and sweeps
        stored that one; a review)."""
        return stats.median(self.rounds_ms) if self.samples_ms else None

    def to_json(self) -> dict:
        d = {"accuracy": self.accuracy, "error": _num(self.error), "message": self.message,
             "median_ms": self.median_ms, "tflops": self.tflops, "n": len(self.samples_ms),
             "samples_ms": list(self.samples_ms), "excess": _num(self.excess),
             "block_excess": _num(self.block_excess), "element": _num(self.element)}
        d["quantiles_ms"] = stats.quantiles(self.rounds_ms) if self.samples_ms else {}
        return d

    @classmethod
    def from_json(cls, name: str, d, where: str) -> ProviderResult:
        _need(isinstance(d, dict), where, "is not an object")
        for f in ("accuracy", "error", "samples_ms", "tflops"):
            _need(f in d, f"{where}.{f}", "is missing")
        _need(d["accuracy"] in STATUSES, f"{where}.accuracy",
              f"is {d['accuracy']!r}, not one of {', '.join(STATUSES)}")
        samples = d["samples_ms"]
        _need(isinstance(samples, list) and all(
            real_number(x) and (x == 0 or MIN_SAMPLE_MS <= x <= MAX_SAMPLE_MS) for x in samples),
              f"{where}.samples_ms", f"is not a list of times in ms (0, or {MIN_SAMPLE_MS:g} "
              f"to {MAX_SAMPLE_MS:g})")
        err = _error_of(d, "error", where)
        tf = d["tflops"]
        _need(tf is None or (real_number(tf) and 0 <= tf <= MAX_TFLOPS), f"{where}.tflops",
              f"is {tf!r}, not a number from 0 to {MAX_TFLOPS:g}")
        msg = d.get("message")
        _need(msg is None or isinstance(msg, str), f"{where}.message", "is not text")
        # excess, block_excess and element are optional: runs before sessions 58, 70 and
        # 79 have none
        return cls(name, d["accuracy"], err, msg or "", tuple(float(x) for x in samples), tf,
                   _error_of(d, "excess", where),
                   block_excess=_error_of(d, "block_excess", where),
                   element=_error_of(d, "element", where, "an error"))


@dataclass(frozen=True)
class CaseResult:
    mode: str
    case: Case
    providers: dict[str, ProviderResult]
    peak_tflops: float | None = None
    telemetry: dict = field(default_factory=dict)
    worker: str = ""                     # device and process that measured it
    block: int = 1                       # calls of a provider in a row a round (--block)

    def __post_init__(self) -> None:   # the case's block is its providers' (`median_ms`)
        if any(p.block != self.block for p in self.providers.values()):
            object.__setattr__(self, "providers", {
                k: replace(p, block=self.block) for k, p in self.providers.items()})

    @property
    def empty_output(self) -> bool:
        """M or N is 0: the call computes nothing; accuracy is checked, speed is not."""
        return not self.case.m * self.case.n

    @property
    def ratio_samples(self) -> tuple[float, ...]:
        """Per-round speed ratios vendor_time / triton_time (> 1: Triton faster)."""
        return self.paired("vendor")

    def paired(self, name: str) -> tuple[float, ...]:
        """Per-round name_time / triton_time: the providers are timed interleaved, sample i
        of each from the same round (gemmgate/timing.py), so drift that hits both cancels.
        Empty for an empty output (M or N zero): both time a call that computes nothing, and
        a ratio of two such calls would enter the geomean as if it were a GEMM's."""
        if self.empty_output:
            return ()
        t, o = self.round_ms("triton"), self.round_ms(name)
        return tuple(oi / ti for ti, oi in zip(t, o) if ti > 0 and oi > 0)

    def round_ms(self, name: str) -> list[float]:
        """A provider's samples one a round: with `block` > 1 each round's calls in a row
        as their median (`stats.block_medians`): the rounds are what is independent, and a
        CI over every call was too narrow."""
        return self.providers[name].rounds_ms

    @property
    def ab_samples(self) -> tuple[float, ...]:
        """Per-round reference_time / triton_time (A/B: > 1 means the current kernel is
        faster than the reference commit's); empty without a reference."""
        return self.paired(REFERENCE) if REFERENCE in self.providers else ()

    @property
    def ab_median(self) -> float | None:
        return stats.median(self.ab_samples) if self.ab_samples else None

    @property
    def ratio(self) -> float | None:
        return self.ratio_to("vendor")

    def ratio_to(self, name: str) -> float | None:
        """Speed ratio name_time / triton_time (> 1: Triton faster): the median of the
        per-round ratios (`paired`), the figure the gate judges (gemmgate/gate.py), so that
        a baseline stores what a check measures; None without paired rounds. (The ratio of
        the two medians is another estimator: where rounds fall in two clock states it
        sits between them, 4% off the paired median in tests/gemmgate/test_results.py.)"""
        pairs = self.paired(name)
        return stats.median(pairs) if pairs else None

    @property
    def extras(self) -> tuple[str, ...]:
        """Providers beyond triton, vendor and the A/B reference (--providers): shown
        beside them, never judged by the gate nor stored in a baseline."""
        return tuple(n for n in self.providers if n not in GATED and n != REFERENCE)

    @property
    def pct_peak(self) -> float | None:
        f = self.providers["triton"].tflops
        return 100.0 * f / self.peak_tflops if f and self.peak_tflops else None

    @property
    def passed(self) -> bool:
        judged = (p for n, p in self.providers.items() if n != REFERENCE)  # not under test
        return all(p.accuracy in (PASS, UNSUPPORTED) for p in judged) \
            and self.providers["triton"].accuracy == PASS

    @property
    def gate_passed(self) -> bool:
        """`passed` for triton and vendor only: what the gate and baselines go by."""
        return self.providers["triton"].accuracy == PASS \
            and self.providers["vendor"].accuracy in (PASS, UNSUPPORTED)

    @property
    def key(self) -> str:
        return self.case.key(self.mode)

    def to_json(self) -> dict:
        return {"id": self.key, "mode": self.mode, "m": self.case.m, "n": self.case.n,
                "k": self.case.k, "layout": self.case.layout_id, "passed": self.passed,
                "ratio": self.ratio, "pct_peak": self.pct_peak,
                "ratio_samples": list(self.ratio_samples),
                "ratios": {n: self.ratio_to(n) for n in ("vendor",) + self.extras},
                "providers": {k: p.to_json() for k, p in self.providers.items()},
                "peak_tflops": self.peak_tflops,
                "telemetry": self.telemetry, "worker": self.worker}

    @classmethod
    def from_json(cls, d, where: str, block: int = 1) -> CaseResult:
        _need(isinstance(d, dict), where, "is not an object")
        case = case_from_json(d, where)
        provs = d.get("providers")
        _need(isinstance(provs, dict), f"{where}.providers", "is missing or not an object")
        for name in ("triton", "vendor"):
            _need(name in provs, f"{where}.providers.{name}", "is missing")
        providers = {n: ProviderResult.from_json(n, p, f"{where}.providers.{n}")
                     for n, p in provs.items()}
        tele = d.get("telemetry", {})
        _need(isinstance(tele, dict), f"{where}.telemetry", "is not an object")
        # the tile record a baseline built from the run stores (a merge of one without a
        # config was a KeyError traceback, exit 1: a regression's code; a review)
        tun = tele.get("tuning")
        _need(tun is None or (isinstance(tun, dict) and isinstance(tun.get("key"), str)
                              and isinstance(tun.get("config"), dict)),
              f"{where}.telemetry.tuning", "is not a tile record (key, config)")
        peak = d.get("peak_tflops")
        _need(peak is None or (real_number(peak) and peak > 0), f"{where}.peak_tflops",
              f"is {peak!r}, not a number > 0")
        res = cls(d["mode"], case, providers, peak, tele, str(d.get("worker", "")), block)
        for n, p in res.providers.items():   # run.py makes it of the case's FLOPs and the
            # rounds' median: none without both (a hand-made one on an M 0 case passed,
            # and the report stopped part-drawn, its figures written, on matplotlib's "Data
            # cannot be log-scaled", naming no file; a review)
            _need(not p.tflops or bool(case.flops and p.median_ms),
                  f"{where}.providers.{n}.tflops", f"is {p.tflops!r} where "
                  + ("the case computes no FLOPs" if not case.flops else "nothing was timed")
                  + ": a figure nothing measured (run files hold null there)")
        return res


@dataclass(frozen=True)
class RunRecord:
    """A run: the environment it ran in, the shape set's label, and its cases."""
    environment: dict
    shapes: str
    cases: tuple[CaseResult, ...]

    def to_json(self) -> dict:
        return {"schema": RUN_SCHEMA, "environment": self.environment, "shapes": self.shapes,
                "summary": summary_by_mode(self.cases),
                "cases": [r.to_json() for r in self.cases]}

    @classmethod
    def from_json(cls, data, where: str = "<run>") -> RunRecord:
        _need(isinstance(data, dict), where, "top level is not an object")
        _need(data.get("schema") == RUN_SCHEMA, f"{where}: schema",
              f"is {data.get('schema')!r}, expected {RUN_SCHEMA!r}")
        env = data.get("environment")
        _need(isinstance(env, dict), f"{where}: environment", "is missing")
        cases = data.get("cases")
        _need(isinstance(cases, list), f"{where}: cases", "is missing or not a list")
        for f in _ENV_STRINGS:
            _need(env.get(f) is None or isinstance(env[f], str),
                  f"{where}: environment.{f}", f"is {env.get(f)!r}, not a string")
        gpus = env.get("gpus")   # read by baselines' machine records (a bare TypeError,
        # "'NoneType' object is not iterable", naming no file: a review)
        _need(gpus is None or (isinstance(gpus, list) and all(isinstance(g, dict)
                                                               for g in gpus)),
              f"{where}: environment.gpus", f"is {gpus!r}, not a list of GPU records")
        block = env.get("block", 1)   # runs before --block have none: strict alternation
        _need(isinstance(block, int) and not isinstance(block, bool)
              and 1 <= block <= MAX_BLOCK, f"{where}: environment.block",
              f"is {block!r}, not 1 to {MAX_BLOCK}")
        # a check's --inject-slowdown (0 to 10): a word ("0.5") read as none made a slowed
        # check the report's headline where `trials` and `baseline merge` refused it, and
        # an integer past a float's range was an OverflowError there (a review)
        inj = env.get("inject_slowdown")
        _need(inj is None or (real_number(inj) and 0 <= inj <= 10),
              f"{where}: environment.inject_slowdown", f"is {inj!r}, not a number from 0 "
              "to 10 (check --inject-slowdown)")
        got = tuple(CaseResult.from_json(c, f"{where}: cases[{i}]", block)
                    for i, c in enumerate(cases))
        seen: set[str] = set()
        for i, c in enumerate(got):   # a case twice would count twice in its geomean
            _need(c.key not in seen, f"{where}: cases[{i}]", f"repeats case {c.key}")
            seen.add(c.key)
        return cls(env, str(data.get("shapes", "")), got)

    @classmethod
    def stopped_before_cases(cls, reason: str, shapes: str = "") -> RunRecord:
        """A run stopped before its first case: no case, marked incomplete."""
        return cls({"incomplete": f"{reason} before the first case"}, shapes, ())

    @classmethod
    def load(cls, path: str | Path) -> RunRecord:
        return cls.from_json(run_file_data(path), str(path))


def run_file_data(path: str | Path):
    """A run file's parsed JSON, unvalidated (RunRecord.from_json validates it)."""
    text = read_text(path, "run file")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:   # not JSON, an integer past Python's
        # 4300 digits, or arrays nested past the parser's depth
        raise ResultsError(f"run file {path} is not JSON ({e})") from None
    bad = _non_finite(data)   # gemmgate writes none (allow_nan=False): a NaN in a field
    # no check reads (telemetry, machine_id) reached a merge's write of the baseline, "Out
    # of range float values are not JSON compliant: nan", naming no file (a review)
    if bad is not None:
        raise ResultsError(f"run file {path}: {bad} is NaN or Infinity, not a JSON number "
                           "(gemmgate writes such a value as null or as text)")
    return data


def _non_finite(data) -> str | None:
    """The path of the first NaN or Infinity in parsed JSON `data`, else None (a loop, not
    recursion: the parser takes arrays nested nearly as deep as Python's stack)."""
    todo = [(data, "")]
    while todo:
        x, where = todo.pop()
        if isinstance(x, float) and not math.isfinite(x):
            return where or "the top level"
        items = x.items() if isinstance(x, dict) else \
            enumerate(x) if isinstance(x, list) else ()
        todo.extend(reversed([(v, f"{where}[{k}]" if isinstance(k, int) else
                               f"{where}.{k}" if where else str(k)) for k, v in items]))
    return None


# what baselines, merges and reports read of a run's environment as text (a chip of 5 or
# a commit of 7 raised a bare TypeError in a merge, naming the output file; a review)
_ENV_STRINGS = ("chip", "commit", "date", "host", "timing", "run_id", "device_name")



def case_from_json(d: dict, where: str) -> Case:
    """The case of a run or baseline entry: mode known, dimensions integers >= 0."""
    mode = d.get("mode")
    _need(isinstance(mode, str) and mode in MODES, f"{where}.mode",
          f"is {mode!r}, not one of {', '.join(MODES)}")
    for f in ("m", "n", "k"):
        x = d.get(f)
        _need(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_DIM,
              f"{where}.{f}", f"is {x!r}, not an integer in [0, 2**40)")
    layout = d.get("layout")
    _need(isinstance(layout, str), f"{where}.layout", "is missing")
    base, sep, pad = layout.partition("+p")
    # ASCII digits, as a shape file's (int() took "1_6" as 16 and "１" as 1: the case read
    # was not the one the file names; a review)
    _need(not sep or re.fullmatch(r"[0-9]+", pad) is not None, f"{where}.layout",
          f"{layout!r}: the pad after +p is not a whole number")
    try:
        return Case(d["m"], d["n"], d["k"], base, int(pad) if pad else 0)
    except ValueError as e:
        raise ResultsError(f"{where}.layout {layout!r}: {e}") from None


def _error_of(d: dict, field: str, where: str, what: str = "a relative error") -> float | None:
    """A provider's error field: None (absent or null), a number >= 0, or "nan"/"inf"
    (`_num` writes those) as a float; ResultsError naming it otherwise."""
    x = d.get(field)
    _need(x is None or (real_number(x) and x >= 0) or x in ("nan", "inf"),
          f"{where}.{field}", f"is {x!r}, not {what} >= 0")
    return None if x is None else float(x)


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ResultsError(f"{where} {what}")


def real_number(x) -> bool:
    """A finite JSON number. An integer past a float's range (400 digits: JSON reads it as
    an int, not as inf) is none: math.isfinite raised OverflowError, a traceback with
    exit 1 where a field's message and exit 2 were due (a review)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _num(x: float | None):
    return None if x is None else (x if math.isfinite(x) else str(x))


def failures(results: Sequence[CaseResult]) -> list[CaseResult]:
    return [r for r in results if not r.passed]


def summary_by_mode(results: Sequence[CaseResult]) -> dict[str, dict]:
    """Geomean speed ratio and pass counts per mode; with extra providers, the geomean
    Triton/that provider ratio of each too ("geomean_ratios"). A geomean is over the cases
    both its providers passed: a kernel that computes wrong, or skips work, does not
    count toward it (it did, session 57)."""
    by: dict[str, list[CaseResult]] = {}
    for r in results:
        by.setdefault(r.mode, []).append(r)
    out = {}
    for m, rs in by.items():
        out[m] = {"cases": len(rs), "passed": sum(r.passed for r in rs),
                  "geomean_ratio": _geomean([r.ratio for r in rs if r.gate_passed])}
        extras = dict.fromkeys(n for r in rs for n in r.extras)
        if extras:
            out[m]["geomean_ratios"] = {
                n: _geomean([r.ratio_to(n) for r in rs if n in r.providers
                             and r.providers[n].accuracy == PASS
                             and r.providers["triton"].accuracy == PASS]) for n in extras}
    return out


def _geomean(xs: Sequence[float | None]) -> float | None:
    g = stats.geomean([x for x in xs if x])
    return None if math.isnan(g) else g


def holds_a_run(path: str | Path | None) -> bool:
    """Whether `path` is a regular file that starts as a run file (`RunRecord.to_json`):
    an earlier run's --json, which a run stopped before its outputs were checked may mark
    stopped (nothing else is written over then). Only a regular file is read."""
    return head_holds(path, f'"schema": "{RUN_SCHEMA}"')
