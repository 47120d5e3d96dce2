"""The asv suite (benchmarks/, asv.conf.json): declarations checked without asv, then
`asv check`, a quick `asv run --python=same` on the CPU chip, and `asv publish`, all
against a temporary copy of the configuration (results, html, machine file in tmp)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmgate.shapes import SETS

ROOT = Path(__file__).resolve().parents[1]
HAS_ASV = importlib.util.find_spec("asv") is not None


def _bench_module():
    from benchmarks import bench_gemm

    return bench_gemm


def test_suite_cases_are_named_set_cases():
    bench = _bench_module()
    assert list(bench.GPU_CASES) == [c.id for c in SETS["pr"]]   # every pr case, in order
    assert set(bench.CPU_CASES) == {c.id for c in SETS["smoke"]}


def test_import_is_cheap():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import benchmarks.bench_gemm; "
            "print(sorted(m for m in ('torch', 'gemmgate', 'triton') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_pick_skips_and_fails():
    pick = _bench_module().pick
    ok = {"triton_tflops": 2.0, "vendor_tflops": 1.0, "ratio": 0.5, "triton_accuracy": "pass",
          "vendor_accuracy": "pass", "triton_message": "", "vendor_message": ""}
    cache = {"_meta": {"chip": "x", "chip_modes": ["fp32", "fp8"]},
             "fp32-m1-n1-k1": ok,
             "fp8-m1-n1-k1": {**ok, "vendor_accuracy": "unsupported", "vendor_tflops": None,
                              "ratio": None, "vendor_message": "K % 16"},
             "fp32-m2-n2-k2": {**ok, "triton_accuracy": "downgraded"},
             "fp32-m3-n3-k3": {"error": "RuntimeError: boom"}}
    assert pick(cache, "m1-n1-k1", "fp32", "ratio") == 0.5
    assert pick(cache, "m1-n1-k1", "fp8", "triton_tflops") == 2.0
    for case, mode, fig, exc in [("m1-n1-k1", "tf32", "ratio", NotImplementedError),
                                 ("m9-n9-k9", "fp32", "ratio", NotImplementedError),
                                 ("m1-n1-k1", "fp8", "vendor_tflops", NotImplementedError),
                                 ("m1-n1-k1", "fp8", "ratio", NotImplementedError),
                                 ("m2-n2-k2", "fp32", "triton_tflops", RuntimeError),
                                 ("m2-n2-k2", "fp32", "vendor_tflops", None),
                                 ("m3-n3-k3", "fp32", "ratio", RuntimeError)]:
        if exc is None:
            assert pick(cache, case, mode, fig) == 1.0
        else:
            with pytest.raises(exc):
                pick(cache, case, mode, fig)


def test_pick_reads_the_eager_pass_apart():
    pick = _bench_module().pick
    ok = {"triton_tflops": 2.0, "vendor_tflops": 1.0, "ratio": 0.5, "triton_ms": 0.01,
          "triton_accuracy": "pass", "vendor_accuracy": "pass", "triton_message": "",
          "vendor_message": ""}
    cache = {"_meta": {"chip": "x", "chip_modes": ["bf16"]}, "bf16-m1-n1-k1": ok,
             "eager-bf16-m1-n1-k1": {**ok, "ratio": 0.4, "triton_ms": 0.02}}
    assert pick(cache, "m1-n1-k1", "bf16", "ratio") == 0.5
    assert pick(cache, "m1-n1-k1", "bf16", "ratio", "eager") == 0.4
    assert pick(cache, "m1-n1-k1", "bf16", "triton_ms", "eager") == 0.02
    with pytest.raises(NotImplementedError, match="eager-bf16-m2-n2-k2"):
        pick(cache, "m2-n2-k2", "bf16", "ratio", "eager")


def test_every_tracked_figure_grows_when_triton_gets_slower():
    """asv takes every tracked figure as lower-is-better (its regressions page, `asv
    compare`; no setting flips it): the suite tracked the speed ratio and TFLOP/s, and a
    2x slower Triton was listed as improved (a review). Each track_* of each mode class,
    read from the figures of a case whose Triton time doubles, must not fall, and each
    that involves Triton must rise."""
    import types

    bench = _bench_module()

    def entry(t_ms: float) -> dict:
        prov = {n: types.SimpleNamespace(tflops=2 / ms, median_ms=ms, accuracy="pass",
                                         message="") for n, ms in (("triton", t_ms),
                                                                   ("vendor", 1.0))}
        return bench.figures(types.SimpleNamespace(providers=prov, ratio=1.0 / t_ms))

    def cache(t_ms: float) -> dict:
        modes = [c.mode for c in vars(bench).values() if isinstance(c, type)
                 and issubclass(c, bench._Mode) and c.mode]
        out = {"_meta": {"chip": "x", "chip_modes": modes}}
        for m in modes:
            out[f"{m}-m1-n1-k1"] = out[f"eager-{m}-m1-n1-k1"] = entry(t_ms)
        return out

    fast, slow = cache(1.0), cache(2.0)
    seen = []
    for cls in (c for c in vars(bench).values() if isinstance(c, type)
                and issubclass(c, bench._Mode) and c.mode):
        for name in (n for n in dir(cls) if n.startswith("track_")):
            track = getattr(cls(), name)
            before, after = track(fast, "m1-n1-k1"), track(slow, "m1-n1-k1")
            seen.append(name)
            if "vendor" in name:
                assert after == before, (cls.__name__, name)
            else:
                assert after > before, (cls.__name__, name, before, after)
    assert {"track_time_ratio", "track_triton_us", "track_vendor_us",
            "track_eager_time_ratio", "track_triton_eager_us"} <= set(seen)


@pytest.mark.parametrize("given, want", [("bf16, fp8", ("bf16", "fp8")),
                                         ("fp8,,bf16", ("bf16", "fp8"))])
def test_bench_modes_are_read_with_their_spaces(monkeypatch, given, want):
    """"bf16, fp8" dropped fp8, and asv ran green without it (a review)."""
    monkeypatch.setenv("GEMMGATE_CHIP", "nvidia-h200")
    monkeypatch.setenv("GEMMGATE_BENCH_MODES", given)
    assert _bench_module().plan()[1] == want


def test_a_bench_mode_that_is_no_mode_is_an_error(monkeypatch):
    monkeypatch.setenv("GEMMGATE_CHIP", "nvidia-h200")
    monkeypatch.setenv("GEMMGATE_BENCH_MODES", "bf16,fp88")
    with pytest.raises(ValueError, match=r"names no mode \['fp88'\]"):
        _bench_module().plan()


def test_on_a_gpu_the_eager_modes_are_timed_again_eagerly(monkeypatch):
    """measure_all on a GPU chip (stand-ins for the chip, the context and the runner):
    every mode graph-timed, then bf16 and fp16 (EAGER_MODES) in a context of their own with
    --timing eager, filed under eager-<mode>-<case>; the CPU chip times no eager pass."""
    import types

    from gemmgate import chips, context, run

    bench = _bench_module()
    made, ran = [], []

    def fake_context(modes=None, timing=None, budget_s=None):
        made.append((modes, timing))
        return types.SimpleNamespace(policy=types.SimpleNamespace(method=timing or "graph"),
                                     timing=timing)

    class FakeRunner:
        def __init__(self, ctx):
            self.ctx = ctx

        def run_case(self, mode, case):
            ran.append((self.ctx.timing, mode.name, case.id))
            p = types.SimpleNamespace(tflops=1.0, median_ms=0.5, accuracy="pass", message="")
            return types.SimpleNamespace(providers={"triton": p, "vendor": p}, ratio=1.0)

    def chip_of(device_type):
        return types.SimpleNamespace(chip=types.SimpleNamespace(
            id="gpu-x", device_type=device_type, modes=("fp32", "bf16", "fp16", "fp8")))

    monkeypatch.setattr(context, "make_context", fake_context)
    monkeypatch.setattr(run, "Runner", FakeRunner)
    monkeypatch.setattr(chips, "select_chip", lambda: chip_of("cuda"))
    out = bench.measure_all(cases=["m1024-n1024-k1024"], modes=["fp32", "bf16", "fp8", "fp16"])
    assert made == [("fp32,bf16,fp8,fp16", None), ("bf16,fp16", "eager")]
    assert [r for r in ran if r[0] == "eager"] == [("eager", "bf16", "m1024-n1024-k1024"),
                                                  ("eager", "fp16", "m1024-n1024-k1024")]
    assert out["_meta"]["eager_modes"] == ["bf16", "fp16"]
    assert {k for k in out if k.startswith("eager-")} == {"eager-bf16-m1024-n1024-k1024",
                                                          "eager-fp16-m1024-n1024-k1024"}
    def no_eager(modes=None, timing=None, budget_s=None):
        if timing == "eager":
            raise RuntimeError("not enough free memory")
        return fake_context(modes, timing, budget_s)

    monkeypatch.setattr(context, "make_context", no_eager)   # its own entries fail only
    out = bench.measure_all(cases=["m1024-n1024-k1024"], modes=["bf16"])
    assert out["eager-bf16-m1024-n1024-k1024"] == {
        "error": "RuntimeError: not enough free memory"}
    assert "error" not in out["bf16-m1024-n1024-k1024"]
    monkeypatch.setattr(context, "make_context", fake_context)
    made.clear()
    monkeypatch.setattr(chips, "select_chip", lambda: chip_of("cpu"))
    out = bench.measure_all(cases=["m64-n64-k64"], modes=["fp32", "bf16"])
    assert made == [("fp32,bf16", None)] and not any(k.startswith("eager-") for k in out)


def test_a_suite_that_would_measure_nothing_fails_instead_of_skipping(monkeypatch):
    """GEMMGATE_BENCH_MODES naming none of the chip's modes, or a GPU device node where
    torch runs on the CPU: every benchmark was skipped as not measured and `asv run` was
    green on all-NaN results, which the nightly committed (a review). setup_cache's
    raise fails every benchmark (asv: exit 2)."""
    import types

    from gemmgate import chips

    bench = _bench_module()
    cpu = types.SimpleNamespace(chip=types.SimpleNamespace(
        id="cpu", device_type="cpu", modes=("fp32", "fp16")))
    monkeypatch.setattr(chips, "select_chip", lambda: cpu)
    monkeypatch.setenv("GEMMGATE_CHIP", "cpu")
    monkeypatch.setenv("GEMMGATE_BENCH_MODES", "bf16")
    with pytest.raises(RuntimeError, match="no mode to measure on cpu"):
        bench.measure_all()
    monkeypatch.delenv("GEMMGATE_BENCH_MODES")
    monkeypatch.setenv("GEMMGATE_CHIP", "nvidia-h200")   # the GPU set planned
    with pytest.raises(RuntimeError, match="the benchmarks are the GPU set.*runs on cpu"):
        bench.measure_all()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@pytest.fixture(scope="module")
def asv_conf(tmp_path_factory):
    if not HAS_ASV:
        pytest.skip("asv is not installed (pip install asv)")
    head = _git("rev-parse", "HEAD")
    if not head:
        pytest.skip("no git HEAD in the repository: asv needs a commit to record")
    import json5

    tmp = tmp_path_factory.mktemp("asv")
    conf = json5.loads((ROOT / "asv.conf.json").read_text())
    conf.update(repo=str(ROOT), benchmark_dir=str(ROOT / "benchmarks"),
                results_dir=str(tmp / "results"), html_dir=str(tmp / "html"),
                env_dir=str(tmp / "env"), branches=[head])
    path = tmp / "asv.conf.json"
    path.write_text(json.dumps(conf, indent=2))
    # asv drops PYTHONPATH in benchmark processes; ASV_PYTHONPATH goes first on sys.path.
    path_env = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, HOME=str(tmp), GEMMGATE_CHIP="cpu", PYTHONPATH=path_env,
               ASV_PYTHONPATH=path_env)
    return tmp, path, env, head


def _asv(conf, *args: str, timeout: float = 300) -> str:
    """asv under the test's config; the timeout only guards against a hang (`asv run`
    took over 50 s on the 2-core CI machine with a second suite beside it, session 18)."""
    tmp, path, env, _ = conf
    cmd = [sys.executable, "-m", "asv", *args, "--config", str(path)]
    out = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, f"{' '.join(args)} failed:\n{out.stdout}\n{out.stderr}"
    return out.stdout + out.stderr


def test_asv_check_run_publish(asv_conf):
    tmp, _, _, head = asv_conf
    assert "No problems found" in _asv(asv_conf, "check", "--python=same")
    # The machine entry: scripts/asv_machine.py (chip id and software stack) under HOME=tmp.
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "asv_machine.py"), "--machine",
                          "cpu-ci"], cwd=tmp, env=asv_conf[2], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    _asv(asv_conf, "run", "--python=same", "--quick", "--show-stderr",
         "--set-commit-hash", head, "--machine", "cpu-ci")
    files = [p for p in (tmp / "results" / "cpu-ci").glob("*.json") if p.name != "machine.json"]
    assert len(files) == 1, files
    data = json.loads(files[0].read_text())
    assert data["commit_hash"] == head
    machine = json.loads((tmp / "results" / "cpu-ci" / "machine.json").read_text())
    assert "torch" in machine["os"] and machine["num_cpu"], machine
    names = ("bench_gemm.Fp32.track_triton_us", "bench_gemm.Fp32.track_vendor_us",
             "bench_gemm.Fp32.track_time_ratio")
    for name in names:
        values = data["results"][name][0]
        assert values and all(isinstance(v, float) and math.isfinite(v) and v > 0
                              for v in values), (name, values)
    for mode in ("Tf32", "Bf16", "Fp16", "Fp8", "Tf32x3"):   # not measured on the CPU
        values = data["results"][f"bench_gemm.{mode}.track_time_ratio"][0]
        assert all(v is None or math.isnan(v) for v in values), (mode, values)
    _asv(asv_conf, "publish")
    assert (tmp / "html" / "index.html").is_file()
    # a version of their own: a hash of their source would drop the history on any edit
    declared = json.loads((tmp / "results" / "benchmarks.json").read_text())
    ours = {k: v for k, v in declared.items() if k.startswith("bench_gemm.")}
    assert ours and {v["version"] for v in ours.values()} == {"2"}


@pytest.mark.skipif(not HAS_ASV, reason="asv is not installed")
def test_a_gpu_chips_machine_fields_hold_its_stack_and_no_host(monkeypatch):
    """Each lease of the device fleet can be another host: a GPU chip's asv line must not
    split on the kernel release, host CPU, cores or memory, only on the software stack."""
    from types import SimpleNamespace

    import gemmgate.chips
    import gemmgate.env

    spec = importlib.util.spec_from_file_location("asv_machine", ROOT / "scripts" /
                                                  "asv_machine.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    chip = gemmgate.chips.CHIPS["nvidia-h200"]
    monkeypatch.setattr(gemmgate.chips, "select_chip", lambda c: SimpleNamespace(chip=chip))
    env = {"torch": "2.11.0+cu130", "triton": "3.6.0", "cuda": "13.0", "device_name":
           "NVIDIA H200", "driver": "580.159.04"}
    monkeypatch.setattr(gemmgate.env, "environment", lambda *a: env)
    hosts = []
    for release, cpus in (("6.18.44-fc-v973-gpu", 16), ("6.18.44-fc-v982-gpu", 32)):
        monkeypatch.setattr(mod.platform, "release", lambda r=release: r)
        monkeypatch.setattr(mod.os, "cpu_count", lambda c=cpus: c)
        hosts.append(mod.fields("nvidia-h200"))
    assert hosts[0] == hosts[1]
    f = hosts[0]
    assert f["cpu"] == "NVIDIA H200 | driver 580.159.04 | CUDA 13.0"
    assert "torch 2.11.0+cu130" in f["os"] and "triton 3.6.0" in f["os"]


def test_a_failed_setup_cache_is_each_benchmarks_failure_saying_why(monkeypatch):
    """asv shows a raise in setup_cache only under --show-stderr: the benchmarks read
    "skipped (setup_cache failed)", the reason nowhere in the nightly's log (a review).
    The reason is handed to each benchmark, which fails with it (asv prints that)."""
    bench = _bench_module()

    def broken():
        raise RuntimeError("no mode to measure on cpu")

    monkeypatch.setattr(bench, "measure_all", broken)
    cache = bench.Fp32().setup_cache()
    with pytest.raises(RuntimeError, match="setup_cache: RuntimeError: no mode to measure"):
        bench.Fp32().track_time_ratio(cache, bench.CPU_CASES[0])


def test_the_tree_asv_times_is_the_one_it_records(monkeypatch, tmp_path):
    """asv drops PYTHONPATH: an installed gemmgate of another checkout was timed and filed
    under this commit, unsaid (a review). Under asv (ASV_CONF_DIR), the imported tree must
    be ASV_PYTHONPATH's first, else asv's own."""
    bench = _bench_module()
    monkeypatch.delenv("ASV_PYTHONPATH", raising=False)
    monkeypatch.delenv("ASV_CONF_DIR", raising=False)
    bench._timed_tree_is_asvs()                       # not under asv: nothing to say
    monkeypatch.setenv("ASV_CONF_DIR", str(ROOT))
    bench._timed_tree_is_asvs()                       # this checkout's, as asv records
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="an install of another tree.*ASV_PYTHONPATH="):
        bench._timed_tree_is_asvs()
    monkeypatch.setenv("ASV_PYTHONPATH", os.pathsep.join([str(ROOT), str(tmp_path)]))
    bench._timed_tree_is_asvs()                       # the tree named first is this one
    monkeypatch.setenv("ASV_PYTHONPATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="first in ASV_PYTHONPATH"):
        bench._timed_tree_is_asvs()


def test_the_tree_guard_covers_the_kernels_timed_too(monkeypatch, tmp_path):
    """A tree in ASV_PYTHONPATH with gemmgate/ but no kernels/ (`git archive <sha>
    gemmgate`): the guard passed, and the kernels of whatever was installed were timed
    and filed under that commit (a review). The GEMM under test must be the tree's too."""
    import gemmgate

    bench = _bench_module()
    other = tmp_path / "other"
    (other / "gemmgate").mkdir(parents=True)
    monkeypatch.setenv("ASV_CONF_DIR", str(ROOT))
    monkeypatch.setenv("ASV_PYTHONPATH", str(other))
    monkeypatch.setattr(gemmgate, "__file__", str(other / "gemmgate" / "__init__.py"))
    with pytest.raises(RuntimeError, match=r"the kernels imported is .*first in ASV_PYTHONPATH"):
        bench._timed_tree_is_asvs()
    monkeypatch.setenv("ASV_PYTHONPATH", str(ROOT))   # both from the tree named: fine
    monkeypatch.setattr(gemmgate, "__file__", str(ROOT / "gemmgate" / "__init__.py"))
    bench._timed_tree_is_asvs()


def test_the_tree_guard_holds_under_asv_run_python_same(monkeypatch, tmp_path):
    """`asv run --python=same` (asv's ExistingEnvironment) starts its benchmark processes
    with the caller's environment, no ASV_CONF_DIR: the guard above never ran there, and
    another checkout's installed gemmgate was timed and filed under this commit, exit 0.
    Such a process is known by its main script, asv's benchmark.py."""
    import gemmgate

    bench = _bench_module()
    for var in ("ASV_CONF_DIR", "ASV_PYTHONPATH"):
        monkeypatch.delenv(var, raising=False)
    asv_main = tmp_path / "site-packages" / "asv" / "benchmark.py"
    monkeypatch.setattr(sys, "argv", [str(asv_main), "setup_cache", str(ROOT / "benchmarks")])
    bench._timed_tree_is_asvs()                       # this checkout's gemmgate: fine
    other = tmp_path / "other" / "gemmgate" / "__init__.py"
    monkeypatch.setattr(gemmgate, "__file__", str(other))
    with pytest.raises(RuntimeError, match="an install of another tree.*ASV_PYTHONPATH="):
        bench._timed_tree_is_asvs()
    monkeypatch.setattr(sys, "argv", ["pytest"])      # not asv's process: not its concern
    bench._timed_tree_is_asvs()


def _user_site_on(env: dict) -> bool:
    """Whether this Python, run with `env`, reads the user site-packages (.pth files)."""
    code = "import site, sys; sys.exit(0 if site.ENABLE_USER_SITE else 1)"
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 0


def test_asv_run_python_same_refuses_another_trees_gemmgate(asv_conf, tmp_path):
    """End to end: a user site-packages .pth puts another copy of gemmgate first (as an
    editable install of another checkout does); no ASV_PYTHONPATH. Every benchmark fails
    naming both trees, instead of timing that copy under this commit."""
    tmp, path, env, head = asv_conf
    other = tmp_path / "other"
    import shutil

    shutil.copytree(ROOT / "gemmgate", other / "gemmgate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    user = tmp_path / "userbase"
    site_dir = user / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / \
        "site-packages"
    site_dir.mkdir(parents=True)
    (site_dir / "other.pth").write_text(f"{other}\n")
    env = {k: v for k, v in env.items() if k != "ASV_PYTHONPATH"}
    env["PYTHONUSERBASE"] = str(user)
    # A virtual environment without --system-site-packages (README's PEP 668 advice, the
    # GPU jobs' scripts/runner/job_venv.py) reads no user site-packages: the .pth never
    # loaded, asv timed this tree's gemmgate, and this test failed there (a review)
    if not _user_site_on(env):
        pytest.skip("this Python reads no user site-packages (a virtual environment): "
                    "no .pth there can put another gemmgate first")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "asv_machine.py"), "--machine",
                    "cpu-ci"], cwd=tmp, env=env, capture_output=True, text=True, timeout=60,
                   check=True)
    out = subprocess.run([sys.executable, "-m", "asv", "run", "--python=same", "--quick",
                          "--set-commit-hash", head, "--machine", "cpu-ci", "-b",
                          "Fp32.track_time_ratio", "--config", str(path)],
                         cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert f"the gemmgate imported is {os.path.realpath(other)}'s" in text, text
