#!/usr/bin/env python3
"""A throw-away Python virtual environment per self-hosted job (docs/RUNNERS.md,
"Security and isolation").

    python3 scripts/runner/job_venv.py create DIR [--require torch,triton]

Run it with the runner's Python (the one holding the CUDA/ROCm torch). `create` makes a
fresh venv at DIR (a leftover one is wiped) in which the runner's site-packages are
visible *after* the venv's own, through a `.pth` file that calls `site.addsitedir` on
each of them. So `pip install` in the job lands in DIR, never in the runner's Python,
and is gone with DIR; torch and triton are used as installed on the runner (pip counts
them as already satisfied). The workflows delete DIR (`rm -rf`, no checkout needed) in an
`if: always()` step.

Why not `python3 -m venv --system-site-packages DIR`: when the runner's Python is itself
a virtual environment (what docs/RUNNERS.md recommends), `--system-site-packages`
exposes the *base* interpreter's site-packages, not that environment's, and torch would
be missing. Reading the runner's own `site.getsitepackages()` works either way. User
site-packages (~/.local) are deliberately not included.

`--require M1,M2` imports each module in the new venv and fails (exit 1, `::error`)
when one is missing: the workflows never install torch, and `pip install -e .` would
otherwise quietly pull a generic torch wheel from PyPI. Exit 2: usage error.
"""

from __future__ import annotations

import argparse
import os
import site
import subprocess
import sys
import venv
from pathlib import Path

PTH_NAME = "_gemmgate_runner_site.pth"


def runner_site_dirs() -> list[str]:
    """The site-packages directories of the interpreter running this script."""
    return [d for d in site.getsitepackages() if os.path.isdir(d)]


def pth_text(dirs: list[str]) -> str:
    lines = ["# the runner's site-packages, after this venv's own (scripts/runner/job_venv.py)"]
    # `import` lines in a .pth file are executed; addsitedir also processes the .pth
    # files found in each directory (editable installs, namespace packages).
    lines += [f"import site; site.addsitedir({d!r})" for d in dirs]
    return "\n".join(lines) + "\n"


def venv_purelib(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    )
    return Path(out.stdout.strip())


def create(target: Path, require: list[str], with_pip: bool = True) -> int:
    target = target.absolute()
    dirs = runner_site_dirs()
    venv.EnvBuilder(clear=True, symlinks=os.name != "nt", with_pip=with_pip).create(target)
    python = target / "bin" / "python"
    purelib = venv_purelib(python)
    (purelib / PTH_NAME).write_text(pth_text(dirs))
    print(f"job venv: {target} (python {sys.version.split()[0]}); runner site-packages "
          f"visible read-through: {', '.join(dirs) or '(none)'}")
    failed = []
    for mod in require:
        probe = subprocess.run(
            [str(python), "-c", f"import {mod} as m; print(getattr(m, '__version__', '?'), "
             "getattr(m, '__file__', '?'))"],
            capture_output=True, text=True,
        )
        if probe.returncode == 0:
            print(f"  {mod} {probe.stdout.strip()}")
        else:
            failed.append(mod)
    if failed:
        print(f"::error title=job venv::{', '.join(failed)} not importable from the runner's "
              "Python; install it there (the workflows never install torch/triton), see "
              "docs/RUNNERS.md", flush=True)
        return 1
    return 0



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["create"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--require", default="",
                    help="comma-separated modules that must import in the new venv")
    ap.add_argument("--without-pip", action="store_true", help=argparse.SUPPRESS)  # tests
    args = ap.parse_args(argv)
    require = [m.strip() for m in args.require.split(",") if m.strip()]
    bad = [m for m in require if not all(p.isidentifier() for p in m.split("."))]
    if bad:
        ap.error(f"--require: not a module name: {', '.join(bad)}")
    return create(args.dir, require, with_pip=not args.without_pip)


if __name__ == "__main__":
    sys.exit(main())
