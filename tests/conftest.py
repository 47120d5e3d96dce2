"""Test set-up: without a GPU, kernels run on the Triton interpreter (CPU tensors).

TRITON_INTERPRET is read when a kernel is decorated, so it is set here, before any test
module imports `kernels`. GPU tests carry the `gpu` marker and skip without a device.
On a GPU host the kernels are compiled for the whole process, so a test that asks for the
CPU path in-process (gemmgate.interpreter.enable: `--chip cpu`) skips there, saying so,
instead of switching the process to the interpreter for every test after it (session
16: reference kernels loaded later were decorated for the interpreter and failed on CUDA
tensors). The CPU suite runs on a GPU host with CUDA_VISIBLE_DEVICES= (no GPU visible).

pytest-benchmark (tests/perf, docs/PERF_TESTS.md) is configured here through its public
options only: this conftest is loaded before the plugin's own (trylast) pytest_configure
reads them, whether pytest runs from the root or on tests/perf.
- Benchmarking is off unless asked for (--benchmark-enable, or a save/compare/json/only
  option): the default `pytest -q` still runs every perf test once, as a smoke check.
- Storage per chip: without --benchmark-storage, runs are saved under
  <rootdir>/.benchmarks/<chip id>/, so a compare never crosses chips.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    from gemmgate import interpreter

    interpreter.enable()   # TRITON_INTERPRET=1, and triton 3.6's interpreter fixed
    # a runner's GEMMGATE_CHIP (its .env names its GPU chip) is no chip of a CPU suite run
    # there with CUDA_VISIBLE_DEVICES= : select_chip below stopped the session (a review)
    os.environ.pop("GEMMGATE_CHIP", None)

# Processes the tests start (CLI runs, --devices workers, calibration runs) import this
# checkout, not whatever gemmgate is installed: a stale editable install tested another
# tree (a review)
ROOT = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.fixture(autouse=True)
def _no_ci_step_summary(monkeypatch):
    """`--summary` defaults to $GITHUB_STEP_SUMMARY: on CI every in-process check and
    baseline call appended its fake gate tables to the job's real summary page (21 KB;
    a review). A test that wants it sets it."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


DEFAULT_STORAGE = "file://./.benchmarks"
# Options that only make sense with benchmarking on: any of them switches it on.
# (--benchmark-compare-fail alone, the compare forgotten, passed with nothing compared:
# on, pytest-benchmark refuses it as a usage error; a review)
ENABLING = ("benchmark_enable", "benchmark_only", "benchmark_save", "benchmark_autosave",
            "benchmark_compare", "benchmark_compare_fail", "benchmark_json")


def _storage_given(config) -> bool:
    return (config.getoption("benchmark_storage") != DEFAULT_STORAGE
            or any(a.startswith("--benchmark-storage") for a in config.invocation_params.args))


def pytest_addoption(parser):
    parser.addoption("--inject-slowdown", type=float, default=0.0, metavar="F",
                     help="tests/perf: add F x the Triton call's device time of extra work "
                          "after each call (validates --benchmark-compare-fail)")
    parser.addoption("--perf-gap-ms", type=float, default=10.0, metavar="MS",
                     help="tests/perf on a GPU: keep the GPU spinning this long after "
                          "each timed call (DeviceClock gap_ms; default 10, 0: off)")
    parser.addoption("--perf-figure", choices=("time", "ratio"), default="time",
                     help="tests/perf on a GPU: the stored figure of a round, Triton's "
                          "device time, or Triton's time / the vendor's in the same round")


def pytest_configure(config):
    if config.getoption("inject_slowdown") < 0:
        raise pytest.UsageError("--inject-slowdown must be >= 0")
    if not 0 <= config.getoption("perf_gap_ms") <= 1000:
        raise pytest.UsageError("--perf-gap-ms must be between 0 and 1000")
    if not hasattr(config.option, "benchmark_storage"):
        return  # pytest-benchmark not installed or -p no:benchmark
    if not any(config.getoption(o, None) for o in ENABLING):
        config.option.benchmark_disable = True
    if not _storage_given(config):
        from gemmgate.chips import select_chip

        try:
            chip_id = select_chip().chip.id
        except ValueError as e:  # e.g. GEMMGATE_CHIP names no known chip
            raise pytest.UsageError(str(e)) from None
        root = Path(__file__).resolve().parents[1]
        config.option.benchmark_storage = f"file://{root / '.benchmarks' / chip_id}"


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_heard():
    """SIGINT as a terminal gives it: a shell that starts the suite in the background
    (`pytest &`, no job control) ignores SIGINT for it, Python then installs no handler,
    and the tests of Ctrl-C (test_stop_signal.py) read that as the CLI not hearing it
    (session 77: 10 failed, one child run hung 240 s). Set for the session and its
    children, then put back."""
    import signal

    old = signal.getsignal(signal.SIGINT)
    if old is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if old is signal.SIG_IGN:
        signal.signal(signal.SIGINT, old)


@pytest.fixture
def device() -> str:
    return "cuda" if HAS_GPU else "cpu"


@pytest.fixture(autouse=True)
def _compiled_kernels_on_a_gpu_host(monkeypatch):
    """On a GPU host, the in-process CPU path skips the test (module docstring)."""
    if HAS_GPU:
        from gemmgate import interpreter

        def enable() -> None:
            pytest.skip("the CPU path (Triton interpreter) in-process, on a GPU host: run "
                        "the CPU suite with CUDA_VISIBLE_DEVICES= (kernels are compiled "
                        "for this whole process)")

        monkeypatch.setattr(interpreter, "enable", enable)
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)


@pytest.fixture(scope="session")
def compiling_run() -> Callable[..., subprocess.CompletedProcess]:
    """run(script, *argv): a script in a subprocess without the interpreter (the tests'
    kernels are decorated for it, which compiles nothing), for scripts that compile
    kernels for sm_90 on the CPU (Triton's bundled ptxas, no GPU)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = Path(__file__).resolve().parents[1]

    def run(script: Path, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-W", "ignore", str(script), *argv],
                              capture_output=True, text=True, timeout=600, cwd=root, env=env)

    return run


@pytest.fixture(scope="session")
def load_script() -> Callable[..., ModuleType]:
    """A loader of a script by its path (scripts/ is no package): load(path, name=None)
    executes the file as module `name or path.stem`, registered in sys.modules under
    that name first (a script's dataclasses look their module up), and returns it."""

    def load(path: Path, name: str | None = None) -> ModuleType:
        name = name or path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    return load


@pytest.fixture(autouse=True, scope="session")
def _tuning_cache(tmp_path_factory):
    """Tests never read or write the user's tuning cache (~/.cache/gemmgate/tuning)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GEMMGATE_TUNING_DIR", str(tmp_path_factory.mktemp("tuning")))
    yield
    mp.undo()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo_with_kernels(d: Path) -> Path:
    """A new git repository in `d` holding an uncommitted copy of this checkout's kernels/."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    shutil.copytree(Path(__file__).resolve().parents[1] / "kernels", d / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _git(d, "init", "-q")
    _git(d, "config", "user.email", "t@example.com")
    _git(d, "config", "user.name", "t")
    return d


@pytest.fixture(scope="session")
def kernels_repo(tmp_path_factory) -> tuple[Path, str, str]:
    """A throw-away git repository: (path, first commit, second commit). Both commits hold
    a copy of this checkout's kernels/ whose configs.py ends in MARK = 'old' / 'new'; a
    third commit (HEAD) removes kernels/. For the A/B reference (gemmgate/reference.py)."""
    d = _repo_with_kernels(tmp_path_factory.mktemp("refrepo"))
    configs = d / "kernels" / "configs.py"
    original = configs.read_text()
    commits = []
    for mark in ("old", "new"):
        configs.write_text(original + f"\nMARK = {mark!r}\n")
        _git(d, "add", "-A")
        _git(d, "commit", "-q", "-m", mark)
        commits.append(_git(d, "rev-parse", "HEAD"))
    _git(d, "rm", "-q", "-r", "kernels")
    _git(d, "commit", "-q", "-m", "drop kernels")
    return d, commits[0], commits[1]


@pytest.fixture(scope="session")
def clean_repo(tmp_path_factory) -> tuple[Path, str]:
    """A throw-away git repository whose one commit (HEAD) holds this checkout's kernels/,
    with a working tree equal to it: (path, HEAD)."""
    d = _repo_with_kernels(tmp_path_factory.mktemp("cleanrepo"))
    _git(d, "add", "-A")
    _git(d, "commit", "-q", "-m", "kernels")
    return d, _git(d, "rev-parse", "HEAD")


# --- synthetic timing and synthetic runs: verdicts that never rest on wall-clock time ---

SYNTHETIC_ROUNDS = 20
SYNTHETIC_BASE_MS = {"triton": 1.0, "vendor": 0.9, "reference": 1.0}


class _Slowed:
    """Stands for the Triton call wrapped by `--inject-slowdown F`: calls the original
    (so the code path runs) and carries F, which the fake `measure` adds to the time."""

    def __init__(self, call, fraction: float) -> None:
        self.call, self.fraction = call, fraction

    def __call__(self):
        return self.call()


class SyntheticTiming:
    """What `synthetic_timing` installed: `base_ms` (provider name -> median ms, edit it
    to make a kernel slower or faster; unnamed providers get 1.0), `rounds` per provider,
    and, per fake `measure` call in order, `measured` (its provider names) and
    `policies` (the TimingPolicy it was given)."""

    def __init__(self) -> None:
        self.base_ms = dict(SYNTHETIC_BASE_MS)
        self.rounds = SYNTHETIC_ROUNDS
        self.measured: list[tuple[str, ...]] = []
        self.policies: list = []

    def measure(self, fns, policy, *, flush_bytes, device="cuda", timed=None):
        import random
        import zlib

        self.measured.append(tuple(fns))
        self.policies.append(policy)
        if timed is not None:   # the calls themselves, as the wall and eager methods
            timed.clear()
            timed.update(fns)
        out = {}
        for name, fn in fns.items():
            fn()  # each callable still runs once
            ms = self.base_ms.get(name, 1.0) * (1 + getattr(fn, "fraction", 0.0))
            rng = random.Random(zlib.crc32(name.encode()))  # 0.2% jitter, same every call
            out[name] = [ms * (1 + rng.gauss(0, 0.002)) for _ in range(self.rounds)]
        return out

    @staticmethod
    def inject(calls, slowdown, policy, flush, device) -> float:
        calls["triton"] = _Slowed(calls["triton"], slowdown)
        return slowdown


@pytest.fixture
def synthetic_timing(monkeypatch) -> SyntheticTiming:
    """Replace gemmgate.run's `measure` and `_inject` in this process: every provider
    gets SYNTHETIC_ROUNDS samples around its base time (triton 1.0 ms, vendor 0.9 ms,
    reference 1.0 ms) with seeded 0.2% jitter, and an injected slowdown F makes Triton
    (1 + F) x slower exactly. Worker and calibration processes are NOT patched."""
    import gemmgate.run

    fake = SyntheticTiming()
    monkeypatch.setattr(gemmgate.run, "measure", fake.measure)
    monkeypatch.setattr(gemmgate.run, "_inject", fake.inject)
    return fake


@pytest.fixture
def synthetic_record():
    """A factory of RunRecords (what a run JSON holds) with fixed samples, no measuring:
    synthetic_record(items, triton_ms=1.0, vendor_ms=0.9, shapes="synthetic",
    environment=None), items being (mode name, Case) pairs."""
    from gemmgate.results import CaseResult, ProviderResult, RunRecord

    def provider(name: str, ms: float, case) -> ProviderResult:
        # 10 rounds, as a run's least (a verdict needs 6: compare.MIN_JUDGED)
        samples = tuple(ms * (1 + 0.001 * (i % 3 - 1)) for i in range(10))
        return ProviderResult(name, "pass", 1e-7, "", samples, case.flops / (ms * 1e-3) / 1e12)

    def make(items, triton_ms: float = 1.0, vendor_ms: float = 0.9,
             shapes: str = "synthetic", environment: dict | None = None) -> RunRecord:
        cases = tuple(CaseResult(mode, case, {"triton": provider("triton", triton_ms, case),
                                              "vendor": provider("vendor", vendor_ms, case)})
                      for mode, case in items)
        env = environment if environment is not None else {"chip": "cpu", "timing": "wall"}
        return RunRecord(env, shapes, cases)

    return make


@pytest.fixture
def pid_running() -> Callable[[int], bool]:
    """Whether a process is alive and not a zombie (a container's init may not reap an
    orphan at once): for tests that a started process ended."""
    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
    return running
