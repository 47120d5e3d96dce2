"""tests/perf's set-up (tests/perf/conftest.py, docs/PERF_TESTS.md): the fixed work per
timed round, the injected slowdown's plumbing, and pytest-benchmark's save-then-compare
cycle through public options (per-chip storage, --benchmark-compare-fail)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gemmgate.timing import DeviceClock

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def perf_conftest(load_script):
    return load_script(ROOT / "tests" / "perf" / "conftest.py", "perf_conftest")


def test_on_a_gpu_every_case_is_timed_on_the_device_clock(perf_conftest):
    c = perf_conftest
    clock = DeviceClock()
    params = c.case_params(["bf16", "fp8"], ["m64-n64-k64", "m128-n8192-k8192"], clock)
    assert [p.id for p in params] == ["bf16-m64-n64-k64", "bf16-m128-n8192-k8192",
                                      "fp8-m64-n64-k64", "fp8-m128-n8192-k8192"]
    for p in params:
        (mark,) = p.marks
        assert mark.name == "benchmark" and mark.kwargs == {"timer": clock}
    assert all(p.marks == () for p in c.case_params(["fp32"], ["m64-n64-k64"]))  # CPU


def test_the_device_clock_moves_only_by_timed_device_work():
    clock = DeviceClock()
    assert clock() == 0.0
    clock.advance(2.5)          # ms
    clock.advance(0.0)
    assert clock() == pytest.approx(2.5e-3)
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match=">= 0 ms"):
            clock.advance(bad)
    assert clock() == pytest.approx(2.5e-3)
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="duty"):
            DeviceClock(duty=bad)
    with pytest.raises(ValueError, match="gap_ms must be"):
        DeviceClock(gap_ms=-1.0)
    with pytest.raises(ValueError, match="cycles_per_ms"):
        DeviceClock(gap_ms=5.0)                   # a spin needs the clock rate


@pytest.mark.gpu
def test_the_device_clock_times_a_call_with_events():
    import torch

    from gemmgate.slowdown import cycles_per_ms, slowed

    flush = torch.empty(1 << 20, device="cuda")
    spin = slowed(lambda: None, 0.5, "cuda")        # about 0.5 ms of device work
    for clock in (DeviceClock(duty=0.5),
                  DeviceClock(gap_ms=2.0, cycles_per_ms=cycles_per_ms("cuda"))):
        ms = [clock.time(spin, flush) for _ in range(5)]
        assert clock() == pytest.approx(sum(ms) / 1e3)
        assert 0.2 < sorted(ms)[2] < 2.0             # the untimed gap is not counted
    clock = DeviceClock()
    half = slowed(lambda: None, 0.25, "cuda")
    ratios = [clock.time_ratio(spin, half, flush) for _ in range(5)]
    assert clock() == pytest.approx(sum(ratios) / 1e3)  # ms per vendor-ms
    assert 1.5 < sorted(ratios)[2] < 2.5


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")   # perf: tests/perf's
@pytest.mark.parametrize("figure, key, want", [("ratio", "per_round_time_ratio", 1.25),
                                               ("time", "per_call_median_ms", 2.5)])
def test_a_rounds_figure_goes_to_extra_info_in_the_unit_its_name_says(
        perf_conftest, load_script, monkeypatch, figure, key, want):
    """pytest-benchmark's median is in the timer's seconds; the DeviceClock advances by a
    ratio round's Triton/vendor ratio read as ms. `per_round_time_ratio` was that median
    as is: 0.00125 for Triton 1.25x the vendor's time (a review)."""
    from types import SimpleNamespace

    import gemmgate.stats

    bench_mod = load_script(ROOT / "tests" / "perf" / "test_gemm_bench.py", "perf_gemm_bench")
    clock = DeviceClock()
    monkeypatch.setattr(clock, "_sample", lambda fn, flush: fn())   # fn() is its ms
    triton, vendor = (lambda: 2.5), (lambda: 2.0)

    perf = SimpleNamespace(figure=figure, gpu=True, rounds=5, warmup=1)
    perf.round_info = lambda median: perf_conftest.PerfRunner.round_info(perf, median)
    prov = SimpleNamespace(accuracy="pass", message="", median_ms=2.5)
    perf.measure = lambda mode, case: SimpleNamespace(key="k", providers={"triton": prov})
    perf.extra_info = lambda res: {}
    perf.triton_call = lambda mode, case, ms: (
        (lambda: clock.time_ratio(triton, vendor)) if figure == "ratio"
        else (lambda: clock.time(triton)))

    class Benchmark:   # pytest-benchmark's pedantic: each round timer() after - before
        group, extra_info, stats = None, {}, None

        def pedantic(self, call, rounds, warmup_rounds, iterations):
            for _ in range(warmup_rounds):
                call()
            times = []
            for _ in range(rounds):
                t0 = clock()
                call()
                times.append(clock() - t0)
            self.stats = SimpleNamespace(stats=SimpleNamespace(
                median=gemmgate.stats.median(times)))

    bench = Benchmark()
    bench_mod.test_triton_gemm(bench, perf, "bf16", "m1-n1-k1")
    assert bench.extra_info[key] == pytest.approx(want)


def test_the_injected_slowdown_is_sized_from_gemmgates_median(perf_conftest, monkeypatch):
    c = perf_conftest
    seen = []

    def fake_slowed(call, extra_ms, device):
        seen.append((extra_ms, device))
        return call

    monkeypatch.setattr("gemmgate.slowdown.slowed", fake_slowed)
    gpu = torch.cuda.is_available()
    runner = c.PerfRunner(disabled=True, slowdown=0.1, clock=DeviceClock() if gpu else None)
    case_id = "m64-n64-k64"
    call = runner.triton_call("fp32", case_id, median_ms=7.0)
    assert seen == [(pytest.approx(0.7), "cuda:0" if gpu else "cpu")]   # the context's device
    if gpu:
        assert call() > 0                  # one device-timed round, in ms
    else:
        assert call().shape == (64, 64)    # the plain call, timed on the host


# One case of the suite's set: the CPU's `smoke` (fp32), a GPU's `pr` (one mode of it)
CASE = "m1024-n1024-k1024" if torch.cuda.is_available() else "m64-n64-k64"


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/perf",
         "-k", f"fp32-{CASE}", f"--benchmark-storage=file://{tmp_path}", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_autosave_then_compare_fail_through_public_options(tmp_path):
    """The save-then-compare cycle the GPU workflow runs: a saved run carries gemmgate's
    figures in extra_info, and a compare reads it back (threshold far above any noise:
    this checks the plumbing, not a speed)."""
    saved = _pytest(tmp_path, "--benchmark-autosave")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    runs = list(tmp_path.rglob("*.json"))
    assert len(runs) == 1
    bench = json.loads(runs[0].read_text())["benchmarks"][0]
    assert bench["extra_info"]["case"] == CASE
    assert bench["extra_info"]["per_call_median_ms"] > 0
    assert bench["stats"]["rounds"] >= 3
    compared = _pytest(tmp_path, "--benchmark-compare",
                       "--benchmark-compare-fail=median:100000%")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Comparing against benchmarks from" in compared.stdout + compared.stderr


def test_a_compare_fail_without_a_compare_is_a_usage_error_not_a_pass(tmp_path):
    """`--benchmark-compare-fail=median:5%` alone (the nightly's gate, its
    --benchmark-compare forgotten) left benchmarking off and passed, exit 0, with nothing
    compared: a gate that could not fail (a review)."""
    run = _pytest(tmp_path, "--benchmark-compare-fail=median:5%")
    assert run.returncode == 4, run.stdout + run.stderr
    assert "requires valid --benchmark-compare" in run.stdout + run.stderr


def test_without_the_benchmark_plugin_the_perf_tests_skip_saying_why(tmp_path):
    """`-p no:benchmark`: every perf test errored, "fixture 'benchmark' not found", though
    the conftest supports the flag for its hook (a review)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark",
         "-rs", "tests/perf", "-k", f"fp32-{CASE}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "1 skipped" in out and "needs pytest-benchmark" in out and "error" not in out


def _bench_json(path: Path, medians: dict[str, float]) -> str:
    path.write_text(json.dumps({"benchmarks": [
        {"name": f"test_triton_gemm[{n}]", "stats": {"median": m},
         "extra_info": {"mode": n.split("-")[0], "case": n.split("-", 1)[1],
                        "triton_median_ms": 0.5}} for n, m in medians.items()]}))
    return str(path)


def test_pytest_benchmark_rows_give_each_runs_median_change(tmp_path):
    script = ROOT / "scripts" / "pytest_benchmark_rows.py"
    saved = _bench_json(tmp_path / "s.json", {"bf16-m8-n8-k8": 1e-3, "fp8-m8-n8-k8": 2e-3})
    again = _bench_json(tmp_path / "a.json", {"bf16-m8-n8-k8": 1.02e-3, "fp8-m8-n8-k8": 2e-3})
    slow = _bench_json(tmp_path / "b.json", {"bf16-m8-n8-k8": 1.1e-3})
    out = tmp_path / "rows.csv"
    run = subprocess.run([sys.executable, str(script), str(out), saved, f"compare1={again}",
                          f"inject={slow}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    rows = list(csv.DictReader(out.open()))
    assert [(r["mode"], r["case"]) for r in rows] == [("bf16", "m8-n8-k8"), ("fp8", "m8-n8-k8")]
    assert [r["compare1_change"] for r in rows] == ["0.0200", "0.0000"]
    assert [r["inject_change"] for r in rows] == ["0.1000", ""]       # a test that did not run
    assert rows[0]["per_call_over_gemmgate"] == "2.000"                # 1 ms against 0.5 ms
    assert rows[0]["compare1_gemmgate_change"] == "0.0000"            # same 0.5 ms in both
    ratio = json.loads(Path(saved).read_text())
    for b in ratio["benchmarks"]:          # --perf-figure ratio: Triton / vendor time
        b["extra_info"].update(figure="ratio", ratio=1.25)
        b["stats"]["median"] = 0.8e-3       # 0.8 "ms" per vendor-ms
    (tmp_path / "r.json").write_text(json.dumps(ratio))
    for b in ratio["benchmarks"]:          # a later ratio run: gemmgate read 1.0 there
        b["extra_info"]["ratio"] = 1.0
    (tmp_path / "r2.json").write_text(json.dumps(ratio))
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "r.csv"),
                          str(tmp_path / "r.json"), f"compare1={tmp_path / 'r2.json'}"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert {r["per_call_over_gemmgate"] for r in got} == {"1.000"}  # 0.8 against 1 / 1.25
    # the run's own figure in the same unit (Triton / vendor), not Triton's milliseconds
    assert {r["compare1_gemmgate_change"] for r in got} == {"0.2500"}
    bad = subprocess.run([sys.executable, str(script), str(tmp_path / "x.csv"), saved,
                          f"compare1={script}"], capture_output=True, text=True)
    assert bad.returncode == 2 and "is not a pytest-benchmark JSON" in bad.stderr
    assert not (tmp_path / "x.csv").exists()
    # a test without a median (or a zero one), saved or compared: a usage error, no traceback
    for i, stats in enumerate(({}, None, {"median": 0.0}, {"median": None})):
        broken = tmp_path / f"broken{i}.json"
        broken.write_text(json.dumps({"benchmarks": [{"name": "t", "stats": stats}]}))
        for args in ([str(broken)], [saved, f"compare1={broken}"]):
            bad = subprocess.run([sys.executable, str(script), str(tmp_path / "x.csv"), *args],
                                 capture_output=True, text=True)
            assert bad.returncode == 2 and "Traceback" not in bad.stderr, (stats, bad.stderr)
            assert f"{broken} is not a pytest-benchmark JSON" in bad.stderr
            assert not (tmp_path / "x.csv").exists()
