"""Print gemmgate's requirements (with `--extra NAME`'s) but the named ones, one a line,
as a pip requirements file: `python3 scripts/deps_except.py --extra test torch triton`.

scripts/install.sh uses it where `triton` comes from a distribution of another name
(ROCm's pytorch-triton-rocm, a nightly torch's pytorch-triton): `pip install -e .` would
see no distribution named triton and install PyPI's CUDA build over that module. There,
gemmgate is installed with --no-deps and these lines install the rest. Reads the
installed gemmgate's metadata (importlib.metadata): run it after `pip install -e .
--no-deps`. Each requirement's environment marker is evaluated here, for this machine
with that extra (`pynvml; platform_system == "Linux" and extra == "test"` is the line
`pynvml` on Linux, nothing elsewhere), by `packaging` (pip's own copy where it is not
installed).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _marker(text: str):
    try:
        from packaging.markers import Marker
    except ImportError:   # a fresh venv: pip's vendored copy
        from pip._vendor.packaging.markers import Marker
    return Marker(text)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lines(requires: list[str], leave_out: set[str], extra: str = "") -> list[str]:
    """The requirement strings to install here: those whose marker holds on this machine
    with `extra` ("" : the base's only), markers dropped; none whose name is in
    `leave_out`."""
    out = []
    for req in requires:
        spec, _, marker = req.partition(";")
        m = _NAME.match(spec)
        if m is None or _normal(m.group(1)) in leave_out:
            continue
        if marker.strip() and not _marker(marker.strip()).evaluate({"extra": extra}):
            continue
        out.append(spec.strip())
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extra", default="", help="an extra's requirements too (e.g. test)")
    ap.add_argument("leave_out", nargs="*", help="distribution names to leave out")
    args = ap.parse_args(argv)
    try:
        requires = importlib.metadata.requires("gemmgate") or []
    except importlib.metadata.PackageNotFoundError:
        print("deps_except: gemmgate is not installed (pip install -e . --no-deps first)",
              file=sys.stderr)
        return 2
    print("\n".join(lines(requires, {_normal(a) for a in args.leave_out}, args.extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
