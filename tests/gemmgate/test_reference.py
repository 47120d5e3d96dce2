"""gemmgate/reference.py: the kernel at another commit, loaded beside the current one.
The `kernels_repo` fixture (tests/conftest.py) holds two commits of a copy of kernels/
with a marker that differs, so the test can tell which commit's files were imported."""

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

import kernels
from gemmgate import reference
from gemmgate.accuracy import relative_error
from gemmgate.inputs import make_inputs
from gemmgate.precision import MODES
from gemmgate.shapes import Case

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_loads_the_commits_own_files_and_leaves_the_current_package(kernels_repo):
    d, old, _new = kernels_repo
    current = sys.modules["kernels"]
    sha, pkg = reference.load(old, d)
    assert sha == old and pkg is not kernels and pkg.matmul is not kernels.matmul
    assert sys.modules["kernels"] is current and not hasattr(sys.modules["kernels.configs"], "MARK")
    # the reference's own `from kernels.configs import ...` bound the old commit's file
    assert sys.modules[f"gemmgate_ref_{old[:12]}.configs"].MARK == "old"
    assert reference.load(old[:10], d)[1] is pkg  # loaded once per commit


def test_the_reference_kernel_computes_correctly(kernels_repo, device):
    d, old, _ = kernels_repo
    _, pkg = reference.load(old, d)
    case = Case(48, 40, 64)
    inp = make_inputs(case, MODES["fp32"], device, seed=3)
    assert relative_error(pkg.matmul(inp.a, inp.b, precision="fp32"), inp.reference()) < 1e-5


def test_bad_refs_are_clear_errors(kernels_repo, tmp_path):
    d, _, _ = kernels_repo
    with pytest.raises(ValueError, match="no such commit"):
        reference.resolve("no-such-branch", d)
    with pytest.raises(ValueError, match="names a tree, not a commit"):
        reference.resolve("HEAD^{tree}", d)   # was "no such commit (a typo, a shallow clone?)"
    with pytest.raises(ValueError, match="is not in a git repository; run gemmgate from"):
        reference.resolve("HEAD", tmp_path)  # not a git repository
    with pytest.raises(ValueError, match="has no kernels/"):
        reference.load("HEAD", d)  # the last commit dropped kernels/


def test_the_runner_loads_the_reference_kernel_from_its_context(kernels_repo, monkeypatch):
    from gemmgate.context import make_context
    from gemmgate.run import Runner

    d, old, _ = kernels_repo
    monkeypatch.chdir(d)
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp32", reference=old)
    runner = Runner(ctx)
    assert runner.kernels["reference"] is not runner.kernels["triton"]
    r = runner.run_case(MODES["fp32"], Case(16, 16, 32))
    assert r.providers["reference"].accuracy == "pass" and r.ab_samples


def test_a_reference_from_before_the_choose_hook_is_refused(kernels_repo, tmp_path,
                                                            monkeypatch):
    import subprocess

    from gemmgate.context import make_context
    from gemmgate.run import Runner

    d = tmp_path / "old-api"
    shutil.copytree(kernels_repo[0], d)
    (d / "kernels").mkdir(exist_ok=True)
    (d / "kernels" / "__init__.py").write_text(
        "def matmul(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):\n"
        "    return a @ b\n")
    subprocess.run(["git", "add", "-A"], cwd=d, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "old api"], cwd=d, check=True)
    monkeypatch.chdir(d)
    sha = reference.resolve("HEAD", d)
    ctx = make_context(chip="cpu", shapes="smoke", modes="fp32", reference=sha)
    with pytest.raises(ValueError, match="no choose= hook"):
        Runner(ctx)


def test_a_reference_that_does_not_import_is_a_clear_error(kernels_repo, tmp_path):
    d = _commit_kernels(kernels_repo, tmp_path, "broken",
                        {"__init__.py": "from gemmgate.no_such_module import x\n"})
    with pytest.raises(ValueError, match="does not import"):
        reference.load("HEAD", d)


def _commit_kernels(kernels_repo, tmp_path, name: str, files: dict) -> Path:
    """A copy of the fixture repository whose HEAD holds kernels/ as `files` give it."""
    import subprocess

    d = tmp_path / name
    shutil.copytree(kernels_repo[0], d)
    (d / "kernels").mkdir(exist_ok=True)   # HEAD of the fixture repo dropped kernels/
    for rel, text in files.items():
        (d / "kernels" / rel).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=d, check=True)
    subprocess.run(["git", "commit", "-q", "-m", name], cwd=d, check=True)
    return d


def test_a_reference_whose_import_raises_anything_is_a_clear_error(kernels_repo, tmp_path):
    """Not only ImportError: a NameError at module level was a traceback (exit 1, which
    says "regression"), and bisect stopped on it instead of skipping the commit."""
    d = _commit_kernels(kernels_repo, tmp_path, "nameerror",
                        {"__init__.py": "undefined_name_typo\n"})
    with pytest.raises(ValueError, match="does not import: NameError"):
        reference.load("HEAD", d)


def test_a_reference_whose_import_exits_is_a_clear_error(kernels_repo, tmp_path):
    """A sys.exit(0) at its import ended `check --ab-ref` with exit 0 (passed), no verdict
    and no --json (a review, on the CPU); any exit the same."""
    d = _commit_kernels(kernels_repo, tmp_path, "exits",
                        {"__init__.py": "import sys\nsys.exit(0)\n"})
    current = sys.modules["kernels"]
    with pytest.raises(ValueError, match="does not import: SystemExit: 0"):
        reference.load("HEAD", d)
    assert sys.modules["kernels"] is current


def test_a_reference_that_imports_its_package_at_call_time_is_refused(kernels_repo,
                                                                     tmp_path):
    """`from kernels import slow` inside a function ran this tree's module when called:
    bisect blamed a commit whose own files were not slow, and an A/B timed this tree's
    code as the reference's (a review). Refused, naming the line (bisect: a skip)."""
    d = _commit_kernels(kernels_repo, tmp_path, "late", {
        "__init__.py": "from kernels.matmul import matmul\n",
        "matmul.py": "def matmul(a, b, **kw):\n    from kernels import slow\n"
                     "    return slow.product(a, b)\n"})
    with pytest.raises(ValueError, match=r"imports its own package at call time "
                                         r"\(kernels/matmul.py:2\)"):
        reference.load("HEAD", d)


@pytest.mark.parametrize("line", [
    'importlib.import_module("kernels.slow")',
    'importlib.import_module(".slow", __name__)',
    'importlib.import_module(f".{name}", __name__)',
    '__import__("kernels.slow")',
])
def test_a_reference_that_imports_its_package_dynamically_at_call_time_is_refused(
        kernels_repo, tmp_path, line):
    """importlib.import_module / __import__ inside a function bind this tree's module at
    call time just as an import statement does, and were let through (a review)."""
    d = _commit_kernels(kernels_repo, tmp_path, "dyn", {
        "__init__.py": "from kernels.matmul import matmul\n",
        "matmul.py": "import importlib\n\ndef matmul(a, b, name='slow', **kw):\n"
                     f"    return {line}\n"})
    with pytest.raises(ValueError, match=r"imports its own package at call time "
                                         r"\(kernels/matmul.py:4\)"):
        reference.load("HEAD", d)


def test_a_reference_with_a_link_out_of_its_tree_is_a_clear_error(kernels_repo, tmp_path):
    """tarfile's "data" filter refuses an absolute symlink: a traceback (exit 1, which
    says "regression") where a refusal (exit 2; bisect: a skip) belongs (a review)."""
    import os
    import subprocess

    d = _commit_kernels(kernels_repo, tmp_path, "link",
                        {"__init__.py": "def matmul(a, b, **kw):\n    return a @ b\n"})
    os.symlink("/etc/hostname", d / "kernels" / "host.txt")
    subprocess.run(["git", "add", "-A"], cwd=d, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "link"], cwd=d, check=True)
    with pytest.raises(ValueError, match="cannot be extracted: .*absolute"):
        reference.load("HEAD", d)


def test_a_reference_without_init_is_refused_not_this_trees_package(kernels_repo, tmp_path):
    """Without __init__.py the extraction is a namespace portion, and `import kernels`
    found this tree's package instead: the A/B compared the tree with itself."""
    d = _commit_kernels(kernels_repo, tmp_path, "noinit", {"matmul.py": "X = 1\n"})
    with pytest.raises(ValueError, match="has no __init__.py"):
        reference.load("HEAD", d)


def test_a_reference_loaded_from_a_subdirectory_is_the_commits_kernels(kernels_repo,
                                                                        tmp_path):
    """git's pathspec is relative to the current directory: from a subdirectory holding
    its own kernels/ (tests/kernels here), that folder was extracted instead."""
    d, old, _ = kernels_repo
    sub = tmp_path / "copy"
    shutil.copytree(d, sub)
    (sub / "tests" / "kernels").mkdir(parents=True)
    (sub / "tests" / "kernels" / "test_x.py").write_text("")
    sha, pkg = reference.load(old, sub / "tests")
    assert pkg.__file__.startswith(tempfile.gettempdir()) and pkg is not kernels
    assert sys.modules[f"gemmgate_ref_{old[:12]}.configs"].MARK == "old"
    # calibrate --ab-ref from there: the tree's kernels/ (now the old commit's) is what
    # it compares, not tests/kernels (an untracked file there said "differs")
    import subprocess

    subprocess.run(["git", "checkout", "-q", old, "--", "kernels"], cwd=sub, check=True)
    assert reference.same_kernels(old, sub / "tests") == old


@pytest.mark.gpu
def test_gpu_the_reference_kernel_takes_the_pinned_tile(kernels_repo, tmp_path):
    """H200, session 3: the reference's TileConfig is its commit's own class, and pins
    matched by class never applied to it, so it tuned in every process and ran another
    tile than the current kernel in 44 of 845 case checks. Both must run the pin."""
    import json
    from dataclasses import asdict

    from gemmgate import tuning
    from kernels import dispatch
    from kernels.modes import mode_named

    d, old, _ = kernels_repo
    _, pkg = reference.load(old, d)
    inp = make_inputs(Case(512, 512, 512), MODES["bf16"], "cuda", seed=2)
    setup = tuning.TuningSetup("test-chip", cache_dir=str(tmp_path), budget_s=5, search=True)
    first = tuning.Tuner(setup).chooser()
    kernels.matmul(inp.a, inp.b, precision="bf16", choose=first)
    key = first.last.key
    plan = dispatch.plan(mode_named("bf16"), inp.a, inp.b)   # both kernels are this one:
    pin = next(c for c in dispatch.candidates(plan, inp.a.device, 512, 512, 512)
               if c != plan.pick)                           # an offered tile, not the pick
    pins = tmp_path / "baseline.json"
    pins.write_text(json.dumps({"cases": {"x": {"tuning": {"key": key, "config": asdict(pin)}}}}))
    tuner = tuning.Tuner(tuning.TuningSetup("test-chip", pins_from=str(pins),
                                            cache_dir=str(tmp_path)))
    for matmul in (kernels.matmul, pkg.matmul):
        choose = tuner.chooser()
        out = matmul(inp.a, inp.b, precision="bf16", choose=choose)
        assert relative_error(out, inp.reference()) < 5e-3
        assert choose.last.source == tuning.PINNED and asdict(choose.last.config) == asdict(pin)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_same_kernels_sees_an_untracked_file_under_kernels(tmp_path):
    """`gemmgate tune` writes a new chip's table untracked: the tree's kernels/ then
    differs from the commit's, and `git diff` alone does not see it."""
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "a.py").write_text("x = 1\n")
    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "k")
    assert len(reference.same_kernels("HEAD", tmp_path)) == 40
    (tmp_path / "kernels" / "new.json").write_text("{}\n")
    with pytest.raises(ValueError, match=r"kernels/ differs from .* \(untracked: kernels/new"):
        reference.same_kernels("HEAD", tmp_path)
    (tmp_path / "kernels" / "new.json").unlink()
    # an ignored table the kernel's lookup reads all the same (kernels/tuned/*.json): the
    # reference's extraction lacks it, so A/B is no A/A (env.git_dirty counts it too)
    (tmp_path / "kernels" / "tuned").mkdir()
    (tmp_path / ".git" / "info" / "exclude").write_text("kernels/tuned/local*\n")
    (tmp_path / "kernels" / "tuned" / "local-a100.json").write_text("{}\n")
    with pytest.raises(ValueError, match=r"untracked: kernels/tuned/local-a100.json"):
        reference.same_kernels("HEAD", tmp_path)
    assert reference.kernels_as_at("HEAD", tmp_path) is False


def test_an_extraction_left_by_a_killed_process_is_swept_and_a_live_ones_kept(tmp_path):
    """A worker killed with its pool runs no exit handler: its extraction stays in TMPDIR
    until the next extraction can take its owner lock (a live owner's, here another
    process's and this one's, cannot be taken)."""
    import os
    import signal
    import subprocess
    import tempfile
    import time

    owner = ("import sys, tempfile, time; from pathlib import Path; "
             "from gemmgate import reference; "
             "print(reference._owned(Path(tempfile.mkdtemp(prefix='.gemmgate-ref-a-1-', "
             "dir=sys.argv[1]))), flush=True); time.sleep(120)")
    procs = [subprocess.Popen([sys.executable, "-c", owner, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        dead, live = (Path(p.stdout.readline().strip()) for p in procs)
        mine = reference._owned(Path(tempfile.mkdtemp(prefix=".gemmgate-ref-b-2-",
                                                      dir=tmp_path)))
        stray = tmp_path / "gemmgate-ref-no-owner-lock"       # an older gemmgate's, new
        stray.mkdir()
        old = tmp_path / "gemmgate-ref-00a1d70af1e2-ftukvswc"  # an older gemmgate's, a
        (old / "kernels").mkdir(parents=True)                   # day and more old
        os.utime(old, (time.time() - 2 * 86400,) * 2)
        assert reference._sweep(tmp_path) == [old]             # every owner alive
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        assert reference._sweep(tmp_path) == [dead]
        assert not dead.exists() and live.exists() and mine.exists() and stray.exists()
    finally:
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()


@pytest.mark.parametrize("fails", ["acquire", "release"])
def test_a_sweep_beside_another_sweeper_goes_on(tmp_path, monkeypatch, fails):
    """Two sweeps of one dead owner's extraction: the other sweeper removed it between
    this one's look and its lock (filelock: FileNotFoundError or FileExistsError). That
    failed a valid run with exit 2; the sweep is best effort."""
    dead = tmp_path / "gemmgate-ref-0123456789ab-1-x"
    dead.mkdir()
    (dead / ".owner.lock").write_text("")

    class Racing:
        def __init__(self, path):
            self.path = path

        def acquire(self, timeout=None):
            if fails == "acquire":
                raise FileNotFoundError(2, "No such file or directory", str(self.path))

        def release(self):
            raise FileExistsError(17, "File exists", str(self.path))

    monkeypatch.setattr(reference, "FileLock", Racing)
    assert reference._sweep(tmp_path) == ([] if fails == "acquire" else [dead])


def test_kernels_alike_answers_from_the_repositorys_top_whatever_the_folder(kernels_repo):
    """From a subfolder, `git diff a b -- kernels` compared a folder that is not there, and
    two commits of different kernels were "alike": a merge run from docs/ pooled a kernel
    change as A/B noise (a review)."""
    from gemmgate.reference import kernels_alike

    d, old, new = kernels_repo
    sub = d / "kernels_sub_folder"
    sub.mkdir(exist_ok=True)
    for where in (d, sub):
        assert kernels_alike(old, old, where)
        assert not kernels_alike(old, new, where)
    assert not kernels_alike(old, "0" * 40, d)   # a commit not in the clone: not known alike


def test_kernels_differ_takes_no_commit_from_a_file_as_an_option_of_git(kernels_repo,
                                                                        tmp_path):
    """A run's ab_ref or a baseline's commit, read from its file by `baseline merge`, went
    to `git diff` as it was: "--output=PATH" emptied PATH (a review). Not a commit: not
    told (None), and nothing written."""
    from gemmgate.reference import kernels_differ

    d, old, _ = kernels_repo
    kept = tmp_path / "precious.txt"
    kept.write_text("precious")
    for a, b in ((old, f"--output={kept}"), (f"--output={kept}", old), (old, 5), (old, "")):
        assert kernels_differ(a, b, d) is None
    assert kept.read_text() == "precious"


def test_kernels_as_at_says_whether_the_tree_s_kernels_are_a_commit_s(clean_repo, kernels_repo,
                                                                     tmp_path):
    """What a run records of its A/B reference (`ab_kernels_same`), for `baseline merge`
    to pool only A/A samples: an edit outside kernels/ (a device copy's) is no change."""
    from gemmgate.reference import kernels_as_at

    d, head = clean_repo
    assert kernels_as_at(head, d) is True
    d2, old, _ = kernels_repo          # its tree dropped kernels/
    assert kernels_as_at(old, d2) is False
    assert kernels_as_at("0" * 40, d) is None          # not a commit there: git cannot say
    assert kernels_as_at(head, tmp_path) is None       # not a repository


def test_an_unusable_ab_ref_leaves_the_json_as_it_was(kernels_repo, tmp_path, monkeypatch,
                                                      capsys):
    """A bad --ab-ref is exit 2 before the run's --json is marked running: the Runner found
    it after the mark, and an earlier run's file there was replaced by a run of no case,
    "the process ended before the run did" (a review)."""
    from gemmgate.cli import main

    d, _, _ = kernels_repo
    monkeypatch.chdir(d)
    out = tmp_path / "run.json"
    out.write_text('{"earlier": "run"}\n')
    assert main(["run", "--chip", "cpu", "--shapes", "16x16x16", "--modes", "fp32",
                 "--ab-ref", "HEAD", "--json", str(out)]) == 2   # HEAD dropped kernels/
    assert "has no kernels/" in capsys.readouterr().err
    assert out.read_text() == '{"earlier": "run"}\n'
