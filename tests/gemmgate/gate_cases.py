"""What the gate's tests share (imported as tests.gemmgate.gate_cases): CaseResult
objects with synthetic samples_ms and baselines written as the file's JSON, read through
`baseline_schema.from_json` as `check` reads them. No timing, no torch work.

Samples: Triton ~1.0 ms and vendor ~0.9 ms per round with 0.3% seeded Gaussian noise,
so the speed ratio vendor/triton is ~0.9 with a tight CI. Unless a test says otherwise
the baseline was calibrated on HOST and the run is on HOST (ENV): the stored judgement
is at process level.
"""

import random

from gemmgate.baseline_schema import from_json
from gemmgate.compare import DEFAULT_FLOOR
from gemmgate.gate import CaseVerdict, GateResult, compare_run
from gemmgate.results import CaseResult, ProviderResult
from gemmgate.shapes import Case

A, B, C = Case(64, 64, 64), Case(48, 80, 72), Case(32, 64, 48, "rc", 5)
N = 30
HOST = "ci-host"
ENV = {"chip": "cpu", "host": HOST}


def times(seed: int, ms: float, n: int = N, rel: float = 0.003) -> tuple[float, ...]:
    rng = random.Random(seed)
    return tuple(ms * (1 + rng.gauss(0, rel)) for _ in range(n))


def result(case: Case, t_ms=1.0, v_ms=0.9, seed=0, mode="fp32", t_acc="pass",
           v_acc="pass", t_samples=None, v_samples=None) -> CaseResult:
    ts = t_samples if t_samples is not None else times(seed, t_ms)
    vs = v_samples if v_samples is not None else (
        () if v_acc == "unsupported" else times(seed + 1, v_ms))
    provs = {"triton": ProviderResult("triton", t_acc, 1e-7, "" if t_acc == "pass" else
                                      "error 3e-1 > 1e-2", ts),
             "vendor": ProviderResult("vendor", v_acc, 1e-7, "", vs)}
    return CaseResult(mode, case, provs)


def base_case(case: Case, ratio=0.9, t_ms=1.0, noise_ratio=None, noise_tflops=None,
              mode="fp32", machines=(HOST,) * 5, machine=None, tflops_machine=None) -> dict:
    """One case as the file holds it: `machines` names the machine of each calibration
    run (its ratio_runs all `ratio`); `machine`, `tflops_machine` the machine-level
    noise (present once the runs came from two or more machines). A noise figure given
    is one its runs do not give (they agree): kept from a calibration of `runs` runs
    (`baseline_noise.figure_runs`), five by default (the factor NOISE_FACTOR)."""
    tf = case.flops / (t_ms * 1e-3) / 1e12
    runs = list(machines) if ratio else []
    noise = {"ratio": noise_ratio, "tflops": noise_tflops, "runs": max(len(machines), 5),
             "ratio_runs": [ratio] * len(runs), "run_machines": runs}
    if machine is not None or tflops_machine is not None:
        noise.update(machine=machine, tflops_machine=tflops_machine)
    return {"mode": mode, "m": case.m, "n": case.n, "k": case.k, "layout": case.layout_id,
            "ratio": ratio,
            "providers": {"triton": {"median_ms": t_ms, "quantiles_ms": {}, "tflops": tf,
                                     "error": 1e-7}},
            "noise": noise}


def baseline(**cases: dict) -> dict:
    data = {"schema": "gemmgate.baseline", "version": 1, "chip": "cpu",
            "provenance": {"shapes": "smoke", "modes": ["fp32"], "runs": 3},
            "cases": {f"fp32-{k}": v for k, v in cases.items()}}
    from_json(data)  # the gate only ever sees validated baselines
    return data


def compare_json(results, base: dict, floor=DEFAULT_FLOOR, env=ENV) -> GateResult:
    """compare_run on the typed baseline `check` would load from this JSON."""
    return compare_run(results, from_json(base, "test"), floor, env)


def one_verdict(results, base, floor=DEFAULT_FLOOR, env=ENV) -> tuple[GateResult, CaseVerdict]:
    gate = compare_json(results, base, floor, env)
    assert len(gate.verdicts) == 1
    return gate, gate.verdicts[0]


def mixed() -> GateResult:
    """Four cases: regressed, unchanged, improved and one that failed accuracy, and one
    baseline case not run."""
    base = baseline(**{A.id: base_case(A, 0.95), B.id: base_case(B, 0.9),
                       C.id: base_case(C, 0.85), "m1-n1-k1": base_case(Case(1, 1, 1))})
    rs = [result(A, seed=1), result(B, seed=2), result(C, seed=3),
          result(Case(8, 8, 8), seed=4, t_acc="fail")]
    base["cases"]["fp32-m8-n8-k8"] = base_case(Case(8, 8, 8))
    return compare_json(rs, base)
