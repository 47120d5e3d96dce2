#!/usr/bin/env python3
"""Name this interpreter's asv results by its Python version, not its path.

`asv run --python=same` is asv's "existing environment", which asv names after the
interpreter's path (`existing-py_<path>`, and `params.python` the path too): the path is
the job's virtual environment (`$RUNNER_TEMP/gemmgate-venv`), so a runner installed under
another directory, or a second runner of the chip, started a graph line of its own on the
published site, and ended the old one. This rewrites the results this interpreter wrote
(their `python` is `sys.executable`) to `existing-py<X.Y>`, `python: X.Y`, file renamed
to match, atomically; results of other interpreters are left as they are.

    python3 scripts/asv_results.py .asv/results/<machine>     # after `asv run`
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path


def rename(folder: Path, executable: str, version: str) -> list[Path]:
    """Rewrite `folder`'s results of `executable`; the files written."""
    env = f"existing-py{version}"
    done = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "machine.json":
            continue
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or data.get("python") != executable:
            continue
        old = data.get("env_name", "")
        data["python"] = version
        data["env_name"] = env
        if isinstance(data.get("params"), dict):
            data["params"]["python"] = version
        name = path.name.replace(old, env) if old and old in path.name else path.name
        target = path.with_name(name)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, target)
        if target != path:
            path.unlink()
        done.append(target)
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python3 scripts/asv_results.py RESULTS_DIR/MACHINE (an existing "
              "folder)", file=sys.stderr)
        return 2
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    done = rename(Path(argv[0]), os.path.abspath(sys.executable), version)
    print(f"asv results: {len(done)} file(s) of {sys.executable} named existing-py{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
