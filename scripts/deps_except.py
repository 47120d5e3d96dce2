"""Print gemmgate's requirements (with the `test` extra) but the named ones, one a line,
as a pip requirements file: `python3 scripts/deps_except.py torch triton`.

scripts/bootstrap.sh uses it where `triton` comes from a distribution of another name
(ROCm's pytorch-triton-rocm, a nightly torch's pytorch-triton): `pip install -e .` would
see no distribution named triton and install PyPI's CUDA build over that module. There,
gemmgate is installed with --no-deps and these lines install the rest. Reads the
installed gemmgate's metadata (importlib.metadata): run it after `pip install -e .
--no-deps`.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_TEST_EXTRA = re.compile(r"""^\s*extra\s*==\s*["']test["']\s*$""")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lines(requires: list[str], leave_out: set[str]) -> list[str]:
    """The requirement strings to install: those of the base and of the `test` extra
    (that marker dropped; other extras' left out), none whose name is in `leave_out`."""
    out = []
    for req in requires:
        spec, _, marker = req.partition(";")
        m = _NAME.match(spec)
        if m is None or _normal(m.group(1)) in leave_out:
            continue
        if "extra" in marker:
            if not _TEST_EXTRA.match(marker):
                continue
            marker = ""
        out.append(spec.strip() + (f"; {marker.strip()}" if marker.strip() else ""))
    return out


def main(argv: list[str]) -> int:
    try:
        requires = importlib.metadata.requires("gemmgate") or []
    except importlib.metadata.PackageNotFoundError:
        print("deps_except: gemmgate is not installed (pip install -e . --no-deps first)",
              file=sys.stderr)
        return 2
    print("\n".join(lines(requires, {_normal(a) for a in argv})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
