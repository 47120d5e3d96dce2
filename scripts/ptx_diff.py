"""Whether an edit to the tiled kernel changes what given tiles compile to, on the CPU.

    python3 scripts/ptx_diff.py --ref REV SHAPE [SHAPE ...] --tiles TILE[,TILE...]
                                [--modes bf16,tf32,...] [--arch 90]

An edit to a variant's kernel source makes every table entry of that variant stale (its
source hash), and `gemmgate tune --stale` then retunes them all. A retune costs device
time, and it moves picks by its own noise. Session 28 retuned 72 entries whose loop had
not changed, and one moved pick failed the PR check. This says, before any device call,
which (mode, shape, tile) compile to other code.

For each one, the tiled variant's launch is made at REV and in this tree
(`matmul_tiled._launches`: the constexprs for that shape, row-major operands). Each is
compiled for sm_ARCH with `triton.compile`, with no GPU (Triton's bundled ptxas). The two
PTX texts are compared without their debug info: `.file` and `.loc` lines, comments,
and the debug sections.

Prints one line per combination, `same` or `differs` (with the line counts); exit 0
when every one is the same, 1 when any differs, 2 on bad input. SHAPE is MxNxK; a TILE
is written as tiles.py writes it (`tiled:64x64x64:s4:w4[:k2]`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_PTR = {"bfloat16": "*bf16", "float16": "*fp16", "float32": "*fp32",
        "float8_e4m3fn": "*fp8e4nv"}
_DEBUG = re.compile(r"\.file.*|\.loc.*|//.*")
_TMP_LABEL = re.compile(r"\s*(\$L__tmp\d+):\s*")
_TMP_NAME = re.compile(r"\$L__tmp\d+")


def launch_of(pkg, mode_name: str, tile: dict, m: int, n: int, k: int):
    """`pkg`'s tiled Launch for a row-major (m, k) @ (k, n) call in this mode."""
    mode = pkg.modes.mode_named(mode_name)
    config = pkg.tile.TileConfig(**tile)
    main, _ = pkg.matmul_tiled._launches(
        config, m, n, k, (k, 1), (n, 1), (n, 1), mode.input_precision,
        mode.input_dtypes == ("float32",), mode.scaled)
    return main, mode


def ptx(launch, mode, arch: int) -> str:
    """The launch's kernel compiled for sm_`arch`, as PTX without debug info."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = launch.fn
    kw = dict(launch.kw)
    options = {"num_warps": kw.pop("num_warps"), "num_stages": kw.pop("num_stages")}
    sig = {}
    for name in fn.arg_names:
        if name in kw:
            sig[name] = "constexpr"
        elif name in ("a_ptr", "b_ptr"):
            sig[name] = _PTR[mode.input_dtypes[0]]
        elif name == "c_ptr":
            sig[name] = _PTR[mode.output_dtype]
        elif name.endswith("_ptr"):
            sig[name] = "*fp32"
        else:
            sig[name] = "i32"
    compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=kw),
                              target=GPUTarget("cuda", arch, 32), options=options)
    return plain_ptx(compiled.asm["ptx"])


def plain_ptx(text: str) -> str:
    """PTX without its debug info: the debug sections, `.file` and `.loc` lines, comments,
    blank lines, and the `$L__tmpN:` labels nothing left refers to (the debug sections
    mark inlined calls' ranges with them: a `@triton.jit` helper written out or called
    is the same code; scripts/restamp.py compares entries' code by it too)."""
    cut = re.search(r"\.section\s+\.debug", text)
    lines = [x.rstrip() for x in _DEBUG.sub("", text[:cut.start()] if cut else text)
             .splitlines() if x.strip()]
    labels = {i: m.group(1) for i, x in enumerate(lines) if (m := _TMP_LABEL.fullmatch(x))}
    used = set(_TMP_NAME.findall("\n".join(x for i, x in enumerate(lines) if i not in labels)))
    return "\n".join(x for i, x in enumerate(lines) if i not in labels or labels[i] in used)


def _shape(text: str) -> tuple[int, int, int]:
    """gemmgate.sweep.parse_shape's M, N, K, with this script's message."""
    from gemmgate.sweep import parse_shape

    try:
        case = parse_shape(text)
    except ValueError:
        raise ValueError(f"shape {text!r}: give MxNxK, e.g. 144x192x400") from None
    return case.m, case.n, case.k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+", help="MxNxK")
    ap.add_argument("--ref", required=True, help="the commit to compare with")
    ap.add_argument("--tiles", required=True, help="comma-separated tiled tiles")
    ap.add_argument("--modes", default="bf16")
    ap.add_argument("--arch", type=int, default=90, help="compute capability (default 90)")
    args = ap.parse_args(argv)
    import dataclasses

    import kernels
    from gemmgate import reference
    from gemmgate.tuning import config_spec

    sys.path.insert(0, str(ROOT / "scripts" / "device"))
    from tiles import parse_tile

    try:
        shapes = [_shape(s) for s in args.shapes]
        tiles = [dataclasses.asdict(parse_tile(t)) for t in args.tiles.split(",") if t]
        if any(t["variant"] != "tiled" for t in tiles):
            raise ValueError("--tiles: only the tiled variant's tiles (tiled:...)")
        modes = [kernels.modes.mode_named(m).name for m in args.modes.split(",")]
        sha, old = reference.load(reference.resolve(args.ref, ROOT, "--ref"), ROOT)
    except ValueError as e:
        print(f"ptx_diff: error: {e}", file=sys.stderr)
        return 2
    differ = 0
    for mode in modes:
        for m, n, k in shapes:
            for tile in tiles:
                mine, kmode = launch_of(kernels, mode, tile, m, n, k)
                theirs, _ = launch_of(old, mode, tile, m, n, k)
                a, b = ptx(theirs, kmode, args.arch), ptx(mine, kmode, args.arch)
                differ += a != b
                print(f"{mode} {m}x{n}x{k} {config_spec(tile)}: "
                      f"{'same' if a == b else 'differs'} ({len(a.splitlines())} lines at "
                      f"{sha[:12]}, {len(b.splitlines())} here)")
    print(f"{differ} of {len(modes) * len(shapes) * len(tiles)} differ from {sha[:12]}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
