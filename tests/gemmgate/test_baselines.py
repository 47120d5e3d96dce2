"""gemmgate/baselines.py: load/validate error paths, build from RunRecords, the three
noise levels (process, machine, A/B), carry_noise, combine (`baseline merge`), atomic
save, summary. Pure file work on tmp_path with synthetic data (no timing).

Runs are made the way `gemmgate run --json` makes them: CaseResult objects with
synthetic samples_ms through RunRecord.to_json, a JSON round-trip, RunRecord.from_json.
The schema's own field checks are in test_baseline_schema.py.
"""

import json
import math
import os
import re
from dataclasses import FrozenInstanceError, replace

import pytest

from gemmgate import baselines, stats
from gemmgate.baseline_provenance import commits, recorded_commit, recorded_commits, unlike_kept
from gemmgate.baselines import Baseline, BaselineError
from gemmgate.compare import aa_noise
from gemmgate.results import CaseResult, ProviderResult, RunRecord
from gemmgate.shapes import Case

HOST = "ci-a"
ENV = {"chip": "cpu", "device_name": "x86_64", "timing": "wall", "torch": "2.13.0+cpu",
       "triton": "3.9.0", "interpreter": True, "commit": "abc123", "host": HOST}
C1, C2 = Case(32, 32, 32), Case(48, 16, 64, "cr")
K1, K2 = "fp32-m32-n32-k32", "fp16-m48-n16-k64-cr"


def _provider(name: str, samples: list[float], case: Case, error: float = 1e-7,
              accuracy: str = "pass") -> ProviderResult:
    med = stats.median(samples) if samples else None
    tf = case.flops / (med * 1e-3) / 1e12 if med else None
    return ProviderResult(name, accuracy, error, "", tuple(samples), tf)


def make_result(case: Case, t_ms: list[float], v_ms: list[float] | None,
                mode: str = "fp32", error: float = 1e-7, gpu: str | None = None) -> CaseResult:
    provs = {"triton": _provider("triton", t_ms, case, error)}
    provs["vendor"] = (_provider("vendor", v_ms, case, error) if v_ms is not None
                       else ProviderResult("vendor", "unsupported", message="no vendor"))
    return CaseResult(mode, case, provs, None, {"gpu_uuid": gpu} if gpu else {})


def make_run(results: list[CaseResult], shapes: str = "s.csv", **env) -> RunRecord:
    """What `gemmgate run --json` writes, read back (environment ENV, changed by `env`)."""
    data = json.loads(json.dumps(_rj({**ENV, **env}, results, shapes)))
    return RunRecord.from_json(data, "run")


def _runs3(**env) -> list[RunRecord]:
    """Three runs of two cases; run r scales Triton's times by (1, 1.02, 0.99)[r]."""
    runs = []
    for scale in (1.0, 1.02, 0.99):
        runs.append(make_run([
            make_result(C1, [1.0 * scale, 1.1 * scale, 0.9 * scale], [0.9, 0.95, 0.85]),
            make_result(C2, [2.0 * scale, 2.2 * scale, 2.1 * scale], [4.0, 4.4, 4.2],
                        mode="fp16", error=2e-4),
        ], **env))
    return runs


def _js(base: Baseline) -> dict:
    """The file's JSON of a baseline (as `save` writes it, read back)."""
    return json.loads(json.dumps(base.to_json()))


def _reload(base: Baseline) -> Baseline:
    """What loading the written file gives: validates, and must equal `base`."""
    again = baselines.from_json(_js(base), "test")
    assert again == base
    return again


@pytest.fixture
def good(tmp_path) -> tuple:
    data = baselines.build(_runs3(), "cpu", "s.csv")
    path = tmp_path / "cpu.json"
    baselines.save(path, data)
    return path, data


def _write(tmp_path, data, name="b.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


# --- load: the happy path, then every error path -----------------------------------------

def test_load_valid_round_trip(good):
    path, data = good
    assert isinstance(data, Baseline)
    assert baselines.load(path) == data
    assert baselines.load(path, "cpu") == data
    assert json.loads(path.read_text()) == _js(data)


def test_default_path():
    assert str(baselines.default_path("nvidia-h200")) == os.path.join("baselines",
                                                                      "nvidia-h200.json")


def test_baseline_error_is_value_error():
    assert issubclass(BaselineError, ValueError)


def test_load_missing_file_suggests_calibrate(tmp_path):
    with pytest.raises(BaselineError, match="no baseline at") as e:
        baselines.load(tmp_path / "nope.json", "cpu")
    assert "gemmgate baseline calibrate --chip cpu" in str(e.value)


def test_load_unreadable_directory(tmp_path):
    with pytest.raises(BaselineError, match="cannot read baseline"):
        baselines.load(tmp_path)


def test_load_not_json_is_corrupt(tmp_path):
    p = tmp_path / "b.json"
    p.write_text('{"schema": "gemmgate.baseline", "version": 1,')
    with pytest.raises(BaselineError, match="corrupt"):
        baselines.load(p)


def test_load_wrong_schema_name(tmp_path, good):
    data = dict(_js(good[1]), schema="gemmgate.run/1")    # another of gemmgate's files
    with pytest.raises(BaselineError, match="is not a baseline: it is a gemmgate.run/1 file"):
        baselines.load(_write(tmp_path, data))
    data = dict(_js(good[1]), schema="other")
    with pytest.raises(BaselineError, match="corrupt: schema is 'other'"):
        baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("version", [2, 0, None, "1"])
def test_load_wrong_schema_version(tmp_path, good, version):
    data = dict(_js(good[1]), version=version)
    with pytest.raises(BaselineError, match="schema version") as e:
        baselines.load(_write(tmp_path, data))
    assert "recalibrate" in str(e.value)


def test_load_other_chip(tmp_path, good):
    data = dict(_js(good[1]), chip="nvidia-h200")
    p = _write(tmp_path, data)
    with pytest.raises(BaselineError, match="is for chip nvidia-h200, not cpu"):
        baselines.load(p, "cpu")
    assert baselines.load(p).chip == "nvidia-h200"  # no chip asked: no check


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.clear() or d.update(a=1), "schema is None"),
    (lambda d: d.pop("chip"), "no chip id"),
    (lambda d: d.update(provenance=[]), "no provenance"),
    (lambda d: d.pop("cases"), "no cases object"),
    (lambda d: d.update(cases=[1]), "no cases object"),
    (lambda d: d["cases"].update(x=3), "case x is not an object"),
])
def test_load_structure_errors(tmp_path, good, mutate, message):
    data = _js(good[1])
    mutate(data)
    with pytest.raises(BaselineError, match="corrupt") as e:
        baselines.load(_write(tmp_path, data))
    assert message in str(e.value)


def test_load_top_level_not_object(tmp_path):
    with pytest.raises(BaselineError, match="top level is not an object"):
        baselines.load(_write(tmp_path, [1, 2]))


@pytest.mark.parametrize("field", ["mode", "m", "n", "k", "layout", "providers", "noise"])
def test_load_case_lacking_a_field(tmp_path, good, field):
    data = _js(good[1])
    data["cases"][K1].pop(field)
    with pytest.raises(BaselineError, match=f"case {K1} lacks '{field}'"):
        baselines.load(_write(tmp_path, data))


NOT_JSON = "corrupt \\(not JSON: (NaN|Infinity) is not a JSON number"   # (json writes them)


@pytest.mark.parametrize("ratio", [-0.9, 0, "0.9", [0.9], math.nan])
def test_load_bad_ratio(tmp_path, good, ratio):
    data = _js(good[1])
    data["cases"][K1]["ratio"] = ratio
    with pytest.raises(BaselineError, match=f"bad ratio|{NOT_JSON}"):
        baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("error", [-1, "x", [0.1], True])
def test_load_a_bad_provider_error(tmp_path, good, error):
    """A negative error was drawn on the report's log-scale error plot and a word became
    None, where a run file refuses both (a review)."""
    data = _js(good[1])
    data["cases"][K1]["providers"]["triton"]["error"] = error
    with pytest.raises(BaselineError, match=f"providers.triton.error is {error!r}, not a "
                                            "relative error >= 0".replace("[", "\\[")):
        baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("error", [None, 0, 3.5e-3, "inf", "nan"])
def test_load_a_good_provider_error(tmp_path, good, error):
    data = _js(good[1])
    data["cases"][K1]["providers"]["triton"]["error"] = error
    baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("field", ["ratio", "tflops", "ab", "machine", "tflops_machine"])
@pytest.mark.parametrize("value", [-0.01, "0.01", math.inf])
def test_load_bad_noise(tmp_path, good, field, value):
    data = _js(good[1])
    data["cases"][K1]["noise"][field] = value
    with pytest.raises(BaselineError, match=f"case {K1} has a bad noise.{field}|{NOT_JSON}"):
        baselines.load(_write(tmp_path, data))


def test_load_rejects_infinite_ratio(tmp_path, good):
    data = _js(good[1])
    data["cases"][K1]["ratio"] = math.inf  # json writes Infinity
    with pytest.raises(BaselineError, match=f"bad ratio|{NOT_JSON}"):
        baselines.load(_write(tmp_path, data))


def test_load_case_without_triton_median(tmp_path, good):
    data = _js(good[1])
    del data["cases"][K1]["providers"]["triton"]
    with pytest.raises(BaselineError, match="lacks triton median_ms"):
        baselines.load(_write(tmp_path, data))


def test_load_providers_not_an_object(tmp_path, good):
    data = _js(good[1])
    data["cases"][K1]["providers"] = []
    with pytest.raises(BaselineError):
        baselines.load(_write(tmp_path, data))


# --- build -------------------------------------------------------------------------------

def test_build_medians_noise_runs_provenance():
    runs = _runs3()
    data = baselines.build(runs, "cpu", "s.csv")
    _reload(data)
    js = _js(data)
    assert js["schema"] == "gemmgate.baseline" and js["version"] == 1
    assert data.chip == "cpu"
    assert set(data.cases) == {K1, K2}
    prov = data.provenance
    assert prov["shapes"] == "s.csv" and prov["runs"] == 3
    assert prov["modes"] == ["fp16", "fp32"]
    assert prov["torch"] == ENV["torch"] and prov["commit"] == "abc123"

    c = data.cases[K1]
    assert (c.mode, c.case.m, c.case.n, c.case.k, c.case.layout_id) == ("fp32", 32, 32, 32,
                                                                         "rr")
    assert c.key == K1
    per_run = [0.9 / (1.0 * s) for s in (1.0, 1.02, 0.99)]        # median v / median t
    assert c.ratio == pytest.approx(stats.median(per_run), rel=1e-12)
    assert c.ratio == pytest.approx(0.9 / 1.0, rel=1e-12)
    assert c.noise.ratio == pytest.approx(aa_noise(per_run), rel=1e-12)
    assert c.noise.ratio == pytest.approx(1 - 1 / 1.02, rel=1e-9)
    tf = [C1.flops / (1.0 * s * 1e-3) / 1e12 for s in (1.0, 1.02, 0.99)]
    assert c.noise.tflops == pytest.approx(aa_noise(tf), rel=1e-9)
    assert c.noise.runs == 3
    assert c.noise.ratio_runs == pytest.approx(per_run, rel=1e-12)  # kept for analysis
    assert c.noise.tflops_runs == pytest.approx(tf, rel=1e-12)
    t = c.providers["triton"]
    assert t.median_ms == pytest.approx(1.0, rel=1e-12)       # median of 1.0, 1.02, 0.99
    assert t.tflops == pytest.approx(stats.median(tf), rel=1e-12)
    assert t.error == pytest.approx(1e-7)
    # every run's rounds: the first run's alone stood beside the runs' median (a review)
    assert t.quantiles_ms == stats.quantiles([x for r in runs for x in
                                              r.cases[0].providers["triton"].samples_ms])
    assert c.providers["vendor"].median_ms == pytest.approx(0.9, rel=1e-12)

    c2 = data.cases[K2]
    assert c2.case.layout_id == "cr" and c2.mode == "fp16"
    assert c2.ratio == pytest.approx(4.2 / 2.1, rel=1e-12)
    assert c2.providers["triton"].error == pytest.approx(2e-4)


def test_build_stores_ab_noise_from_a_timed_reference_and_not_the_reference():
    """Calibrated with --ab-ref: each run's median reference/triton ratio is kept, its
    largest deviation from 1 is noise.ab; the reference is not a stored provider."""
    runs = []
    for ref_scale in (1.0, 1.01, 0.98):
        r = make_result(C1, [1.0, 1.1, 0.9], [0.9, 0.95, 0.85])
        ref = _provider("reference", [x * ref_scale for x in (1.0, 1.1, 0.9)], C1)
        runs.append(make_run([replace(r, providers={**r.providers, "reference": ref})]))
    base = baselines.build(runs, "cpu", "s.csv")
    c = base.cases[K1]
    assert set(c.providers) == {"triton", "vendor"}
    assert c.noise.ab_runs == pytest.approx([1.0, 1.01, 0.98], rel=1e-12)
    assert c.noise.ab == pytest.approx(0.02, rel=1e-9)
    assert base.has_ab_noise
    _reload(base)
    plain = baselines.build(_runs3(), "cpu", "s.csv")
    assert plain.cases[K1].noise.ab is None and not plain.has_ab_noise
    assert "ab" not in _js(plain)["cases"][K1]["noise"]    # no reference: no A/B noise


def test_build_stores_no_extra_provider():
    # --providers extras (inductor, module:function) are shown, never stored
    r = make_result(C1, [1.0, 1.1, 0.9], [0.9, 0.95, 0.85])
    extra = _provider("inductor", [0.5, 0.5, 0.5], C1)
    base = baselines.build([make_run([replace(r, providers={**r.providers, "inductor": extra})])],
                           "cpu", "s.csv")
    plain = baselines.build([make_run([r])], "cpu", "s.csv")
    assert set(base.cases[K1].providers) == {"triton", "vendor"}
    assert _js(base)["cases"] == _js(plain)["cases"]


def test_build_single_run_has_no_noise():
    data = baselines.build(_runs3()[:1], "cpu", "smoke")
    for c in data.cases.values():
        noise = c.noise
        assert (noise.ratio, noise.tflops, noise.runs) == (None, None, 1)
        assert (noise.machine, noise.tflops_machine) == (None, None)
        assert noise.ratio_runs == (c.ratio,)
        assert noise.run_machines == (HOST,)
    assert data.provenance["runs"] == 1


def test_build_case_missing_from_a_run_counts_its_own_runs():
    runs = _runs3()
    runs[2] = replace(runs[2], cases=runs[2].cases[:1])
    data = baselines.build(runs, "cpu", "s.csv")
    assert data.cases[K1].noise.runs == 3
    assert data.cases[K2].noise.runs == 2


def test_build_vendor_unsupported_and_triton_missing():
    run = make_run([make_result(C1, [1.0, 1.0, 1.0], None),
                    make_result(C2, [], [1.0, 1.0])])
    data = baselines.build([run], "cpu", "s.csv")
    assert set(data.cases) == {K1}                              # no Triton figure: dropped
    c = data.cases[K1]
    assert c.ratio is None and set(c.providers) == {"triton"}
    _reload(data)


def test_build_drops_non_finite_errors():
    runs = [make_run([make_result(C1, [1.0], [1.0], error=e)]) for e in (math.nan, 1e-6)]
    data = baselines.build(runs, "cpu", "s.csv")
    assert data.cases[K1].providers["triton"].error == 1e-6


def test_build_needs_runs():
    with pytest.raises(ValueError, match="no runs"):
        baselines.build([], "cpu", "s.csv")


def make_result_list() -> list[CaseResult]:
    return [make_result(C1, [1.5], [0.9]),
            make_result(C2, [2.0], [4.0], mode="fp16")]


# --- the three noise levels: machine ids, process, machine ----------------------------------

def test_two_vms_named_alike_give_machine_level_noise():
    recs = [make_run([make_result(C1, [1.0 + 0.01 * i], [0.9])], host="vm", machine_id=mid)
            for i, mid in enumerate(("a1", "a1", "b2", "b2"))]
    base = baselines.build(recs, "cpu", "s.csv")
    case = next(iter(base.cases.values()))
    assert base.machines == {"vm/a1", "vm/b2"}
    assert case.noise.machine is not None
    assert base.provenance["machines"]["vm/a1"] == {"host": "vm", "runs": 2, "machine_id": "a1"}


def test_build_on_one_machine_process_noise_only_runs_tagged_with_the_host():
    data = baselines.build(_runs3(), "cpu", "s.csv")
    for c in data.cases.values():
        n = c.noise
        assert n.run_machines == (HOST,) * 3 and n.machines == {HOST}
        assert n.ratio == pytest.approx(aa_noise(n.ratio_runs), rel=1e-12)   # process
        assert n.tflops == pytest.approx(aa_noise(n.tflops_runs), rel=1e-12)
        assert n.machine is None and n.tflops_machine is None
    assert data.machines == {HOST}
    assert data.provenance["machines"] == {HOST: {"host": HOST, "runs": 3}}
    js = _js(data)["cases"][K1]["noise"]
    assert js["run_machines"] == [HOST] * 3
    assert "machine" not in js and "tflops_machine" not in js    # absent, not null


GPUS = [{"index": 0, "uuid": "GPU-a", "serial": "S-a", "power_limit_w": 700.0},
        {"index": 1, "uuid": "GPU-b", "serial": "S-b", "power_limit_w": 650.0}]


def _two_gpu_runs() -> list[RunRecord]:
    """Four runs on host gpu-host with GPUs a and b (`calibrate --devices 0,1`): C1 ran
    on a, b, a, b with Triton scaled 1.0, 1.05, 1.01, 1.06 (GPU b ~5% slower); C2 ran on
    GPU a every time."""
    runs = []
    for gpu, scale in (("GPU-a", 1.0), ("GPU-b", 1.05), ("GPU-a", 1.01), ("GPU-b", 1.06)):
        runs.append(make_run([
            make_result(C1, [1.0 * scale, 1.1 * scale, 0.9 * scale], [0.9, 0.95, 0.85],
                        gpu=gpu),
            make_result(C2, [2.0 * scale, 2.2 * scale, 2.1 * scale], [4.0, 4.4, 4.2],
                        mode="fp16", gpu="GPU-a"),
        ], host="gpu-host", gpus=GPUS))
    return runs


def test_build_from_two_gpus_has_machine_noise_at_least_the_process_noise():
    data = baselines.build(_two_gpu_runs(), "nvidia-h200", "pr")
    n = data.cases[K1].noise
    a, b = "gpu-host/GPU-a", "gpu-host/GPU-b"
    assert n.run_machines == (a, b, a, b)
    ratios = [0.9 / s for s in (1.0, 1.05, 1.01, 1.06)]
    assert n.ratio_runs == pytest.approx(ratios, rel=1e-12)
    process = max(aa_noise(ratios[0::2]), aa_noise(ratios[1::2]))
    assert n.ratio == pytest.approx(process, rel=1e-12)
    assert n.machine == pytest.approx(aa_noise(ratios), rel=1e-12)
    assert n.machine >= n.ratio and n.machine > 0.02 > n.ratio      # GPU b is ~5% off
    assert n.tflops_machine is not None and n.tflops_machine >= n.tflops
    # C2 only ever ran on GPU a: process noise, no machine level
    n2 = data.cases[K2].noise
    assert n2.machines == {a} and n2.machine is None and n2.ratio is not None
    assert data.machines == {a, b}
    machines = data.provenance["machines"]
    assert machines[a] == {"host": "gpu-host", "runs": 4, "uuid": "GPU-a", "serial": "S-a",
                           "power_limit_w": 700.0}                  # no "index"
    assert machines[b]["runs"] == 2 and machines[b]["serial"] == "S-b"
    _reload(data)


def _runs_on(host: str, scales, vendor: float = 1.0, commit: str = "abc123"):
    return [make_run([make_result(C1, [1.0 * s, 1.1 * s, 0.9 * s],
                                  [0.9 * vendor, 0.95 * vendor, 0.85 * vendor])],
                     host=host, commit=commit) for s in scales]


def test_combine_two_machines_pools_the_runs():
    a = baselines.build(_runs_on("ci-a", (1.0, 1.02, 0.99), commit="aaa"), "cpu", "s")
    b = baselines.build(_runs_on("ci-b", (1.0, 1.01, 0.995), vendor=1.04, commit="bbb"),
                        "cpu", "s")
    assert a.cases[K1].noise.machine is None and b.cases[K1].noise.machine is None
    merged = baselines.combine([a, b])
    c, na, nb = merged.cases[K1], a.cases[K1].noise, b.cases[K1].noise
    pooled = na.ratio_runs + nb.ratio_runs
    assert c.noise.ratio_runs == pooled
    assert c.noise.run_machines == ("ci-a",) * 3 + ("ci-b",) * 3
    assert c.ratio == pytest.approx(stats.median(pooled), rel=1e-12)   # the pooled median
    assert c.noise.ratio == pytest.approx(max(na.ratio, nb.ratio), rel=1e-12)
    assert c.noise.machine == pytest.approx(aa_noise(pooled), rel=1e-12)
    assert c.noise.machine > c.noise.ratio                 # the hosts differ by ~4%
    # no quantiles: the parts' rounds are not stored, and the first part's stood beside
    # the pooled median (a review)
    assert a.cases[K1].providers["triton"].quantiles_ms
    assert all(not p.quantiles_ms for p in c.providers.values())
    tf = na.tflops_runs + nb.tflops_runs
    assert c.noise.tflops_machine == pytest.approx(max(aa_noise(tf), c.noise.tflops))
    assert c.noise.runs == 6
    t = c.providers["triton"]   # the six runs' median time, as a build of them gives
    both = baselines.build(_runs_on("ci-a", (1.0, 1.02, 0.99)) + _runs_on(
        "ci-b", (1.0, 1.01, 0.995), vendor=1.04), "cpu", "s").cases[K1].providers["triton"]
    assert t.median_ms == pytest.approx(both.median_ms, rel=1e-12)
    assert t.tflops == pytest.approx(both.tflops, rel=1e-12)
    prov = merged.provenance
    assert set(prov["machines"]) == {"ci-a", "ci-b"} and merged.machines == {"ci-a", "ci-b"}
    assert prov["runs"] == 6 and prov["merged_from"] == ["aaa", "bbb"]
    assert merged.chip == "cpu"
    _reload(merged)


def test_combine_counts_each_machines_runs_over_the_parts():
    """Two calibrations of one machine merged: its provenance entry counts all their runs
    (the last part's count alone stood: 2 runs said for a machine behind 5)."""
    a = baselines.build(_runs_on("ci-a", (1.0, 1.02, 0.99), commit="aaa"), "cpu", "s")
    b = baselines.build(_runs_on("ci-a", (1.0, 1.01), commit="aaa"), "cpu", "s")
    c = baselines.build(_runs_on("ci-b", (1.0,), commit="aaa"), "cpu", "s")
    assert a.provenance["machines"]["ci-a"]["runs"] == 3
    merged = baselines.combine([a, b, c])
    assert merged.provenance["machines"]["ci-a"]["runs"] == 5
    assert merged.provenance["machines"]["ci-b"]["runs"] == 1
    assert merged.provenance["runs"] == 6
    _reload(merged)


@pytest.mark.parametrize("flags,want", [((False, False), False), ((False, True), True),
                                        ((None, False), None), ((None, True), True)])
def test_combine_is_dirty_where_any_part_is(flags, want):
    parts = []
    for host, flag in zip(("ci-a", "ci-b"), flags):
        b = baselines.build(_runs_on(host, (1.0, 1.01, 0.99)), "cpu", "s")
        parts.append(replace(b, provenance={**b.provenance, "dirty": flag}))
    assert baselines.combine(parts).provenance["dirty"] is want


@pytest.mark.parametrize("prov,match", [({"commit": ""}, "records no commit"),
                                        ({"commit": "abc123", "dirty": True}, "dirty"),
                                        ({"commit": "abc123",
                                          "merged_from": ["abc123", "def456"]}, "2 commits"),
                                        ({"commit": "abc123",
                                          "merged_from": ["abc123", None]}, "2 commits"),
                                        ({"commit": "abc123", "kept_from": "def4567"},
                                         "2 commits"),
                                        ({"commit": "abc123", "kept_from": "2026-11-30"},
                                         "2 commits")])
def test_recorded_commit_refuses_what_the_baseline_did_not_measure(prov, match):
    b = baselines.build(_runs3(), "cpu", "s")
    with pytest.raises(ValueError, match=match):
        recorded_commit(replace(b, provenance={**b.provenance, **prov}), "--x")
    ok = replace(b, provenance={**b.provenance, "commit": "abc123", "dirty": False,
                                "merged_from": ["abc123", "abc123"]})
    assert recorded_commit(ok, "--x") == "abc123"
    mixed = replace(ok, provenance={**ok.provenance, "merged_from": ["abc123", "def456"],
                                    "kept_from": "0123abc"})
    assert recorded_commits(mixed, "GOOD") == ["abc123", "def456", "0123abc"]


def test_every_commit_a_baseline_measured_at_is_recorded():
    """Runs of two commits built (merged as run files) recorded the first alone; an
    update that kept cases named the update's commit alone, and `--ab-ref baseline` and
    bisect's GOOD took it for the kept cases too (a review)."""
    runs = _runs3()
    runs = [replace(r, environment={**r.environment, "commit": sha, "dirty": d})
            for r, sha, d in zip(runs, ("c1c1c1c", "c2c2c2c", "c1c1c1c"), (False, None, False))]
    built = baselines.build(runs, "cpu", "s")
    assert built.provenance["merged_from"] == ["c1c1c1c", "c2c2c2c"]
    assert built.provenance["dirty"] is None
    with pytest.raises(ValueError, match="2 commits"):
        recorded_commit(built, "--x")
    one = baselines.build(runs[:1], "cpu", "s")
    assert "merged_from" not in one.provenance and commits(one) == ["c1c1c1c"]
    newer = replace(one, provenance={**one.provenance, "commit": "c9c9c9c"},
                    cases={k: v for k, v in list(one.cases.items())[:1]})
    merged, kept = baselines.merge(newer, built)
    every = ["c1c1c1c", "c2c2c2c", "c9c9c9c"]
    assert kept and commits(merged) == every
    assert baselines.combine([built, newer]).provenance["merged_from"] == every


def test_combine_keeps_a_case_only_one_part_has_and_refuses_other_chips():
    a = baselines.build(_runs3(), "cpu", "s")
    b = baselines.build(_runs_on("ci-b", (1.0, 1.01)), "cpu", "s")       # C1 only
    merged = baselines.combine([a, b])
    assert set(merged.cases) == {K1, K2}
    assert merged.cases[K2] == a.cases[K2]                 # one machine: its own noise
    assert merged.cases[K1].noise.machine is not None
    with pytest.raises(BaselineError, match="different chips"):
        baselines.combine([a, replace(b, chip="nvidia-h200")])
    with pytest.raises(ValueError, match="nothing to merge"):
        baselines.combine([])


def test_combine_never_drops_a_parts_stored_noise():
    """A baseline refreshed by `baseline update` lists one run on one machine but keeps
    the noise its calibrations measured. Merged with one host's run of some of its cases,
    a case the run lacks keeps every level, and a case it has gets no level below the
    stored one (before: both lost their process and machine levels)."""
    base = baselines.build(_runs3(host="ci-a"), "cpu", "s")
    stored = baselines.Noise(ratio=0.004, tflops=0.005, ab=0.001, machine=0.02,
                             tflops_machine=0.03, ratio_runs=(0.9,), tflops_runs=(0.1,),
                             run_machines=("ci-a",), runs=8, tflops_machines=("ci-a",))
    updated = replace(base, cases={k: replace(c, noise=stored) for k, c in base.cases.items()})
    run = baselines.build(_runs_on("ci-b", (1.0,), vendor=1.003), "cpu", "s")   # C1 only
    levels = ("ratio", "tflops", "ab", "machine", "tflops_machine")
    merged = baselines.combine([updated, run])
    # not in the run: as stored (its counts unknown: a file from before `noise.behind`;
    # the calibration's 8 runs stay a bound, not stored as a count of runs or machines)
    assert merged.cases[K2].noise == stored
    n = merged.cases[K1].noise
    assert n.run_machines == ("ci-a", "ci-b") and n.runs == 8 + 1
    assert all(getattr(n, lv) >= getattr(stored, lv) for lv in levels)
    assert n.machine == pytest.approx(max(0.02, aa_noise(n.ratio_runs)))
    wide = baselines.build(_runs_on("ci-b", (1.0,), vendor=1.2), "cpu", "s")   # 20% off
    assert baselines.combine([updated, wide]).cases[K1].noise.machine > 0.05 > stored.machine


def test_combine_keeps_ab_noise_and_tiles():
    parts = []
    for host, ref_scales in (("ci-a", (1.0, 1.01)), ("ci-b", (0.99, 1.0))):
        runs = []
        for rs in ref_scales:
            r = make_result(C1, [1.0], [0.9])
            ref = _provider("reference", [rs], C1)
            runs.append(make_run([replace(r, providers={**r.providers, "reference": ref},
                                          telemetry={"tuning": _tile(64)})], host=host))
        parts.append(baselines.build(runs, "cpu", "s"))
    merged = baselines.combine(parts)
    n = merged.cases[K1].noise
    assert n.ab_runs == pytest.approx([1.0, 1.01, 0.99, 1.0])
    assert n.ab == pytest.approx(0.01)
    assert merged.cases[K1].tuning["runs_agree"] is True
    other = replace(parts[1], cases={K1: replace(parts[1].cases[K1], tuning={
        **_tile(128), "runs_agree": True})})
    assert baselines.other_tiles([parts[0], other]) == {K1: [1]}
    assert baselines.combine([parts[0], other]).cases[K1] == baselines.combine(
        [parts[0]]).cases[K1]


def test_combine_leaves_a_part_on_another_tile_out_of_that_case_only():
    """A kernel change between calibrations is not machine noise: a part that ran a case
    on another tile is left out of that case (its ratio, noise and tile stay the first
    part's), and still pooled in the cases it ran on the same tile."""
    a = baselines.build([make_run([replace(make_result(C1, [1.0], [0.9]),
                                           telemetry={"tuning": _tile(64)}),
                                   replace(make_result(C2, [1.0], [0.9], mode="fp16"),
                                           telemetry={"tuning": _tile(64)})], host="ci-a")
                         for _ in range(2)], "cpu", "s")
    b = baselines.build([make_run([replace(make_result(C1, [0.8], [0.9]),
                                           telemetry={"tuning": _tile(128)}),
                                   replace(make_result(C2, [1.02], [0.9], mode="fp16"),
                                           telemetry={"tuning": _tile(64)})], host="ci-b")
                         for _ in range(2)], "cpu", "s")
    assert baselines.other_tiles([a, b]) == {K1: [1]}
    merged = baselines.combine([a, b])
    assert merged.cases[K1].noise.run_machines == ("ci-a", "ci-a")
    assert merged.cases[K1].ratio == a.cases[K1].ratio
    assert merged.cases[K1].tuning["config"] == _tile(64)["config"]
    assert merged.cases[K2].noise.run_machines == ("ci-a",) * 2 + ("ci-b",) * 2
    assert merged.cases[K2].noise.machine is not None
    # no tile recorded (a CPU run without tuning telemetry): pooled as before
    assert baselines.other_tiles([baselines.build(_runs3(), "cpu", "s"), b]) == {}


def test_a_legacy_file_without_run_machines_is_one_machine_named_by_its_commit(tmp_path, good):
    data = _js(good[1])
    for c in data["cases"].values():
        del c["noise"]["run_machines"]
    data["provenance"]["commit"] = "f88ad28953dda5615c3085320e8e740d829ef316"
    base = baselines.load(_write(tmp_path, data))
    for c in base.cases.values():
        assert c.noise.run_machines == ("legacy:f88ad28953",) * 3
    assert base.machines == {"legacy:f88ad28953"}
    data["provenance"].pop("commit")                      # no commit: the date
    data["provenance"]["date"] = "2026-11-29T10:14:57+00:00"
    assert baselines.load(_write(tmp_path, data)).machines == {"legacy:2026-11-29"}
    # merged with a calibration from a known machine: two machines, machine noise
    merged = baselines.combine([base, baselines.build(_runs_on("ci-b", (1.0, 0.98)), "cpu",
                                                      "s")])
    assert merged.cases[K1].noise.machine is not None


# --- carry_noise -------------------------------------------------------------------------

def test_carry_noise_keeps_old_noise_for_single_run_updates():
    old = baselines.build(_runs3(), "cpu", "s.csv")
    extra = make_result(Case(8, 8, 8), [1.0], [1.0])
    new = baselines.build([make_run(make_result_list() + [extra])], "cpu", "s.csv")
    out = baselines.carry_noise(new, old)
    assert set(out.cases) == set(new.cases) and out.provenance == new.provenance
    for key in old.cases:
        o, n, got = old.cases[key].noise, new.cases[key].noise, out.cases[key].noise
        # the old noise figures, with the run (and machines) the new figures came from
        assert (got.ratio, got.tflops, got.ab, got.machine) == (o.ratio, o.tflops, o.ab,
                                                                o.machine)
        assert got.ratio_runs == n.ratio_runs and got.run_machines == n.run_machines
        assert got.runs == 3                                     # runs behind the noise
        assert out.cases[key].ratio == new.cases[key].ratio    # the figures are the new run's
    fresh = out.cases["fp32-m8-n8-k8"].noise
    assert (fresh.ratio, fresh.tflops, fresh.runs) == (None, None, 1)
    # shared, but immutable: nobody can change the old baseline through the new one
    with pytest.raises(FrozenInstanceError):
        out.cases[K1].noise.ratio = 9.0


def test_an_update_stores_the_runs_and_machines_behind_the_noise_it_carries(tmp_path):
    """Two machines of three and two runs: an update of one run keeps their figures and
    lists its own run, so the runs beside a figure no longer give it; `noise.behind`
    says how many were behind each (3 runs at process level, 2 machines pooled), where
    the fallback, the calibration's 5 runs, gave the 5-run factor to a 2-machine spread."""
    from gemmgate.baseline_noise import behind

    old = baselines.combine([baselines.build(_runs_on("ci-a", (1.0, 1.02, 0.99)), "cpu", "s"),
                             baselines.build(_runs_on("ci-b", (1.05, 1.06)), "cpu", "s")])
    o = old.cases[K1].noise
    assert (behind(o, "ratio"), behind(o, "machine"), o.runs) == (3, 2, 5)
    new = baselines.build(_runs_on("ci-c", (1.0,)), "cpu", "s")
    got = baselines.carry_noise(new, old).cases[K1].noise
    assert (got.ratio, got.machine) == (o.ratio, o.machine) and got.ratio_runs == (
        new.cases[K1].noise.ratio_runs)
    assert got.behind["ratio"] == 3 and got.behind["machine"] == 2
    assert (behind(got, "ratio"), behind(got, "machine")) == (3, 2)
    path = tmp_path / "cpu.json"   # written and read back as it is
    baselines.save(path, baselines.carry_noise(new, old))
    assert baselines.load(path, "cpu").cases[K1].noise.behind == got.behind
    # a merge that takes the carried (larger) figure over the pooled one keeps its count
    merged = baselines.combine([baselines.carry_noise(new, old),
                                baselines.build(_runs_on("ci-d", (1.0, 1.0)), "cpu", "s")])
    m = merged.cases[K1].noise
    assert m.machine == o.machine and behind(m, "machine") == 2
    assert m.ratio == o.ratio and behind(m, "ratio") == 3


def test_a_merge_keeps_the_run_count_of_a_part_from_before_behind():
    """A file written before `noise.behind`: a 2-run calibration an update carried (its
    listed run no longer gives the figure, so its own run count, 2, bounds the runs behind
    it). Merged with a 3-run calibration, the pooled file counts 5 runs: the part's figure
    keeps its 2 (x48.2 the spread), not the sum's x2.5 (a review: ±229% became ±12%)."""
    from gemmgate.baseline_noise import behind

    cal = baselines.build(_runs_on("ci-a", (1.0, 1.10)), "cpu", "s")
    data = _js(baselines.carry_noise(baselines.build(_runs_on("ci-a", (1.0,)), "cpu", "s"),
                                     cal))
    data["cases"][K1]["noise"].pop("behind")            # as written before session 68
    old = baselines.from_json(data, "old")
    assert behind(old.cases[K1].noise, "ratio") == 2 == old.cases[K1].noise.runs
    other = baselines.build(_runs_on("ci-b", (1.0, 1.001, 0.999)), "cpu", "s")
    m = baselines.combine([old, other]).cases[K1].noise
    assert m.runs == 5 and m.ratio == old.cases[K1].noise.ratio     # the part's figure
    assert behind(m, "ratio") == 2 and m.behind["ratio"] == 2
    assert _reload(baselines.combine([old, other])).cases[K1].noise.behind == m.behind


def test_a_merge_s_triton_tflops_is_the_pooled_runs_median():
    """Five runs on one host and one on another 1.3x slower: the merged TFLOP/s is the six
    runs' median, as the ratio is, not the two parts' medians' median."""
    a = baselines.build(_runs_on("ci-a", (1.0, 1.01, 0.99, 1.0, 1.005)), "cpu", "s")
    b = baselines.build(_runs_on("ci-b", (1.3,)), "cpu", "s")
    c = baselines.combine([a, b]).cases[K1]
    assert c.providers["triton"].tflops == stats.median(c.noise.tflops_runs)
    assert c.ratio == stats.median(c.noise.ratio_runs) and len(c.noise.tflops_runs) == 6
    assert c.providers["triton"].tflops != stats.median(
        [a.cases[K1].providers["triton"].tflops, b.cases[K1].providers["triton"].tflops])
    # its time too: the six runs' median (it was the parts' medians', 1.15 ms, beside a
    # TFLOP/s of the pooled runs'; a review)
    six = _runs_on("ci-a", (1.0, 1.01, 0.99, 1.0, 1.005)) + _runs_on("ci-b", (1.3,))
    want = baselines.build(six, "cpu", "s").cases[K1].providers["triton"].median_ms
    assert c.providers["triton"].median_ms == pytest.approx(want, rel=1e-12)


def test_a_merge_weighs_the_vendor_s_figures_by_each_part_s_runs():
    """Five runs with the vendor at 0.9 ms and two where both providers ran 1.2x slower:
    the vendor's time was the two parts' medians' median (1.035 ms), 10% off the pooled
    ratio's story (a review); each part now weighs as its runs (the 7 runs' median)."""
    a = baselines.build(_runs_on("ci-a", (1.0,) * 5), "cpu", "s")
    b = baselines.build(_runs_on("ci-b", (1.2,) * 2, vendor=1.2), "cpu", "s")
    c = baselines.combine([a, b]).cases[K1]
    vendor, triton = c.providers["vendor"], c.providers["triton"]
    assert vendor.median_ms == a.cases[K1].providers["vendor"].median_ms
    assert vendor.tflops == a.cases[K1].providers["vendor"].tflops
    assert vendor.median_ms / triton.median_ms == pytest.approx(c.ratio, rel=1e-9)


def test_a_merge_weighs_an_updated_part_by_the_run_its_figures_are():
    """A 5-run calibration refreshed by `baseline update` (one run, the vendor 1.2x slower
    there; the noise and its count, 5, kept) merged with another host's 3-run calibration:
    the vendor's figures are one run's beside three, and weighed as the update's kept
    count (5 to 3) they were the one run's (a review)."""
    cal = baselines.build(_runs_on("ci-a", (1.0, 1.01, 0.99, 1.0, 1.005)), "cpu", "s")
    updated = baselines.carry_noise(
        baselines.build(_runs_on("ci-a", (1.0,), vendor=1.2), "cpu", "s"), cal)
    assert updated.cases[K1].noise.runs == 5 and len(updated.cases[K1].noise.ratio_runs) == 1
    other = baselines.build(_runs_on("ci-b", (1.0, 1.01, 0.99)), "cpu", "s")
    c = baselines.combine([updated, other]).cases[K1]
    assert c.providers["vendor"].median_ms == other.cases[K1].providers["vendor"].median_ms
    assert c.providers["vendor"].tflops == other.cases[K1].providers["vendor"].tflops


def test_a_baseline_s_quantiles_are_a_round_s_as_its_run_file_s():
    """With --block 3 the run file's quantiles are over rounds (each its calls' median);
    the baseline built from it took them over every call (a review: p75 1.0 became 5.0)."""
    run = make_run([make_result(C1, [1.0, 1.0, 5.0] * 4, [0.9] * 12)], block=3)
    (case,) = run.cases
    t = baselines.build([run], "cpu", "s").cases[K1].providers["triton"]
    assert t.quantiles_ms == stats.quantiles(case.providers["triton"].rounds_ms)
    assert t.quantiles_ms["p90"] == 1.0


def test_a_merge_of_a_part_whose_run_count_is_null_counts_it_as_none():
    """`provenance.runs` may be null (validated as optional): the merged count skips it."""
    a = _js(baselines.build(_runs_on("ci-a", (1.0, 1.02)), "cpu", "s"))
    a["provenance"]["runs"] = None
    b = baselines.build(_runs_on("ci-b", (1.0,)), "cpu", "s")
    merged = baselines.combine([baselines.from_json(a, "a"), b])
    assert merged.provenance["runs"] == 1


@pytest.mark.parametrize("mode", [["fp32"], {"fp32": 1}, 3, None])
def test_a_case_whose_mode_is_not_a_string_is_refused_naming_it(tmp_path, mode):
    data = _js(baselines.build(_runs3(), "cpu", "s.csv"))
    data["cases"][K1]["mode"] = mode
    said = rf"case {K1}.mode is {re.escape(repr(mode))}, not one of"
    with pytest.raises(BaselineError, match=said):
        baselines.load(_write(tmp_path, data), "cpu")


@pytest.mark.parametrize("old, new, refused", [
    ({}, {"block": 10}, True),                 # a file from before --block was timed at 1
    ({}, {"block": 1}, False),
    ({"block": 1}, {}, False),
    ({"timing": "graph"}, {}, False),          # a method nobody recorded is unknown
    ({}, {"timing": "graph"}, False),
    ({"timing": "graph"}, {"timing": "eager"}, True),
])
def test_cases_kept_beside_cases_timed_otherwise(old, new, refused):
    why = unlike_kept(old, new, kept=3)
    assert (why is not None) == refused
    if refused:
        assert why.startswith("its 3 other case(s) were measured with ")
    assert unlike_kept(old, new, kept=0) is None


@pytest.mark.parametrize("runs", [True, 10**12, -1, 2.0])
def test_a_bad_noise_runs_is_refused_at_load(tmp_path, runs):
    """noise.runs weighs a part's figures in a merge, one entry a run: 10**12 (a typo'd
    edit) held `baseline merge` until it ran out of memory, and True read as 1."""
    data = _js(baselines.build(_runs3(), "cpu", "s.csv"))
    data["cases"][K1]["noise"]["runs"] = runs
    with pytest.raises(BaselineError, match="noise.runs"):
        baselines.load(_write(tmp_path, data), "cpu")


@pytest.mark.parametrize("where", ["ratio", "ratio_runs", "tflops_runs", "tflops"])
def test_a_subnormal_figure_is_refused_at_load(tmp_path, where):
    """A stored ratio or TFLOP/s of 5e-324 passed as positive: a check measured its cases,
    took an infinite change against it, and ended exit 2 writing --json (Out of range
    float values), the cases lost (a review). Refused at load, before any work."""
    data = _js(baselines.build(_runs3(), "cpu", "s.csv"))
    case = data["cases"][K1]
    if where == "ratio":
        case["ratio"] = 5e-324
    elif where == "tflops":
        case["providers"]["triton"]["tflops"] = 5e-324
    else:
        case["noise"][where] = [5e-324] * len(case["noise"][where])
    with pytest.raises(BaselineError, match=K1):
        baselines.load(_write(tmp_path, data), "cpu")


@pytest.mark.parametrize("behind", [{"ratio": 0}, {"ratio": 2.0}, {"ratio": True},
                                    {"nonsense": 2}, {"ab": 3}, [3]])
def test_a_bad_behind_is_refused(tmp_path, behind):
    data = _js(baselines.build(_runs3(), "cpu", "s.csv"))
    data["cases"][K1]["noise"]["behind"] = behind     # (this case has no A/B figure)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match="noise.behind"):
        baselines.load(path, "cpu")


def test_carry_noise_keeps_new_calibration_and_handles_no_old():
    old = baselines.build(_runs3(), "cpu", "s.csv")
    runs = [make_run(make_result_list()), make_run(make_result_list())]
    new = baselines.build(runs, "cpu", "s.csv")
    assert baselines.carry_noise(new, old) == new              # runs >= 2: its own noise
    single = baselines.build(runs[:1], "cpu", "s.csv")
    assert baselines.carry_noise(single, None) is single


# --- merge onto the file, write_merged ---------------------------------------------------------

def test_merge_keeps_the_old_files_other_cases():
    old = baselines.build(_runs3(), "cpu", "all.csv")
    new = baselines.build([make_run([make_result(C1, [1.0], [0.8])])], "cpu", "one.csv")
    merged, kept = baselines.merge(new, old)
    assert kept == [K2] and merged.cases[K2] == old.cases[K2]
    assert merged.cases[K1] == new.cases[K1]
    assert merged.provenance["modes"] == ["fp16", "fp32"]
    assert merged.provenance["kept_from"] == "abc123"
    assert merged.provenance["shapes"] == "all.csv"
    assert baselines.merge(new, None) == (new, [])


def test_cases_kept_beside_cases_of_another_triton_or_torch_are_refused(tmp_path):
    """An update of some cases relabelled the file's other cases, measured on another
    Triton, with this run's Triton: `check`'s software note (gate.software) then said
    nothing of them (a review). Refused, nothing written, as a merge refuses inputs of
    two stacks; an update of every case, or a file of the same stack, is written."""
    path = tmp_path / "cpu.json"
    old = baselines.build(_runs3(triton="3.6.0"), "cpu", "s.csv")
    baselines.save(path, old)
    before = path.read_text()
    one = baselines.build([make_run([make_result(C1, [1.0], [0.8])])], "cpu", "s.csv")
    with pytest.raises(BaselineError, match=r"1 other case\(s\) were measured on triton "
                                            r"3\.6\.0, these on 3\.9\.0.*nothing written"):
        baselines.write_merged(path, "cpu", one)
    assert path.read_text() == before
    both = baselines.build([make_run([make_result(C1, [1.0], [0.8]),
                                      make_result(C2, [1.0], [0.8], mode="fp16")])],
                           "cpu", "s.csv")
    written, _, kept = baselines.write_merged(path, "cpu", both)   # nothing kept
    assert kept == [] and written.provenance["triton"] == "3.9.0"
    new, kept = baselines.merge(one, baselines.build(_runs3(), "cpu", "s.csv"))
    assert kept == [K2]                                             # one stack: kept


def test_generic_cases_kept_beside_another_gpu_models_are_refused():
    """Every GPU no profile names is generic-gpu: an update on an Ada card kept a V100's
    cases beside its own, the file naming the Ada card alone, where `baseline merge`
    refuses the two models' inputs (a review). Other chips, or one model, keep them."""
    old = baselines.build(_runs3(chip="generic-gpu", device_name="Tesla V100-SXM2-32GB"),
                          "generic-gpu", "s.csv")
    one = baselines.build([make_run([make_result(C1, [1.0], [0.8])], chip="generic-gpu",
                                    device_name="NVIDIA RTX 6000 Ada Generation")],
                          "generic-gpu", "s.csv")
    with pytest.raises(BaselineError, match=r"1 other case\(s\) were measured on Tesla "
                                            r"V100-SXM2-32GB, these on NVIDIA RTX 6000"):
        baselines.merge(one, old)
    same = baselines.build([make_run([make_result(C1, [1.0], [0.8])], chip="generic-gpu",
                                     device_name="Tesla V100-SXM2-32GB")],
                           "generic-gpu", "s.csv")
    assert baselines.merge(same, old)[1] == [K2]
    cpu_old = baselines.build(_runs3(device_name="x86_64"), "cpu", "s.csv")
    cpu_one = baselines.build([make_run([make_result(C1, [1.0], [0.8])],
                                        device_name="aarch64")], "cpu", "s.csv")
    assert baselines.merge(cpu_one, cpu_old)[1] == [K2]


def test_a_named_chips_cases_kept_beside_another_gpus_are_refused():
    """An update run as nvidia-h100 on an H200 (GEMMGATE_CHIP or --chip set wrong: a
    warning when it ran) kept the H100's cases beside its own, the file naming the H200
    alone; only generic-gpu's were told apart (a review). Same part: kept."""
    old = baselines.build(_runs3(chip="nvidia-h100", device_name="NVIDIA H100 80GB HBM3"),
                          "nvidia-h100", "s.csv")
    for name, refused in (("NVIDIA H200", True), ("NVIDIA H100 NVL", True),
                          ("NVIDIA H100 80GB HBM3", False)):
        one = baselines.build([make_run([make_result(C1, [1.0], [0.8])], chip="nvidia-h100",
                                        device_name=name)], "nvidia-h100", "s.csv")
        if refused:
            with pytest.raises(BaselineError, match=r"were measured on NVIDIA H100 80GB "
                                                    r"HBM3, these on " + name):
                baselines.merge(one, old)
        else:
            assert baselines.merge(one, old)[1] == [K2]


def test_write_merged_carries_noise_and_keeps_an_unusable_file_unwritten(tmp_path):
    path = tmp_path / "cpu.json"
    baselines.save(path, baselines.build(_runs3(), "cpu", "s.csv"))
    measured = baselines.build([make_run([make_result(C1, [1.0], [0.8])])], "cpu", "s.csv")
    written, old, kept = baselines.write_merged(path, "cpu", measured)
    assert kept == [K2] and old is not None and baselines.load(path, "cpu") == written
    assert written.cases[K1].ratio == pytest.approx(0.8)
    got, was = written.cases[K1].noise, old.cases[K1].noise  # single run: noise carried,
    assert (got.ratio, got.tflops, got.runs) == (was.ratio, was.tflops, was.runs)
    assert got.ratio_runs == measured.cases[K1].noise.ratio_runs  # with the run it came from
    other = baselines.build(_runs3(), "nvidia-h200", "s.csv")   # files write_merged keeps
    for text in ("not json", json.dumps(_js(other)), json.dumps({**_js(written), "version": 2}),
                 "<<<<<<< HEAD\n" + json.dumps(_js(written))):
        path.write_text(text)
        with pytest.raises(BaselineError, match="nothing written over it"):
            baselines.write_merged(path, "cpu", measured)
        assert path.read_text() == text
    path.unlink()
    written, old, kept = baselines.write_merged(path, "cpu", measured)
    assert old is None and kept == [] and baselines.load(path) == measured


def test_a_write_through_a_link_waits_for_a_writer_of_its_target(tmp_path):
    """Written through to its target, a baseline reached by a symbolic link was locked
    beside the link: an update through the link ran while another held the target's
    lock, and one's cases were lost (a review)."""
    target = tmp_path / "shared" / "cpu.json"
    target.parent.mkdir()
    baselines.save(target, baselines.build(_runs3(), "cpu", "s.csv"))
    link = tmp_path / "cpu.json"
    link.symlink_to(target)
    measured = baselines.build([make_run([make_result(C1, [1.0], [0.8])])], "cpu", "s.csv")
    before = target.read_text()
    with baselines.locked(target):
        with pytest.raises(baselines.BaselineError, match="another writer held"):
            baselines.write_merged(link, "cpu", measured, timeout_s=0.2)
    assert target.read_text() == before and link.is_symlink()


def test_a_write_kept_waiting_says_so_and_keeps_what_it_measured(tmp_path):
    """Where another writer holds the file's lock, the write said nothing while it
    waited, then failed and dropped the cases it had measured (a calibration: hours of a
    GPU; a review): it says it waits, and past its time saves them beside the file."""
    path = tmp_path / "cpu.json"
    baselines.save(path, baselines.build(_runs3(), "cpu", "s.csv"))
    before = path.read_text()
    measured = baselines.build([make_run([make_result(C1, [1.0], [0.8])])], "cpu", "s.csv")
    said: list[str] = []
    with baselines.locked(path):
        with pytest.raises(baselines.BaselineError, match="cpu.json.measured.json, a baseline"):
            baselines.write_merged(path, "cpu", measured, timeout_s=0.2, on_wait=said.append)
    assert path.read_text() == before
    assert len(said) == 1 and "waiting up to 0.2 s for" in said[0] and "cpu.json.lock" in said[0]
    aside = baselines.load(tmp_path / "cpu.json.measured.json", "cpu")
    assert set(aside.cases) == set(measured.cases)
    said.clear()   # unheld: no wait said, the file written
    baselines.write_merged(path, "cpu", measured, timeout_s=0.2, on_wait=said.append)
    assert said == [] and path.read_text() != before


def test_an_update_timed_otherwise_carries_no_noise(tmp_path):
    """An update of every case at another --block (or timing method) carried the old
    calibration's noise onto figures timed otherwise, silently (a review): none is kept,
    and `noise_timed_otherwise` says why."""
    from dataclasses import replace as copy

    old = baselines.build(_runs3(), "cpu", "s.csv")
    old = copy(old, provenance={**old.provenance, "block": 1})
    measured = baselines.build([make_run([make_result(C1, [1.0], [0.8]),
                                          make_result(C2, [1.0], [0.8])])], "cpu", "s.csv")
    at_4 = copy(measured, provenance={**measured.provenance, "block": 4})
    assert "--block 1, these with 4" in baselines.noise_timed_otherwise(old, at_4)
    assert baselines.carry_noise(at_4, old) == at_4                   # nothing carried
    at_1 = copy(measured, provenance={**measured.provenance, "block": 1})
    assert baselines.noise_timed_otherwise(old, at_1) is None
    carried = baselines.carry_noise(at_1, old).cases[K1].noise
    assert carried.ratio == old.cases[K1].noise.ratio                 # alike: carried


# --- save --------------------------------------------------------------------------------

def test_save_writes_valid_json_atomically(tmp_path, good):
    path, data = good
    assert json.loads(path.read_text()) == _js(data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu.json"]  # no temp files left
    nested = tmp_path / "a" / "b" / "cpu.json"
    baselines.save(nested, data)
    assert baselines.load(nested, "cpu") == data


def _with_case(base: Baseline, key: str, **changes) -> Baseline:
    return replace(base, cases={**base.cases, key: replace(base.cases[key], **changes)})


def test_save_refuses_invalid_data_without_touching_the_file(tmp_path, good):
    path, data = good
    before = path.read_bytes()
    bad = _with_case(data, K1, ratio=-1.0)
    with pytest.raises(BaselineError, match="bad ratio"):
        baselines.save(path, bad)
    # (a wrong schema version cannot be saved any more: to_json always writes VERSION)
    t = data.cases[K1].providers["triton"]
    nan = _with_case(data, K1, providers={**data.cases[K1].providers,
                                          "triton": replace(t, tflops=math.nan)})
    with pytest.raises(ValueError):                             # JSON has no NaN
        baselines.save(path, nan)
    lost = _with_case(data, K1, noise=replace(data.cases[K1].noise, run_machines=("x",)))
    with pytest.raises(BaselineError, match="run_machines"):
        baselines.save(path, lost)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu.json"]
    with pytest.raises(BaselineError):
        baselines.save(tmp_path / "new.json", bad)
    assert not (tmp_path / "new.json").exists()


def test_save_failure_mid_write_keeps_old_file(tmp_path, good, monkeypatch):
    path, data = good
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        baselines.save(path, replace(data, chip="other"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu.json"]


# --- summary -----------------------------------------------------------------------------

def test_summary_per_mode():
    data = baselines.build(_runs3(), "cpu", "s.csv")
    s = baselines.summary(data)
    assert list(s) == ["fp16", "fp32"]
    assert s["fp32"]["cases"] == 1
    assert s["fp32"]["geomean_ratio"] == pytest.approx(0.9, rel=1e-12)
    assert s["fp16"]["geomean_ratio"] == pytest.approx(2.0, rel=1e-12)
    run = make_run([make_result(C1, [1.0], [0.5]), make_result(Case(8, 8, 8), [1.0], [2.0]),
                    make_result(C2, [1.0], None)])
    s2 = baselines.summary(baselines.build([run], "cpu", "x"))
    assert s2 == {"fp32": {"cases": 3, "geomean_ratio": pytest.approx(1.0, rel=1e-12)}}


def test_summary_of_nothing():
    assert baselines.summary(None) == {}
    assert baselines.summary(Baseline("cpu", {}, {})) == {}


def _tile(block_m: int, source: str = "tuned") -> dict:
    return {"key": "16bit m32 n32 k32 a32,1 b32,1", "source": source, "kernel": "k1",
            "config": {"block_m": block_m, "block_n": 64, "block_k": 32, "group_m": 8,
                       "num_stages": 3, "num_warps": 4}, "timings_ms": {}, "stale": False}


def test_build_records_the_tile_each_case_ran_with_and_whether_runs_agree():
    results = [make_result(C1, [1.0], [0.9])]
    same = [make_run([replace(results[0], telemetry={"tuning": _tile(64, s)})])
            for s in ("tuned", "cache", "cache")]
    rec = baselines.build(same, "cpu", "s").cases["fp32-" + C1.id].tuning
    assert rec["config"]["block_m"] == 64 and rec["runs_agree"] is True
    differ = same[:2] + [make_run([replace(results[0], telemetry={"tuning": _tile(128)})])]
    data = baselines.build(differ, "cpu", "s")
    assert data.cases["fp32-" + C1.id].tuning["runs_agree"] is False
    _reload(data)
    assert baselines.build([make_run(results)], "cpu", "s").cases[
        "fp32-" + C1.id].tuning is None  # the CPU path has no tuning record
    assert "tuning" not in _js(baselines.build([make_run(results)], "cpu", "s"))["cases"][K1]


@pytest.mark.parametrize("bad", [[], {"config": {}}, {"key": "k", "config": "128x64"}])
def test_load_rejects_a_bad_tuning_record(tmp_path, good, bad):
    data = _js(good[1])
    next(iter(data["cases"].values()))["tuning"] = bad
    with pytest.raises(baselines.BaselineError, match="bad tuning record"):
        baselines.load(_write(tmp_path, data))


def _rj(env, results, shapes):
    return RunRecord(env, shapes, tuple(results)).to_json()


def test_a_case_twice_in_one_run_is_one_run_not_two():
    """Its second measurement is the same process: counted as a second run it would give
    the baseline process-level noise from one process."""
    twice = RunRecord(dict(ENV), "s.csv", (make_result(C1, [1.0, 1.1], [0.9, 0.95]),
                                           make_result(C1, [1.2, 1.3], [0.9, 0.95])))
    c = baselines.build([twice], "cpu", "s.csv").cases[K1]
    assert c.noise.runs == 1 and len(c.noise.ratio_runs) == 1 and c.noise.ratio is None
    assert c.providers["triton"].median_ms == pytest.approx(1.05)   # the first's


def test_a_calibration_on_one_machine_over_a_fleets_file_reports_the_lost_machine_level(
        tmp_path):
    path = tmp_path / "cpu.json"
    fleet = baselines.combine([baselines.build(_runs3(host=h), "cpu", "s.csv")
                               for h in ("host-a", "host-b")])
    baselines.save(path, fleet)
    assert all(c.noise.machine is not None for c in fleet.cases.values())
    here = baselines.build(_runs3(host="host-a"), "cpu", "s.csv")      # recalibrated on a
    written, old, _ = baselines.write_merged(path, "cpu", here)
    lost = baselines.lost_levels(old, written)
    assert set(lost) == {"machine-level"} and sorted(lost["machine-level"]) == sorted(fleet.cases)
    assert baselines.lost_levels(None, written) == {}
    again, old, _ = baselines.write_merged(path, "cpu", here)
    assert baselines.lost_levels(old, again) == {}      # nothing left to lose


def test_a_calibration_without_ab_over_a_file_with_ab_noise_reports_the_lost_ab_level():
    """A calibration without --ab-ref dropped every case's A/B noise, silently: `check
    --ab-ref` then judged them at the floor (a review)."""
    old = baselines.build(_runs3(), "cpu", "s.csv")
    cases = {k: replace(c, noise=replace(c.noise, ab=0.004, ab_runs=(1.0, 1.004, 0.996)))
             for k, c in old.cases.items()}
    old = replace(old, cases=cases)
    new = baselines.build(_runs3(), "cpu", "s.csv")
    assert baselines.lost_levels(old, new) == {"A/B": list(new.cases)}
