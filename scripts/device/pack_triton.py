"""Pack a Triton release small enough to carry to the device machine beside the tree.

    python3 scripts/device/pack_triton.py VERSION [--python 3.12] [--wheel FILE]
                                          [--out .triton]

The device machine has one Triton (3.6); the project's range admits newer ones (CI runs
the newest), whose kernels compile differently (session 53's audit: IEEE fp32's FMA
tiles spill in the K loop on 3.9, not on 3.6). A wheel is 250-290 MB, over the 64 MiB a
device call carries. This keeps what compiling and launching on an NVIDIA Hopper needs
(the Python package, `libtriton.so` stripped of its debug sections, the ptxas it
assembles sm_90 with, `nvdisasm`, `cuobjdump`, libdevice, the CUDA headers the launcher
builds against) and drops the rest (the AMD backend's code generator and headers,
CUPTI, the other ptxas, proton, instrumentation, FileCheck, the example pass plugins),
then writes `OUT/triton-VERSION.tar.xz` (3.9.0: 53 MiB; `.triton`, ignored). A call
carries it by name (carry [".triton/triton-3.9.0.tar.xz", ...]: with the tree ~59 MiB,
so not beside `.whl`'s bundle), and `scripts/device/setup.sh` unpacks each carried
`.triton/triton-*.tar.xz` into `/tmp/triton-VERSION`; an experiment runs a version with
`PYTHONPATH=/tmp/triton-VERSION:$PYTHONPATH`.

The wheel comes from `pip download` for CPython `--python` on manylinux x86-64, or from
`--wheel`. Needs `strip` (binutils). Exit 0; 2 on bad input or a failed step.
"""

from __future__ import annotations

import argparse
import ast
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
# what a Hopper compile and launch does not read (paths in the wheel, by prefix)
# (the AMD backend's Python stays: a backend's entry point, the installed Triton's too,
# imports it); of the two ptxas a release ships, the one it does not assemble sm_90 with
# (`hopper_ptxas`) goes too
DROP = ("triton/backends/amd/lib/libtriton_amd_codegen", "triton/backends/amd/include/",
        "triton/backends/nvidia/lib/cupti", "triton/_C/libproton.so",
        "triton/instrumentation/", "triton/FileCheck", "triton/plugins/")
PTXAS = {"ptxas": "triton/backends/nvidia/bin/ptxas",
         "ptxas_blackwell": "triton/backends/nvidia/bin/ptxas-blackwell"}
COMPILER = "triton/backends/nvidia/compiler.py"
STRIP = ("triton/_C/libtriton.so",)
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


class _Names:
    """A stand-in for `knobs.nvidia`: each knob read is its name."""

    def __getattr__(self, name: str) -> str:
        return name


def hopper_ptxas(compiler_py: str) -> str:
    """The knob ('ptxas' or 'ptxas_blackwell') of the ptxas a release's NVIDIA backend
    assembles sm_90 with: its `get_ptxas(90)`, run alone (3.6 and 3.8: `ptxas`, CUDA 12.8
    and 12.9; 3.9: `ptxas_blackwell`, CUDA 13.4); 'ptxas' where it has no `get_ptxas`."""
    tree = ast.parse(compiler_py)
    fn = next((n for n in tree.body
               if isinstance(n, ast.FunctionDef) and n.name == "get_ptxas"), None)
    if fn is None:
        return "ptxas"
    fn.returns, fn.decorator_list = None, []
    for a in fn.args.args:
        a.annotation = None
    scope: dict = {"knobs": SimpleNamespace(nvidia=_Names())}
    exec(compile(ast.Module([fn], []), "get_ptxas", "exec"), scope)   # noqa: S102
    got = scope["get_ptxas"](90)
    if got not in PTXAS:
        raise ValueError(f"{COMPILER}: get_ptxas(90) names {got!r}, not one of {list(PTXAS)}")
    return got


def kept(name: str, hopper: str = "ptxas") -> bool:
    """Whether a wheel member goes into the pack of a release that assembles sm_90 with
    the `hopper` ptxas."""
    return not name.startswith(DROP) and \
        not any(name == path for knob, path in PTXAS.items() if knob != hopper)


def download(version: str, python: str, into: Path) -> Path:
    """The wheel of `version` for CPython `python` (e.g. 3.12) on manylinux x86-64."""
    tag = python.replace(".", "")
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (28, 27, 17)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", f"--python-version={python}", "--implementation=cp",
                    *platforms, "-d", str(into), f"triton=={version}"], check=True)
    found = sorted(into.glob(f"triton-{version}-cp{tag}-*.whl")) or \
        sorted(into.glob(f"triton-{version}-*abi3*.whl"))
    if not found:
        raise FileNotFoundError(f"pip saved no triton {version} wheel for CPython {python}")
    return found[0]


def pack(wheel: Path, out: Path) -> Path:
    """`wheel`'s kept members, stripped where `STRIP` says, as `out` (tar.xz)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with zipfile.ZipFile(wheel) as z:
            hopper = hopper_ptxas(z.read(COMPILER).decode())
            members = [m for m in z.namelist() if kept(m, hopper)]
            z.extractall(root, members)
        for rel in STRIP:
            subprocess.run(["strip", "--strip-unneeded", str(root / rel)], check=True)
        for f in root.rglob("*"):   # zip extraction drops the mode bits: executables back
            if f.is_file() and (f.parent.name == "bin" or f.suffix == ".so"):
                f.chmod(0o755)
        part = out.with_name(out.name + ".part")   # `out` whole or not at all
        try:
            with tarfile.open(part, "w:xz", preset=9 | lzma.PRESET_EXTREME) as t:
                for top in sorted(p.name for p in root.iterdir()):
                    t.add(root / top, arcname=top)
            part.replace(out)
        finally:
            part.unlink(missing_ok=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("version", help="a Triton release, e.g. 3.9.0")
    ap.add_argument("--python", default="3.12", help="the device's CPython (3.12)")
    ap.add_argument("--wheel", type=Path, help="pack this wheel rather than download one")
    ap.add_argument("--out", type=Path, default=ROOT / ".triton")
    args = ap.parse_args(argv)
    if not _VERSION.match(args.version) or not re.match(r"^3\.\d+$", args.python):
        print(f"pack_triton: need VERSION like 3.9.0 and --python like 3.12, got "
              f"{args.version!r} and {args.python!r}", file=sys.stderr)
        return 2
    if args.wheel is not None and not args.wheel.is_file():
        print(f"pack_triton: no wheel at {args.wheel}", file=sys.stderr)
        return 2
    if shutil.which("strip") is None:
        print("pack_triton: needs strip (binutils) on PATH", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            wheel = args.wheel or download(args.version, args.python, Path(tmp))
            got = pack(wheel, args.out / f"triton-{args.version}.tar.xz")
    except (subprocess.CalledProcessError, FileNotFoundError, KeyError, ValueError,
            SyntaxError, zipfile.BadZipFile) as e:
        print(f"pack_triton: error: {e}", file=sys.stderr)
        return 2
    print(f"{got} {got.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
