"""asv suite: Triton GEMM against the vendor BLAS, one history per chip (asv machine).

The expensive part, measuring every (case, mode), happens once per commit per machine in
`setup_cache` (asv runs it in its own process and pickles the returned dict of plain
numbers); each `track_*` then only reads its figure from that dict. One class per
precision mode (Fp32, Tf32, Bf16, Fp16, Fp8, Tf32x3), each with track_time_ratio,
track_triton_us and track_vendor_us over the cases: one findable benchmark per mode on the
asv site; Bf16 and Fp16 also track_eager_time_ratio and track_triton_eager_us, the same
cases timed eagerly on a GPU (the eager target's host path). Every figure is one where
lower is better, as asv takes every tracked figure (its regressions page, `asv compare`;
asv has no higher-is-better setting, airspeed-velocity/asv#1617): a speed ratio or
TFLOP/s there listed a slowdown as an improvement (a review; version 1). Figures come from
gemmgate.run.Runner.run_case (vendor flags pinned per case): device-timed (CUDA graphs,
L2 flushed, interleaved) on a GPU, wall clock on the Triton interpreter on the CPU.

Importing this module is cheap and imports neither torch nor gemmgate: asv imports it in
every benchmark process. Older commits are measured by pointing ASV_PYTHONPATH at that
commit's `gemmgate/` and `kernels/` (docs/PERF_TESTS.md, scripts/device/h200_asv.sh).

Skips (asv's SkipNotImplemented, raised by the track_* function: n/a): a mode the chip
lacks, a case the provider cannot do (a shape torch._scaled_mm rejects even zero-padded
to multiples of 16: none of the pr set), a case not measured on this machine.
A wrong result (accuracy fail or silently downgraded precision) is a failure, not a skip.
"""

import math
import os
import sys

# The whole gemmgate.shapes.SETS["pr"] set (GPU) and SETS["smoke"] (CPU), named by
# Case.id (listed here: importing gemmgate would import torch in every asv process).
GPU_CASES = ("m1024-n1024-k1024", "m2048-n2048-k2048", "m4096-n4096-k4096",
             "m8192-n8192-k8192", "m4096-n4096-k4096-cr", "m4096-n4096-k4096-rc",
             "m4096-n11008-k4096", "m4096-n4096-k11008", "m16-n4096-k4096",
             "m128-n8192-k8192", "m1000-n1000-k1000", "m4096-n4096-k253",
             "m2048-n2048-k2048-rr+p8")
GPU_MODES = ("bf16", "fp16", "fp8", "tf32", "fp32", "tf32x3")
CPU_CASES = ("m64-n64-k64", "m48-n80-k72", "m64-n32-k96-cr", "m32-n64-k48-rc+p5")
CPU_MODES = ("fp32",)  # bf16 is wrong in the interpreter; fp16 adds little on the CPU
GPU_BUDGET_S = 0.25    # per case: 78 cases, about 1.5 minutes per commit on an H200
CPU_BUDGET_S = 0.3
# The eager target's modes (issue 11): timed a second time on a GPU with `--timing eager`
# (each call from the host, synchronized: the host path is in the figure), so a commit
# that makes the library's call slower on the host shows in the history where graph
# timing cannot see it (sessions 57-60 added 1.7-2.2 us a call on the CPU, unseen).
EAGER_MODES = ("bf16", "fp16")


def on_gpu() -> bool:
    """Decided without importing torch: $GEMMGATE_CHIP, else a GPU driver's device node.
    (If this guesses a GPU that torch cannot use, setup_cache measures nothing and every
    benchmark fails, saying to set GEMMGATE_CHIP: measure_all.)"""
    chip = os.environ.get("GEMMGATE_CHIP")
    if chip:
        return chip != "cpu"
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/kfd")


def plan() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (cases, modes) grid; $GEMMGATE_BENCH_MODES narrows the modes (e.g. bf16,fp8)."""
    cases, modes = (GPU_CASES, GPU_MODES) if on_gpu() else (CPU_CASES, CPU_MODES)
    only = os.environ.get("GEMMGATE_BENCH_MODES")
    if only:
        named = [m.strip() for m in only.split(",") if m.strip()]
        unknown = [m for m in named if m not in GPU_MODES + CPU_MODES]
        if unknown:   # (a typo dropped that mode, and asv ran green without it; a review)
            raise ValueError(f"$GEMMGATE_BENCH_MODES={only!r} names no mode {unknown}: "
                             f"the modes are {', '.join(GPU_MODES)}")
        modes = tuple(m for m in modes if m in named)
    return cases, modes


def measure_all(cases=None, modes=None, budget_s=None) -> dict:
    """{"<mode>-<case id>": figures} for every case and mode this chip can run, on a GPU
    also {"eager-<mode>-<case id>": figures} for EAGER_MODES timed eagerly, plus "_meta"
    (chip, package path). Figures are plain floats/strings (pickled by asv). Cases run
    through gemmgate's one run path: a RunContext and Runner.run_case."""
    from gemmgate.chips import select_chip
    from gemmgate.context import make_context
    from gemmgate.run import Runner
    from gemmgate.shapes import SETS

    chip = select_chip().chip
    gpu = chip.device_type != "cpu"
    if cases is None and modes is None and gpu != on_gpu():   # asv's call: its benchmarks
        # ask for plan()'s grid, which another device's set never fills: every one was
        # skipped as not measured, and asv ran green on nothing (a review)
        raise RuntimeError(f"the benchmarks are the {'GPU' if on_gpu() else 'CPU'} set "
                           f"($GEMMGATE_CHIP, else a GPU driver's device node), but torch "
                           f"runs on {chip.id}: set GEMMGATE_CHIP to match")
    want_cases, want_modes = plan() if gpu == on_gpu() else \
        ((GPU_CASES, GPU_MODES) if gpu else (CPU_CASES, CPU_MODES))
    cases = want_cases if cases is None else cases
    modes = [m for m in (want_modes if modes is None else modes) if m in chip.modes]
    if not modes:   # (a typo in $GEMMGATE_BENCH_MODES: every benchmark skipped, exit 0)
        raise RuntimeError(f"no mode to measure on {chip.id} (its modes: "
                           f"{', '.join(chip.modes)}; $GEMMGATE_BENCH_MODES="
                           f"{os.environ.get('GEMMGATE_BENCH_MODES')!r})")
    _timed_tree_is_asvs()
    by_id = {c.id: c for s in SETS.values() for c in s}
    budget = budget_s or (GPU_BUDGET_S if gpu else CPU_BUDGET_S)
    # make_context picks the device, timing policy and this chip's tuning cache, and
    # switches the Triton interpreter on for the CPU before `kernels` is first imported.
    ctx = make_context(modes=",".join(modes) or None, budget_s=budget)
    import gemmgate

    eager = [m for m in modes if m in EAGER_MODES] if gpu else []
    out: dict = {"_meta": {"chip": chip.id, "chip_modes": list(chip.modes),
                           "gemmgate": os.path.dirname(gemmgate.__file__),
                           "policy": ctx.policy.method, "budget_s": budget,
                           "eager_modes": eager}}
    _measure(Runner(ctx), modes, cases, by_id, "", out)
    if eager:   # the same cases timed eagerly: another context, the one run path again
        try:
            erunner = Runner(make_context(modes=",".join(eager), timing="eager",
                                          budget_s=budget))
        except Exception as e:  # its own entries fail, not the graph-timed ones
            out.update({f"eager-{m}-{c}": {"error": f"{type(e).__name__}: {e}"}
                        for m in eager for c in cases})
        else:
            _measure(erunner, eager, cases, by_id, "eager-", out)
    return out


def _under_asv() -> bool:
    """Whether this is one of asv's benchmark processes. `asv run --python=same` (asv's
    ExistingEnvironment, the way this suite is run) starts them with the caller's own
    environment: no ASV_CONF_DIR (only a built environment sets it), so that alone never
    saw this suite run under asv. Their main script is asv's benchmark.py."""
    if os.environ.get("ASV_CONF_DIR"):
        return True
    main = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return (os.path.basename(main) == "benchmark.py"
            and os.path.basename(os.path.dirname(main)) == "asv")


def _timed_tree_is_asvs() -> None:
    """Under asv, the gemmgate imported must be the tree asv records: the one
    ASV_PYTHONPATH names first where it is set, else asv's own checkout (ASV_CONF_DIR;
    under --python=same, which sets none, the tree of this suite). asv drops PYTHONPATH,
    so an installed gemmgate of another checkout (an editable install left pointing
    elsewhere) was timed and filed under this commit, nothing in the results saying so
    (a review). So must the `kernels` it will import, the GEMM under test: a tree in
    ASV_PYTHONPATH with gemmgate/ alone passed, and another tree's kernels were timed
    under this commit (a review; located, not imported: on the CPU the interpreter is
    switched on first). RuntimeError naming both otherwise."""
    if not _under_asv():
        return
    import importlib.util

    import gemmgate

    conf = os.environ.get("ASV_CONF_DIR") or os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    named = [p for p in os.environ.get("ASV_PYTHONPATH", "").split(os.pathsep) if p]
    want = os.path.realpath(named[0] if named else conf)
    spec = importlib.util.find_spec("kernels")
    for pkg, init in (("gemmgate", gemmgate.__file__),
                      ("kernels", spec.origin if spec is not None else None)):
        if not init:   # no kernels at all: own_kernels says so, as each case's failure
            continue
        got = os.path.realpath(os.path.dirname(os.path.dirname(init)))
        if got != want:
            raise RuntimeError(f"asv records {want}'s commit, but the {pkg} imported is "
                               f"{got}'s (an install of another tree): "
                               + ("put this tree first in ASV_PYTHONPATH" if named else
                                  f"set ASV_PYTHONPATH={want}"))


def _measure(runner, modes, cases, by_id: dict, prefix: str, out: dict) -> None:
    """Each (mode, case) through runner.run_case into out["<prefix><mode>-<case id>"]."""
    from gemmgate.precision import get_mode

    for mode_name in modes:
        mode = get_mode(mode_name)
        for case_id in cases:
            key = f"{prefix}{mode_name}-{case_id}"
            if case_id not in by_id:
                out[key] = {"error": f"case {case_id} is not in gemmgate.shapes.SETS"}
                continue
            try:
                res = runner.run_case(mode, by_id[case_id])
            except Exception as e:  # one broken case must not cost the others
                out[key] = {"error": f"{type(e).__name__}: {e}"}
                continue
            out[key] = figures(res)


def figures(res) -> dict:
    """The numbers asv tracks, from a gemmgate CaseResult."""
    t, v = res.providers["triton"], res.providers["vendor"]
    ratio = res.ratio
    return {"triton_tflops": t.tflops, "vendor_tflops": v.tflops, "ratio": ratio,
            "time_ratio": 1 / ratio if ratio else None,   # Triton / vendor time
            "triton_ms": t.median_ms, "vendor_ms": v.median_ms,
            "triton_accuracy": t.accuracy, "vendor_accuracy": v.accuracy,
            "triton_message": t.message, "vendor_message": v.message}


# Which accuracy each figure needs from which provider.
_NEEDS = {"triton_tflops": ("triton",), "vendor_tflops": ("vendor",),
          "ratio": ("triton", "vendor"), "time_ratio": ("triton", "vendor"),
          "triton_ms": ("triton",), "vendor_ms": ("vendor",)}


def pick(cache: dict, case: str, mode: str, figure: str, timing: str = "") -> float:
    """The figure for (case, mode), of the eager pass with `timing` "eager"; raises
    NotImplementedError (asv: skipped) where it cannot exist on this machine, RuntimeError
    (asv: failed) where it should but does not."""
    if "_error" in cache:   # setup_cache failed: every figure fails, saying why
        raise RuntimeError(cache["_error"])
    meta = cache.get("_meta", {})
    if mode not in meta.get("chip_modes", (mode,)):
        raise NotImplementedError(f"{mode} is not supported on {meta.get('chip')}")
    name = f"{timing}-{mode}-{case}" if timing else f"{mode}-{case}"
    entry = cache.get(name)
    if entry is None:
        raise NotImplementedError(f"{name} is not measured on {meta.get('chip')}")
    if "error" in entry:
        raise RuntimeError(entry["error"])
    for p in _NEEDS[figure]:
        acc = entry[f"{p}_accuracy"]
        if acc == "unsupported":
            raise NotImplementedError(f"{p}: {entry[f'{p}_message']}")
        if acc != "pass":
            raise RuntimeError(f"{p} accuracy {acc}: {entry[f'{p}_message']}")
    value = entry[figure]
    if value is None or not math.isfinite(value):
        raise RuntimeError(f"no {figure} for {mode}-{case}")
    return value


_CASES, _MODES = plan()


class _Mode:
    """One precision mode's benchmarks, params `case`: the asv site lists each mode as
    its own benchmark (bench_gemm.Bf16.track_time_ratio, ...), all filled from one
    setup_cache (same function, so one cache key for every subclass). A mode this
    machine did not measure is skipped (asv: n/a)."""

    params = [list(_CASES)]
    param_names = ["case"]
    timeout = 900
    mode = ""
    # asv keys stored results by version; without one it hashes the benchmark's source,
    # so any edit (a comment) dropped every result before it from the published history.
    # Raise it only when what a figure means changes (2: every figure lower-is-better).
    version = "2"

    def setup_cache(self):
        # a raise here is shown by `asv run` only under --show-stderr: the benchmarks read
        # "skipped (setup_cache failed)", the reason nowhere in a CI log (a review); handed
        # to each benchmark instead, it is printed as each one's failure
        try:
            return measure_all()
        except Exception as e:   # noqa: BLE001 - any reason, said by every benchmark
            return {"_error": f"setup_cache: {type(e).__name__}: {e}"}

    setup_cache.timeout = 900

    def _track(self, cache, case, figure, timing=""):
        try:
            return pick(cache, case, self.mode, figure, timing)
        except NotImplementedError as e:  # asv: skipped (n/a) from inside a benchmark
            from asv_runner.benchmarks.mark import SkipNotImplemented

            raise SkipNotImplemented(str(e)) from None

    def track_time_ratio(self, cache, case):
        """Triton time / vendor time on interleaved samples (< 1: Triton faster; the
        inverse of the gate's speed ratio)."""
        return self._track(cache, case, "time_ratio")

    track_time_ratio.unit = "ratio"

    def track_triton_us(self, cache, case):
        """The project's Triton GEMM: its median (device) time a call."""
        return self._track(cache, case, "triton_ms") * 1e3

    track_triton_us.unit = "us"

    def track_vendor_us(self, cache, case):
        """The vendor BLAS (cuBLAS / hipBLASLt / CPU BLAS, fp8 via torch._scaled_mm)."""
        return self._track(cache, case, "vendor_ms") * 1e3

    track_vendor_us.unit = "us"


class Fp32(_Mode):
    """IEEE fp32 (no TF32 on either side)."""

    mode = "fp32"


class Tf32(_Mode):
    """fp32 inputs on TF32 tensor cores."""

    mode = "tf32"


class _Eager(_Mode):
    """A mode of EAGER_MODES: its cases also timed eagerly on a GPU (skipped elsewhere)."""

    def track_eager_time_ratio(self, cache, case):
        """Triton time / vendor time, each call timed from the host (`--timing eager`:
        the library's host path is in both figures)."""
        return self._track(cache, case, "time_ratio", "eager")

    track_eager_time_ratio.unit = "ratio"

    def track_triton_eager_us(self, cache, case):
        """The project's Triton GEMM, one eager call: host path, launch and kernel."""
        return self._track(cache, case, "triton_ms", "eager") * 1e3

    track_triton_eager_us.unit = "us"


class Bf16(_Eager):
    """bf16 inputs, fp32 accumulation."""

    mode = "bf16"


class Fp16(_Eager):
    """fp16 inputs, fp32 accumulation."""

    mode = "fp16"


class Fp8(_Mode):
    """fp8 e4m3 inputs with scales, against torch._scaled_mm."""

    mode = "fp8"


class Tf32x3(_Mode):
    """Three-pass TF32 (near-fp32 accuracy) against the vendor's IEEE fp32."""

    mode = "tf32x3"
