"""gemmgate/baselines.py: load/validate error paths, build from run JSONs, carry_noise,
atomic save, summary. Pure file work on tmp_path with synthetic data (no timing).

Run dicts are made the way `gemmgate run --json` makes them: CaseResult objects with
synthetic samples_ms through RunRecord.to_json, then a JSON round-trip.
"""

import json
import math
import os
from dataclasses import replace

import pytest

from gemmgate import baselines, stats
from gemmgate.baselines import BaselineError
from gemmgate.compare import aa_noise
from gemmgate.results import CaseResult, ProviderResult, RunRecord
from gemmgate.shapes import Case

ENV = {"chip": "cpu", "device_name": "x86_64", "timing": "wall", "torch": "2.13.0+cpu",
       "triton": "3.9.0", "interpreter": True, "commit": "abc123"}
C1, C2 = Case(32, 32, 32), Case(48, 16, 64, "cr")


def _provider(name: str, samples: list[float], case: Case, error: float = 1e-7,
              accuracy: str = "pass") -> ProviderResult:
    med = stats.median(samples) if samples else None
    tf = case.flops / (med * 1e-3) / 1e12 if med else None
    return ProviderResult(name, accuracy, error, "", tuple(samples), tf)


def make_result(case: Case, t_ms: list[float], v_ms: list[float] | None,
                mode: str = "fp32", error: float = 1e-7) -> CaseResult:
    provs = {"triton": _provider("triton", t_ms, case, error)}
    provs["vendor"] = (_provider("vendor", v_ms, case, error) if v_ms is not None
                       else ProviderResult("vendor", "unsupported", message="no vendor"))
    return CaseResult(mode, case, provs, None, {})


def make_run(results: list[CaseResult], shapes: str = "s.csv") -> dict:
    """What `gemmgate run --json` writes, read back."""
    return json.loads(json.dumps(_rj(dict(ENV), results, shapes)))


def _runs3() -> list[dict]:
    """Three runs of two cases; run r scales Triton's times by (1, 1.02, 0.99)[r]."""
    runs = []
    for scale in (1.0, 1.02, 0.99):
        runs.append(make_run([
            make_result(C1, [1.0 * scale, 1.1 * scale, 0.9 * scale], [0.9, 0.95, 0.85]),
            make_result(C2, [2.0 * scale, 2.2 * scale, 2.1 * scale], [4.0, 4.4, 4.2],
                        mode="fp16", error=2e-4),
        ]))
    return runs


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
    assert baselines.load(path) == data
    assert baselines.load(path, "cpu") == data


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
    data = dict(good[1], schema="gemmgate.run/1")
    with pytest.raises(BaselineError, match="schema is 'gemmgate.run/1'"):
        baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("version", [2, 0, None, "1"])
def test_load_wrong_schema_version(tmp_path, good, version):
    data = dict(good[1], version=version)
    with pytest.raises(BaselineError, match="schema version") as e:
        baselines.load(_write(tmp_path, data))
    assert "recalibrate" in str(e.value)


def test_load_other_chip(tmp_path, good):
    data = dict(good[1], chip="nvidia-h200")
    p = _write(tmp_path, data)
    with pytest.raises(BaselineError, match="is for chip nvidia-h200, not cpu"):
        baselines.load(p, "cpu")
    assert baselines.load(p)["chip"] == "nvidia-h200"  # no chip asked: no check


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.clear() or d.update(a=1), "schema is None"),
    (lambda d: d.pop("chip"), "no chip id"),
    (lambda d: d.update(provenance=[]), "no provenance"),
    (lambda d: d.pop("cases"), "no cases object"),
    (lambda d: d.update(cases=[1]), "no cases object"),
    (lambda d: d["cases"].update(x=3), "case x is not an object"),
])
def test_load_structure_errors(tmp_path, good, mutate, message):
    data = json.loads(json.dumps(good[1]))
    mutate(data)
    with pytest.raises(BaselineError, match="corrupt") as e:
        baselines.load(_write(tmp_path, data))
    assert message in str(e.value)


def test_load_top_level_not_object(tmp_path):
    with pytest.raises(BaselineError, match="top level is not an object"):
        baselines.load(_write(tmp_path, [1, 2]))


@pytest.mark.parametrize("field", ["mode", "m", "n", "k", "layout", "providers", "noise"])
def test_load_case_lacking_a_field(tmp_path, good, field):
    data = json.loads(json.dumps(good[1]))
    data["cases"]["fp32-m32-n32-k32"].pop(field)
    with pytest.raises(BaselineError, match=f"case fp32-m32-n32-k32 lacks '{field}'"):
        baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("ratio", [-0.9, 0, "0.9", [0.9], math.nan])
def test_load_bad_ratio(tmp_path, good, ratio):
    data = json.loads(json.dumps(good[1]))
    data["cases"]["fp32-m32-n32-k32"]["ratio"] = ratio
    with pytest.raises(BaselineError, match="bad ratio"):
        baselines.load(_write(tmp_path, data))


@pytest.mark.parametrize("field", ["ratio", "tflops", "ab"])
@pytest.mark.parametrize("value", [-0.01, "0.01", math.inf])
def test_load_bad_noise(tmp_path, good, field, value):
    data = json.loads(json.dumps(good[1]))
    data["cases"]["fp32-m32-n32-k32"]["noise"][field] = value
    with pytest.raises(BaselineError, match=f"bad noise.{field}"):
        baselines.load(_write(tmp_path, data))


def test_load_rejects_infinite_ratio(tmp_path, good):
    data = json.loads(json.dumps(good[1]))
    data["cases"]["fp32-m32-n32-k32"]["ratio"] = math.inf  # json writes Infinity
    with pytest.raises(BaselineError, match="bad ratio"):
        baselines.load(_write(tmp_path, data))


def test_load_case_without_triton_median(tmp_path, good):
    data = json.loads(json.dumps(good[1]))
    del data["cases"]["fp32-m32-n32-k32"]["providers"]["triton"]
    with pytest.raises(BaselineError, match="lacks triton median_ms"):
        baselines.load(_write(tmp_path, data))


def test_load_providers_not_an_object(tmp_path, good):
    data = json.loads(json.dumps(good[1]))
    data["cases"]["fp32-m32-n32-k32"]["providers"] = []
    with pytest.raises(BaselineError):
        baselines.load(_write(tmp_path, data))


# --- build -------------------------------------------------------------------------------

def test_build_medians_noise_runs_provenance():
    runs = _runs3()
    data = baselines.build(runs, "cpu", "s.csv")
    baselines.validate(data)
    assert data["schema"] == "gemmgate.baseline" and data["version"] == 1
    assert data["chip"] == "cpu"
    assert set(data["cases"]) == {"fp32-m32-n32-k32", "fp16-m48-n16-k64-cr"}
    prov = data["provenance"]
    assert prov["shapes"] == "s.csv" and prov["runs"] == 3
    assert prov["modes"] == ["fp16", "fp32"]
    assert prov["torch"] == ENV["torch"] and prov["commit"] == "abc123"

    c = data["cases"]["fp32-m32-n32-k32"]
    assert (c["mode"], c["m"], c["n"], c["k"], c["layout"]) == ("fp32", 32, 32, 32, "rr")
    per_run = [0.9 / (1.0 * s) for s in (1.0, 1.02, 0.99)]        # median v / median t
    assert c["ratio"] == pytest.approx(stats.median(per_run), rel=1e-12)
    assert c["ratio"] == pytest.approx(0.9 / 1.0, rel=1e-12)
    assert c["noise"]["ratio"] == pytest.approx(aa_noise(per_run), rel=1e-12)
    assert c["noise"]["ratio"] == pytest.approx(1 - 1 / 1.02, rel=1e-9)
    tf = [C1.flops / (1.0 * s * 1e-3) / 1e12 for s in (1.0, 1.02, 0.99)]
    assert c["noise"]["tflops"] == pytest.approx(aa_noise(tf), rel=1e-9)
    assert c["noise"]["runs"] == 3
    assert c["noise"]["ratio_runs"] == pytest.approx(per_run, rel=1e-12)  # kept for analysis
    t = c["providers"]["triton"]
    assert t["median_ms"] == pytest.approx(1.0, rel=1e-12)       # median of 1.0, 1.02, 0.99
    assert t["tflops"] == pytest.approx(stats.median(tf), rel=1e-12)
    assert t["error"] == pytest.approx(1e-7)
    assert t["quantiles_ms"] == runs[0]["cases"][0]["providers"]["triton"]["quantiles_ms"]
    assert c["providers"]["vendor"]["median_ms"] == pytest.approx(0.9, rel=1e-12)

    c2 = data["cases"]["fp16-m48-n16-k64-cr"]
    assert c2["layout"] == "cr" and c2["mode"] == "fp16"
    assert c2["ratio"] == pytest.approx(4.2 / 2.1, rel=1e-12)
    assert c2["providers"]["triton"]["error"] == pytest.approx(2e-4)


def test_build_stores_ab_noise_from_a_timed_reference_and_not_the_reference():
    """Calibrated with --ab-ref: each run's median reference/triton ratio is kept, its
    largest deviation from 1 is noise.ab; the reference is not a stored provider."""
    runs = []
    for ref_scale in (1.0, 1.01, 0.98):
        r = make_result(C1, [1.0, 1.1, 0.9], [0.9, 0.95, 0.85])
        ref = _provider("reference", [x * ref_scale for x in (1.0, 1.1, 0.9)], C1)
        runs.append(make_run([replace(r, providers={**r.providers, "reference": ref})]))
    c = baselines.build(runs, "cpu", "s.csv")["cases"]["fp32-m32-n32-k32"]
    assert set(c["providers"]) == {"triton", "vendor"}
    assert c["noise"]["ab_runs"] == pytest.approx([1.0, 1.01, 0.98], rel=1e-12)
    assert c["noise"]["ab"] == pytest.approx(0.02, rel=1e-9)
    baselines.validate({**baselines.build(runs, "cpu", "s")})
    plain = baselines.build(_runs3(), "cpu", "s.csv")["cases"]["fp32-m32-n32-k32"]
    assert "ab" not in plain["noise"]                    # no reference: no A/B noise


def test_build_single_run_has_no_noise():
    data = baselines.build(_runs3()[:1], "cpu", "smoke")
    for c in data["cases"].values():
        noise = c["noise"]
        assert (noise["ratio"], noise["tflops"], noise["runs"]) == (None, None, 1)
        assert noise["ratio_runs"] == [c["ratio"]]
    assert data["provenance"]["runs"] == 1


def test_build_case_missing_from_a_run_counts_its_own_runs():
    runs = _runs3()
    runs[2]["cases"] = runs[2]["cases"][:1]
    data = baselines.build(runs, "cpu", "s.csv")
    assert data["cases"]["fp32-m32-n32-k32"]["noise"]["runs"] == 3
    assert data["cases"]["fp16-m48-n16-k64-cr"]["noise"]["runs"] == 2


def test_build_vendor_unsupported_and_triton_missing():
    run = make_run([make_result(C1, [1.0, 1.0, 1.0], None),
                    make_result(C2, [], [1.0, 1.0])])
    data = baselines.build([run], "cpu", "s.csv")
    assert set(data["cases"]) == {"fp32-m32-n32-k32"}           # no Triton figure: dropped
    c = data["cases"]["fp32-m32-n32-k32"]
    assert c["ratio"] is None and set(c["providers"]) == {"triton"}
    baselines.validate(data)


def test_build_drops_non_finite_errors():
    runs = [make_run([make_result(C1, [1.0], [1.0], error=e)]) for e in (math.nan, 1e-6)]
    data = baselines.build(runs, "cpu", "s.csv")
    assert data["cases"]["fp32-m32-n32-k32"]["providers"]["triton"]["error"] == 1e-6


def test_build_needs_runs():
    with pytest.raises(ValueError, match="no runs"):
        baselines.build([], "cpu", "s.csv")


def make_result_list() -> list[CaseResult]:
    return [make_result(C1, [1.5], [0.9]),
            make_result(C2, [2.0], [4.0], mode="fp16")]


# --- carry_noise -------------------------------------------------------------------------

def test_carry_noise_keeps_old_noise_for_single_run_updates():
    old = baselines.build(_runs3(), "cpu", "s.csv")
    extra = make_result(Case(8, 8, 8), [1.0], [1.0])
    new = baselines.build([make_run(make_result_list() + [extra])], "cpu", "s.csv")
    out = baselines.carry_noise(new, old)
    assert out is new
    for key in old["cases"]:
        assert new["cases"][key]["noise"] == old["cases"][key]["noise"]
        assert new["cases"][key]["noise"]["runs"] == 3
    fresh = new["cases"]["fp32-m8-n8-k8"]["noise"]
    assert (fresh["ratio"], fresh["tflops"], fresh["runs"]) == (None, None, 1)
    # a copy, not shared
    new["cases"]["fp32-m32-n32-k32"]["noise"]["ratio"] = 9.0
    assert old["cases"]["fp32-m32-n32-k32"]["noise"]["ratio"] != 9.0


def test_carry_noise_keeps_new_calibration_and_handles_no_old():
    old = baselines.build(_runs3(), "cpu", "s.csv")
    runs = [make_run(make_result_list()), make_run(make_result_list())]
    new = baselines.build(runs, "cpu", "s.csv")
    before = json.loads(json.dumps(new))
    assert baselines.carry_noise(new, old) == before          # runs >= 2: its own noise
    single = baselines.build(runs[:1], "cpu", "s.csv")
    snapshot = json.loads(json.dumps(single))
    assert baselines.carry_noise(single, None) == snapshot
    assert baselines.carry_noise(single, {}) == snapshot


# --- save --------------------------------------------------------------------------------

def test_save_writes_valid_json_atomically(tmp_path, good):
    path, data = good
    assert json.loads(path.read_text()) == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu.json"]  # no temp files left
    nested = tmp_path / "a" / "b" / "cpu.json"
    baselines.save(nested, data)
    assert baselines.load(nested, "cpu") == data


def test_save_refuses_invalid_data_without_touching_the_file(tmp_path, good):
    path, data = good
    before = path.read_bytes()
    bad = json.loads(json.dumps(data))
    bad["cases"]["fp32-m32-n32-k32"]["ratio"] = -1.0
    with pytest.raises(BaselineError, match="bad ratio"):
        baselines.save(path, bad)
    with pytest.raises(BaselineError, match="schema version"):
        baselines.save(path, dict(data, version=7))
    nan = json.loads(json.dumps(data))
    nan["cases"]["fp32-m32-n32-k32"]["providers"]["triton"]["tflops"] = math.nan
    with pytest.raises(ValueError):                             # JSON has no NaN
        baselines.save(path, nan)
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
        baselines.save(path, dict(data, chip="other"))
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
    assert baselines.summary({}) == {}


def _tile(block_m: int, source: str = "tuned") -> dict:
    return {"key": "16bit m32 n32 k32 a32,1 b32,1", "source": source, "kernel": "k1",
            "config": {"block_m": block_m, "block_n": 64, "block_k": 32, "group_m": 8,
                       "num_stages": 3, "num_warps": 4}, "timings_ms": {}, "stale": False}


def test_build_records_the_tile_each_case_ran_with_and_whether_runs_agree():
    results = [make_result(C1, [1.0], [0.9])]
    same = [make_run([replace(results[0], telemetry={"tuning": _tile(64, s)})])
            for s in ("tuned", "cache", "cache")]
    rec = baselines.build(same, "cpu", "s")["cases"]["fp32-" + C1.id]["tuning"]
    assert rec["config"]["block_m"] == 64 and rec["runs_agree"] is True
    differ = same[:2] + [make_run([replace(results[0], telemetry={"tuning": _tile(128)})])]
    data = baselines.build(differ, "cpu", "s")
    assert data["cases"]["fp32-" + C1.id]["tuning"]["runs_agree"] is False
    baselines.validate(data)
    assert "tuning" not in baselines.build([make_run(results)], "cpu", "s")["cases"][
        "fp32-" + C1.id]  # the CPU path has no tuning record


@pytest.mark.parametrize("bad", [[], {"config": {}}, {"key": "k", "config": "128x64"}])
def test_load_rejects_a_bad_tuning_record(tmp_path, good, bad):
    _, data = good
    next(iter(data["cases"].values()))["tuning"] = bad
    with pytest.raises(baselines.BaselineError, match="bad tuning record"):
        baselines.load(_write(tmp_path, data))


def _rj(env, results, shapes):
    return RunRecord(env, shapes, tuple(results)).to_json()
