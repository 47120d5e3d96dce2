"""Named tiles side by side on the device: is a case slow for its tile, or for its code?

`python3 scripts/device/tiles.py 1024x1024x2048 [...] --mode bf16 --configs
tma:128x64x64:s4:w4,tiled:64x128x128:s4:w4,tma_split:128x128x64:s4:w8:k2 [--inductor]
[--pad P] [--layout rc] [--uncached] [--csv PATH] [--label L]` times, per shape, in one
interleaved measurement (gemmgate.timing.measure, CUDA graphs, the harness's policy):
  - `pick`: kernels.matmul as the library runs it (table or heuristic tile),
  - each named tile (kernels.matmul(config=...)); a tile that fails to compile or launch
    is reported and left out,
  - `vendor`: torch.matmul (cuBLAS), and with --inductor torch.compile's Triton GEMM
    (the harness's inductor provider; its autotuning log goes to stderr),
  - with --uncached, `uncached`: kernels.matmul without cache_copies, as a library caller
    whose operands change every call makes it (its operand copies made per call; the
    harness's calls keep them, as a weight's),
twice: with the L2 flushed before each call (as every gemmgate run times) and without,
so a tile that loses only from a cold L2 shows. One CSV row per (shape, flush, provider):
median device microseconds, TFLOP/s and the ratio to the vendor.

With --profile-calls N nothing is timed: each provider makes N calls in turn inside one
NVTX range named `profile`, for a profiler told to look there alone (`ncu --nvtx
--nvtx-include profile/ ...`), and the rows say the order: (shape, mode, provider,
calls). scripts/ncu_summary.py gives the profiler's rows (one a kernel launched) their
providers by that order.

With --kernels PATH, one call of each provider also runs under torch.profiler, and PATH
gets a row per GPU kernel it launched: its name (cuBLAS's names its tile, cluster and
schedule), grid, block, registers a thread, shared memory, the profiler's estimated
occupancy and its device microseconds (one call, L2 warm: for what ran, not for timing).

A tile is variant:BMxBNxBK:sSTAGES:wWARPS[:kSPLIT][:gGROUP_M][:oPROGRAMS] (split 1,
GROUP_M 8, one program per SM unless given). Every mode (fp8 with its scales and kept
K-major copies, as the harness calls).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

import torch

import kernels
from gemmgate import providers
from gemmgate.chips import select_chip
from gemmgate.inputs import make_inputs
from gemmgate.precision import get_mode, vendor_flags
from gemmgate.shapes import LAYOUTS
from gemmgate.sweep import parse_shape
from gemmgate.timing import measure
from gemmgate.timing_policy import TimingPolicy
from gemmgate.tuning import config_spec
from kernels.tile import TileConfig

_TILE = re.compile(r"(\w+):(\d+)x(\d+)x(\d+):s(\d+):w(\d+)((?::[kgo]\d+)*)")


def parse_tile(text: str) -> TileConfig:
    got = _TILE.fullmatch(text.strip())
    if not got:
        raise ValueError(f"tile {text!r}: give variant:BMxBNxBK:sS:wW[:kSPLIT][:gGROUP]"
                         "[:oPROGRAMS]")
    variant, bm, bn, bk, st, w, rest = got.groups()
    extra = {p[0]: int(p[1:]) for p in rest.split(":") if p}
    return TileConfig(int(bm), int(bn), int(bk), extra.get("g", 8), int(st), int(w),
                      variant, extra.get("k", 1), extra.get("o", 1))


_KERNEL_ARGS = {"grid": "grid", "block": "block", "registers per thread": "registers",
                "shared memory": "smem", "est. achieved occupancy %": "occupancy"}


def kernel_events(trace: dict) -> list[dict]:
    """The GPU kernels of a torch.profiler chrome trace, in launch order: name, the launch
    arguments the profiler records (`_KERNEL_ARGS`; grid and block as AxBxC) and device
    microseconds."""
    out = []
    for ev in sorted((e for e in trace.get("traceEvents", ()) if e.get("cat") == "kernel"),
                     key=lambda e: e.get("ts", 0)):
        args = ev.get("args", {})
        row = {"kernel": ev.get("name", "")}
        for key, col in _KERNEL_ARGS.items():
            v = args.get(key, "")
            row[col] = "x".join(str(x) for x in v) if isinstance(v, list) else v
        row["us"] = round(float(ev.get("dur", 0.0)), 2)
        out.append(row)
    return out


def profile_kernels(fn) -> list[dict]:
    """One warm call of `fn` under torch.profiler: the kernels it launched."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        return kernel_events(json.loads(Path(f.name).read_text()))


def shape_rows(shape: str, mode_name: str, tiles: list[TileConfig], inductor: bool,
               policy: TimingPolicy, flush_bytes: int, pad: int = 0,
               uncached: bool = False, layout: str = "rr",
               kernels_out: list[dict] | None = None, profile_calls: int = 0) -> list[dict]:
    case = dataclasses.replace(parse_shape(shape, layout), pad=pad)
    mode = get_mode(mode_name)
    shape = f"{shape}-{layout}" if layout != "rr" else shape
    shape = f"{shape}+p{pad}" if pad else shape
    inp = make_inputs(case, mode, "cuda")
    picked: list[TileConfig] = []

    def choose(key, candidates, bench):   # the plan's own pick comes first: take it
        picked.append(candidates[0])
        return candidates[0]

    def tile_call(config=None, hook=None):
        """The call as the harness's Triton provider makes it (its output layout, fp8's
        scales, kept operand copies), with this tile or hook."""
        return providers.kernel_call(functools.partial(kernels.matmul, config=config),
                                     hook, inp, mode)

    tile_call(hook=choose)()
    fns = {"pick": tile_call(picked[0])}
    if uncached:
        def plain(a, b, *, precision, out, scale_a, scale_b):   # no cache_copies parameter
            return kernels.matmul(a, b, precision=precision, out=out, scale_a=scale_a,
                                  scale_b=scale_b)

        fns["uncached"] = providers.kernel_call(plain, None, inp, mode)
    for c in tiles:
        run = tile_call(c)
        try:
            run()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a tile that cannot run is reported, not fatal
            print(f"{shape} {config_spec(c)}: {type(e).__name__}: {str(e)[:160]}", file=sys.stderr)
            continue
        fns[config_spec(c)] = run
    with vendor_flags(mode):
        fns["vendor"] = providers.vendor_provider(inp, mode)
        if inductor:
            fns["inductor"] = providers.inductor_provider(inp, mode)
        shown = {name: f"pick {config_spec(picked[0])}" if name == "pick" else name
                 for name in fns}   # the rows' provider column
        if kernels_out is not None:
            for name, fn in fns.items():
                kernels_out += [{"shape": shape, "mode": mode.name, "provider": shown[name],
                                 **k} for k in profile_kernels(fn)]
        if profile_calls:
            return profiled(fns, shown, profile_calls, {"shape": shape, "mode": mode.name})
        rows = []
        for flushed in (True, False):
            samples = measure(fns, policy, flush_bytes=flush_bytes if flushed else 0)
            vendor = statistics.median(samples["vendor"])
            for name, ms in samples.items():
                med = statistics.median(ms)
                rows.append({"shape": shape, "mode": mode.name, "flush": int(flushed),
                             "provider": shown[name], "us": round(med * 1e3, 2),
                             "tflops": round(case.flops / med / 1e9, 1),
                             "ratio": round(vendor / med, 4)})
    return rows


def profiled(fns: dict, shown: dict, calls: int, labels: dict) -> list[dict]:
    """`calls` calls of each provider in turn, all inside one NVTX range `profile`: the
    rows say the order (see the module docstring)."""
    torch.cuda.synchronize()
    with torch.cuda.nvtx.range("profile"):
        for fn in fns.values():
            for _ in range(calls):
                fn()
        torch.cuda.synchronize()
    return [{**labels, "provider": shown[name], "calls": calls} for name in fns]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shapes", nargs="+", help="M x N x K, e.g. 1024x1024x2048")
    p.add_argument("--mode", default="bf16")
    p.add_argument("--configs", default="", help="comma-separated tiles (see the docstring)")
    p.add_argument("--inductor", action="store_true", help="also time torch.compile's GEMM")
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timing per shape")
    p.add_argument("--uncached", action="store_true",
                   help="also time the library call without kept operand copies")
    p.add_argument("--pad", type=int, default=0,
                   help="pad A's and B's leading dimension by this many elements (as the "
                        "shape sets' +pN cases)")
    p.add_argument("--layout", default="rr", choices=LAYOUTS,
                   help="A's and B's layouts, as the shape sets' (rc: B column-major)")
    p.add_argument("--csv", help="write the rows here (default: stdout)")
    p.add_argument("--label", help="a first column `label` of this value in every row (runs "
                                   "or trees side by side in one file, e.g. session 48's "
                                   "uncached.csv, frozen after ee037cf)")
    p.add_argument("--kernels", help="also write each provider's kernels (torch.profiler: "
                                     "name, grid, registers, occupancy) to this CSV")
    p.add_argument("--profile-calls", type=int, default=0, metavar="N",
                   help="time nothing: N calls of each provider inside the NVTX range "
                        "`profile`, for ncu (see the docstring)")
    args = p.parse_args(argv)
    try:
        tiles = [parse_tile(t) for t in args.configs.split(",") if t.strip()]
        get_mode(args.mode)
        for s in args.shapes:
            parse_shape(s)
        if args.pad < 0:
            raise ValueError(f"--pad {args.pad}: give 0 or more elements")
        if args.profile_calls < 0:
            raise ValueError(f"--profile-calls {args.profile_calls}: give 1 or more calls "
                             "(0: time as usual)")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: tiles.py times on a CUDA GPU", file=sys.stderr)
        return 2
    policy = TimingPolicy(method="graph", budget_s=args.budget)
    flush = select_chip().chip.flush_bytes
    launched: list[dict] | None = [] if args.kernels else None
    rows = [r for s in args.shapes
            for r in shape_rows(s, args.mode, tiles, args.inductor, policy, flush, args.pad,
                                 args.uncached, args.layout, launched, args.profile_calls)]
    _write(labelled(rows, args.label), args.csv)
    if args.kernels:
        _write(labelled(launched, args.label), args.kernels)
    return 0


def labelled(rows: list[dict], label: str | None) -> list[dict]:
    """The rows, each with `label` as its first column where one is given."""
    return rows if label is None else [{"label": label, **r} for r in rows]


def _write(rows: list[dict], path: str | None) -> None:
    sink = open(path, "w", newline="") if path else sys.stdout
    with sink:
        w = csv.DictWriter(sink, fieldnames=list(rows[0]) if rows else ["shape"])
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
