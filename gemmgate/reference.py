"""The reference kernel: `kernels/` as it was at another commit, loaded beside the current
one so that `gemmgate check --ab-ref REF` times both in the same process (A/B).

Why: against a stored baseline, a case's speed ratio carries process-to-process noise
(power-cap and thermal state, see docs/PERF.md), so some cases cannot resolve 3%. Timed
in the same rounds as the current kernel, on the same inputs, the reference kernel shares
that state, and current/reference isolates what the code change did. It cannot see what
hits both alike (a new Triton, a new driver): the stored baseline still judges that.

The commit's `kernels/` is extracted with `git archive` into a temporary directory and
imported as a package of its own. The directory goes at exit; a process killed (a worker
stopped with its pool, a CI job cancelled) runs no exit handler, so its directory holds a
lock its process keeps while it lives, and the next extraction that can take that lock
removes it. Its `import kernels....` lines run while it loads, with the current package
set aside, so they bind the reference's own files. `kernels/` imports nothing of the
harness (an import-linter contract), so any commit's kernels load on their own; commits
from before that rule (they imported gemmgate.tuning) are refused with a message by
gemmgate.run.load_reference.
"""

from __future__ import annotations

import atexit
import importlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

from filelock import FileLock, Timeout

from gemmgate.env import ignored_tables

_LOADED: dict[str, ModuleType] = {}


def resolve(ref: str, repo: str | Path = ".", what: str = "--ab-ref") -> str:
    """The full commit id of `ref` (a branch, tag or sha); ValueError if git cannot, the
    message naming the argument `what` ("--ab-ref", "GOOD" ...)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                             cwd=repo, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise ValueError(f"{what} needs git on PATH") from None
    if out.returncode != 0 or not out.stdout.strip():
        inside = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=repo,
                                capture_output=True, timeout=30).returncode == 0
        if not inside:
            raise ValueError(f"{what} {ref!r}: {Path(repo).resolve()} is not in a git "
                             "repository; run gemmgate from the project's checkout (the "
                             "commit's kernels/ comes from its history)")
        kind = subprocess.run(["git", "cat-file", "-t", f"{ref}"], cwd=repo,
                              capture_output=True, text=True, timeout=30).stdout.strip()
        if kind and not ref.startswith("-"):   # a tag of a tree, `HEAD^{tree}`, a blob
            raise ValueError(f"{what} {ref!r} names a {kind}, not a commit")
        raise ValueError(f"{what} {ref!r}: no such commit in {Path(repo).resolve()} "
                         "(a typo, or a shallow clone? fetch the history, e.g. "
                         "actions/checkout fetch-depth: 0)")
    return out.stdout.strip()


def common_ancestor(shas: list[str], repo: str | Path = ".", what: str = "GOOD") -> str:
    """The newest commit every one of `shas` descends from (`git merge-base --octopus`):
    bisect's GOOD for a baseline whose cases were measured at several commits, each good
    for its cases. ValueError where git cannot tell (a commit not in this clone)."""
    full = [resolve(s, repo, what) for s in shas]
    if len(set(full)) == 1:
        return full[0]
    out = subprocess.run(["git", "merge-base", "--octopus", *full], cwd=repo,
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or not out.stdout.strip():
        raise ValueError(f"{what}: the commits {', '.join(s[:12] for s in full)} have no "
                         "common ancestor in this clone; name GOOD")
    return out.stdout.strip()


def kernels_alike(a: str, b: str, repo: str | Path = ".") -> bool:
    """Whether commits `a` and `b` hold the same kernels/ (`git diff --quiet a b --
    kernels`); False where git cannot tell (not a repository, a commit not in it)."""
    return kernels_differ(a, b, repo) is False


def kernels_differ(a: str, b: str, repo: str | Path = ".") -> bool | None:
    """Whether commits `a` and `b` hold other kernels/; None where git cannot tell, or
    where one is no commit name git would take as one: a commit read from a run or
    baseline file (`baseline merge`) went to git as it was, and "--output=PATH" was an
    option of `git diff`, which emptied PATH (a review)."""
    if not all(isinstance(x, str) and x and not x.startswith("-") for x in (a, b)):
        return None
    # from the repository's top: from a subfolder, `kernels` named a folder that is not
    # there, and every change was "alike" (a review)
    try:
        out = subprocess.run(["git", "diff", "--quiet", a, b, "--", "kernels"],
                             cwd=_top(repo), capture_output=True, timeout=60)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return {0: False, 1: True}.get(out.returncode)


def _top(repo: str | Path) -> Path:
    """The work tree's top: git's pathspecs (`kernels`) are relative to the current
    directory, and from a subdirectory they named another folder (tests/kernels, whose
    import then fell through to this tree's package)."""
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=repo,
                         capture_output=True, text=True, timeout=30)
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() \
        else Path(repo)


def _extract(sha: str, repo: str | Path) -> Path:
    out = subprocess.run(["git", "archive", "--format=tar", sha, "kernels"], cwd=_top(repo),
                         capture_output=True, timeout=60)
    if out.returncode != 0:
        raise ValueError(f"commit {sha[:12]} has no kernels/ directory "
                         f"({out.stderr.decode(errors='replace').strip()})")
    _sweep(Path(tempfile.gettempdir()))
    root = _owned(Path(tempfile.mkdtemp(prefix=f".{_PREFIX}{sha[:12]}-{os.getpid()}-")))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        try:
            tar.extractall(root, filter="data")
        except TypeError:   # a Python before 3.10.12 / 3.11.4: no filters; git's own
            tar.extractall(root)   # archive of one commit's tracked files
        except tarfile.TarError as e:   # a link out of the tree (a traceback, exit 1)
            raise ValueError(f"kernels/ at {sha[:12]} cannot be extracted: {e}") from None
    return root


_PREFIX = "gemmgate-ref-"
_OWNER = ".owner.lock"   # held locked by the extracting process while it lives
_HELD: list[FileLock] = []   # this process's owner locks (released when it exits)


def _owned(root: Path) -> Path:
    """`root` (a fresh temporary directory) locked by this process and renamed to an
    extraction's name: a sweeper never sees an extraction whose owner lock is not held."""
    lock = FileLock(root / _OWNER)
    lock.acquire()
    final = root.with_name(root.name.removeprefix("."))
    root.rename(final)
    # (the lock's open descriptor moved with the directory; it is held until exit)
    _HELD.append(lock)
    return final


_UNOWNED_AGE_S = 86400   # extractions of a gemmgate before owner locks: gone after a day


def _sweep(tmp: Path) -> list[Path]:
    """Remove this user's extractions whose owner is gone: their owner lock can be taken
    (a process's locks go with it, however it ended, in whatever PID namespace). One
    without an owner lock (made before session 58) goes once a day old."""
    gone = []
    now = time.time()
    for d in tmp.glob(f"{_PREFIX}*"):
        try:
            if not d.is_dir() or d.stat().st_uid != os.getuid():
                continue
            if not (d / _OWNER).is_file():
                if now - d.stat().st_mtime > _UNOWNED_AGE_S:
                    shutil.rmtree(d, ignore_errors=True)
                    gone.append(d)
                continue
        except OSError:
            continue
        probe = FileLock(d / _OWNER)
        try:
            probe.acquire(timeout=0)
        except (Timeout, OSError):   # its owner lives; or another sweeper removed it
            continue
        try:
            shutil.rmtree(d, ignore_errors=True)
        finally:
            try:
                probe.release()
            except OSError:   # a sweeper beside this one took the directory first
                pass
        gone.append(d)
    return gone


def _import_isolated(root: Path, alias: str) -> ModuleType:
    """Import root/kernels as a package named `alias`, leaving the current `kernels`."""
    def ours(name: str) -> bool:
        return name == "kernels" or name.startswith("kernels.")

    saved = {k: v for k, v in sys.modules.items() if ours(k)}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, str(root))
    loaded: dict[str, ModuleType] = {}
    try:
        pkg = importlib.import_module("kernels")
        loaded = {k: v for k, v in sys.modules.items() if ours(k)}
    finally:
        sys.path.remove(str(root))
        for k in [k for k in sys.modules if ours(k)]:
            del sys.modules[k]
        sys.modules.update(saved)
    for name, mod in loaded.items():
        sys.modules[alias + name[len("kernels"):]] = mod
    return pkg


def late_imports(package: Path) -> list[str]:
    """'file:line' of each `import kernels...`, `from kernels... import` or relative
    import inside a function of the package's modules: run at call time, it binds
    whatever `kernels` is then, which for a commit's package loaded beside this tree
    (`_import_isolated` sets this tree's aside only while it loads) is this tree's. A
    module that does not parse is the import's error to say, not this."""
    import ast

    found = []
    for path in sorted(package.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = ["kernels." if node.level else node.module or ""]
                elif isinstance(node, ast.Call) and _imports_by_call(node):
                    # importlib.import_module("kernels.x") / (".x", __name__) and
                    # __import__("kernels.x") bind the same way (a review)
                    names = [_called_name(node.args[0])]
                else:
                    continue
                if any(n == "kernels" or n.startswith("kernels.") for n in names):
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return sorted(dict.fromkeys(found))


def _imports_by_call(node) -> bool:
    """Whether a call is `import_module(...)` / `importlib.import_module(...)` /
    `__import__(...)` with an argument."""
    import ast

    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
        else ""
    return name in ("import_module", "__import__") and bool(node.args)


def _called_name(arg) -> str:
    """The module a dynamic import names, as far as the source says: a literal, an
    f-string's literal start ("." for a relative one: the package's own), else
    "kernels." (it cannot be told, so it is taken to be the package's own)."""
    import ast

    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        got = arg.value
        return "kernels." if got.startswith(".") else got
    return "kernels."


def load(ref: str, repo: str | Path = ".") -> tuple[str, ModuleType]:
    """(commit id, the reference `kernels` package) for `ref`; loaded once per commit."""
    sha = resolve(ref, repo)
    if sha not in _LOADED:
        root = _extract(sha, repo)
        # without __init__.py the extraction is a namespace portion, and the import would
        # find this tree's package further down sys.path: the "reference" is this tree
        if not (root / "kernels" / "__init__.py").is_file():
            raise ValueError(f"kernels/ at {sha[:12]} has no __init__.py, so it is not "
                             "a package of its own")
        late = late_imports(root / "kernels")
        if late:   # bisect blamed the wrong commit, an A/B timed this tree there (a review)
            raise ValueError(f"kernels/ at {sha[:12]} imports its own package at call time "
                             f"({', '.join(late[:3])}): loaded beside this tree, those "
                             "lines would run this tree's modules, so it cannot be "
                             "measured as it was")
        try:
            pkg = _import_isolated(root, f"gemmgate_ref_{sha[:12]}")
        except KeyboardInterrupt:   # (a stop: 130)
            raise
        except BaseException as e:   # whatever its import raises (a NameError at module
            # level; a sys.exit(0) there ended `check --ab-ref` with exit 0, no verdict and
            # no --json: a review)
            raise ValueError(f"kernels/ at {sha[:12]} does not import: "
                             f"{type(e).__name__}: {e}") from None
        if Path(pkg.__file__ or "").resolve().parent != (root / "kernels").resolve():
            raise ValueError(f"kernels/ at {sha[:12]} imported as {pkg.__file__}, not "
                             "from its extraction")
        if not callable(getattr(pkg, "matmul", None)):
            raise ValueError(f"kernels/ at {sha[:12]} has no matmul()")
        _LOADED[sha] = pkg
    return sha, _LOADED[sha]


def same_kernels(ref: str, repo: str | Path = ".") -> str:
    """The commit for calibrate --ab-ref: its kernels/ must be the working tree's, or the
    stored "A/A" noise would hold a real difference (ValueError before any work)."""
    sha = resolve(ref, repo)
    diff, untracked = _kernels_against(sha, _top(repo))
    if diff != 0 or untracked:   # (git diff does not see untracked: a new chip's table)
        extra = f" (untracked: {', '.join(untracked[:3])})" if untracked else ""
        raise ValueError(f"--ab-ref {ref}: kernels/ differs from {sha[:12]}{extra}; A/B "
                         "noise is measured against the same kernel (commit first, or use "
                         "HEAD)")
    return sha


def kernels_as_at(sha: str, repo: str | Path = ".") -> bool | None:
    """Whether the working tree's kernels/ is commit `sha`'s (`same_kernels`' test, not
    raising): a run's A/B against it then timed the same kernel twice (A/A), whatever else
    of the tree was edited. None where git cannot say."""
    try:
        diff, untracked = _kernels_against(sha, _top(repo))
    except (OSError, subprocess.SubprocessError):
        return None
    if diff not in (0, 1) or untracked is None:
        return None
    return diff == 0 and not untracked


def _kernels_against(sha: str, top: Path) -> tuple[int, list[str] | None]:
    """(`git diff --quiet sha -- kernels`'s exit: 0 the same, 1 differs, else git could not
    say; the untracked files under kernels/, None where git could not list them), from the
    work tree's top. `git diff --quiet` trusts stale stat data (a copied tree: every file
    looks touched) and answers "differs" without reading the files: the index is
    refreshed first."""
    git = ["git", "-c", "safe.directory=*"]   # (a device's copy: another owner)
    subprocess.run([*git, "update-index", "-q", "--refresh"], cwd=top, capture_output=True,
                   timeout=60)
    diff = subprocess.run([*git, "diff", "--quiet", sha, "--", "kernels"], cwd=top,
                          capture_output=True, timeout=60)
    new = subprocess.run([*git, "ls-files", "--others", "--exclude-standard", "--", "kernels"],
                         cwd=top, capture_output=True, text=True, timeout=60)
    # and an ignored table the lookup reads all the same (the reference's extraction
    # holds only the commit's): as env.git_dirty counts it, or `calibrate --ab-ref HEAD`
    # stored a tuning difference as A/A noise (a review)
    hidden = ignored_tables(top, 60)
    if new.returncode != 0 or hidden is None:
        return diff.returncode, None
    return diff.returncode, new.stdout.split() + hidden
