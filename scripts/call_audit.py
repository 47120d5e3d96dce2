"""Every kernel a call launches on an H200, compiled on the CPU: whether it would launch.

    python3 scripts/call_audit.py [--shapes SETS|all|FILE|MxNxK,...] [--draw SEED:COUNT]
                                  [--modes bf16,fp16,fp8,tf32,tf32x3,fp32]
                                  [--cached yes|no|both] [--chip nvidia-h200]
                                  [--tile TILE | --search] [--csv FILE]
                                  [--summary-csv FILE] [--all]

Each call goes through `kernels.matmul.matmul` itself, on meta tensors laid out as the
harness lays them out (gemmgate.inputs.layout: layouts and row padding), as an H200
plans it (compute capability 9.0, 132 SMs, 227 KiB of shared memory a block): the
checks, the dispatcher's decision and operand copies, the committed table's lookup or
the heuristic, the warp-specialized form, the recipe. Where it would launch a kernel
(`kernels.launch.Launch`: the GEMM, a copy, a split-K reduction, a staged C's copy), the
kernel is compiled for sm_90a instead (Triton's `warmup`, with a stand-in driver that
names the target; no GPU is asked) and its PTX given to ptxas -v.

A kernel fails the audit where the device would refuse to launch it: more shared memory
than a block may take (the H200's 232,448 bytes), more registers than an SM holds for
its threads (65,536), or it does not compile. Spill stores (those inside the K loop
counted apart), ptxas's C7515 (wgmma serialized) and a persistent grid asking an SM for
more programs than fit are reported, not failed. The picks made for unseen shapes (the
lookup's derived tiles: re-splits, twins, wide and one-wave forms, hybrids) are only
estimated to fit by the model (`kernels.tile.usable`); this is the compiler's word on
them, before a device runs them. `--chip`: another Hopper profile of gemmgate.chips (its
SMs, shared memory a block and name, whose tuning table the lookup reads). `--search`:
each call runs every tile `gemmgate tune` would time for its key instead (the search
space is pruned by the same model). `--draw SEED:COUNT`: COUNT random calls per mode
(M, N, K each log-uniform in 1-9000, layouts and row paddings drawn), as the kernel's
tests draw them.

Prints one line per flagged kernel (refused, spilling, serialized, or short of programs
an SM; `--all`: every distinct compiled kernel), a line per kernel function and a
summary; `--csv` and `--summary-csv` write them (docs/results). Exit 0 when every kernel
would launch, 1 when any would not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "device"))

SM_REGISTERS = 65536   # 32-bit registers an SM holds (sm_90), for all its threads
SM_SHARED = 233472     # bytes of shared memory a Hopper SM holds (228 KiB)
SM_THREADS = 2048
HOPPER = ("nvidia-h100", "nvidia-h200")   # the gemmgate.chips profiles compiled for (sm_90a)
MODES = ("bf16", "fp16", "fp8", "tf32", "tf32x3", "fp32")
_FIELDS = ("kernel", "warps", "stages", "shared", "registers", "spill_stores",
           "k_loop_spills", "serialized", "asked", "resident", "verdict", "calls",
           "first_call", "constexprs")
_SUMMARY = ("kernel", "kernels", "calls", "max_shared", "max_registers", "spilling",
            "serialized", "refused")


@dataclass(frozen=True)
class Target:
    """The chip a call is planned and compiled for: its name (the profile's, which the
    tuning table's match finds as it finds the name torch reports), compute capability,
    SMs and shared memory a block."""

    name: str
    capability: tuple[int, int]
    sms: int
    smem: int

    @property
    def arch(self) -> int:
        return self.capability[0] * 10 + self.capability[1]


def target(chip_id: str = "nvidia-h200") -> Target:
    """A Hopper profile of gemmgate.chips as a `Target`; InputError for another chip."""
    from gemmgate.chips import CHIPS
    from gemmgate.files import InputError

    if chip_id not in HOPPER:
        raise InputError(f"--chip {chip_id!r}: the audit compiles for sm_90a, the chips "
                         f"{', '.join(HOPPER)} (profiles: {', '.join(CHIPS)})")
    chip = CHIPS[chip_id]
    return Target(chip.name, (9, 0), chip.compute_units, chip.smem_per_block)


@dataclass
class Kernel:
    """A distinct compiled kernel and the calls that launched it."""

    name: str
    warps: int
    stages: int
    shared: int
    constexprs: str
    registers: int | None = None
    spill_stores: int | None = None
    k_loop_spills: int | None = None   # spill instructions in its K loop (`k_loop_spills`)
    serialized: bool = False
    asked: int = 0   # programs an SM is launched with at once, a persistent kernel's grid
    error: str = ""
    smem_limit: int = 232448   # shared memory a block may take on the chip
    calls: set = field(default_factory=set)
    first_call: str = ""

    @property
    def flagged(self) -> bool:
        """Refused, spilling, serialized or fewer programs resident than asked: a finding."""
        return self.verdict() != "ok" or bool(self.spill_stores) or self.serialized \
            or self.short

    @property
    def resident(self) -> int | None:
        """Programs of it an SM holds at once: by registers (allocated 8 a thread at a
        time), shared memory (CTA_SMEM a block reserved) and threads."""
        from kernels.tile import CTA_SMEM

        if self.registers is None or not self.warps:
            return None
        threads = self.warps * 32
        regs = -(-self.registers // 8) * 8
        return min(SM_REGISTERS // (regs * threads), SM_SHARED // (self.shared + CTA_SMEM),
                   SM_THREADS // threads)

    @property
    def short(self) -> bool:
        """A persistent kernel launched with more programs an SM than fit at once: the
        rest wait for a whole program to finish (the step model prices them resident)."""
        return self.resident is not None and self.asked > self.resident

    def verdict(self) -> str:
        """'ok', or why the device would refuse it ('compile', 'shared', 'registers': not
        one program's threads fit the SM's registers)."""
        if self.error:
            return "compile"
        if self.shared > self.smem_limit:
            return "shared"
        return "registers" if self.resident == 0 else "ok"


class _Driver:
    """The stand-in for Triton's active driver: one device, stream 0, an sm_ARCH target;
    nothing launches (the audit compiles through `warmup`)."""

    def __init__(self, arch: int) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        import torch

        return torch.device("meta")


@contextlib.contextmanager
def as_chip(chip: Target, compiled: list | None, prefix: str = "kernels",
            bound: bool = False):
    """Inside: kernels plan and bind as on `chip`, and every Launch compiles its kernel
    for it instead of launching it, appended to `compiled` with its grid and whether it
    is persistent (a grid of programs that walk the tiles: the TMA kernels' NUM_SMS, the
    warp-specialized kernel's); `compiled` None: a launch does nothing (plan_time.py
    --calls times the host path). `bound`: as a device's repeated call runs, a bound
    launch is a stand-in that does nothing, kept and taken, and scratch buffers (a staged
    C, split-K's partials) are kept on the meta device as on a GPU (else no bound launch
    is made, every launch goes the long way, and scratch is a new tensor each call).
    `prefix`: the package patched, this tree's or a reference commit's
    (gemmgate_ref_<sha12>, gemmgate/reference.py)."""
    import importlib

    import triton

    dispatch, launch, matmul_tma = (importlib.import_module(f"{prefix}.{n}")
                                    for n in ("dispatch", "launch", "matmul_tma"))
    kept = contextlib.nullcontext()
    if bound:
        try:   # (a tree before kernels/scratch.py kept no scratch: nothing to patch)
            scratch = importlib.import_module(f"{prefix}.scratch")
        except ModuleNotFoundError:
            scratch = None
        if scratch is not None:
            kept = mock.patch.multiple(scratch.Scratch, kept_on=("cuda", "meta"),
                                       _capturing=lambda self: False,
                                       _stream=lambda self, device: 0)

    def compile_only(self, *tensors):
        # the arguments the compiled kernel's own launch passes, from a device's second
        # call on (its constexprs, defaults included): a copy's I64 left to its default
        # raised KeyError there on every GPU, unseen by the interpreter (session 68)
        self._constexprs(len(tensors) + len(self.ints))
        kernel = self.fn.warmup(*tensors, *self.ints, grid=self.grid, **self.kw)
        compiled.append((kernel, self.grid, "NUM_SMS" in self.kw or "maxnreg" in self.kw))

    def nothing(self, *tensors):
        return None

    info = (chip.capability, chip.smem, chip.name)
    drivers = triton.runtime.driver
    before = drivers._active   # None here: no GPU, so no driver is active
    drivers.set_active(_Driver(chip.arch))
    try:
        with mock.patch.object(dispatch, "_device_info", lambda device: info), \
                mock.patch.object(dispatch, "num_sms", lambda device: chip.sms), \
                mock.patch.object(matmul_tma, "_sm_count", lambda index: chip.sms), \
                mock.patch.object(matmul_tma, "_sm_smem", lambda index: SM_SHARED), \
                mock.patch.object(launch.Launch, "__call__",
                                  nothing if compiled is None else compile_only), \
                mock.patch.object(launch.Launch, "bound",
                                  lambda self, *t: _no_launch if bound else None), kept:
            yield
    finally:
        drivers._active = before
        dispatch.reset()


def _no_launch() -> None:
    """A bound launch that launches nothing (`as_chip`'s `bound`)."""


def draw(seed: int, count: int) -> list:
    """`count` random calls: M, N, K log-uniform in 1-9000, layouts and row paddings drawn
    (as tests/kernels/test_dispatch.py's random calls)."""
    from gemmgate.shapes import Case

    rng = random.Random(seed)

    def dim() -> int:
        return max(1, round(math.exp(rng.uniform(0, math.log(9000)))))

    return [Case(dim(), dim(), dim(), rng.choice(("rr", "rc", "cr", "cc")),
                 rng.choice((0, 0, 1, 8, 40))) for _ in range(count)]


def call(mode_name: str, case, cached: bool, tile=None) -> str:
    """kernels.matmul on meta operands laid out as the harness lays out `case` (inside
    `as_chip`: its launches compiled); the tile it ran (`tile`, or the one it planned),
    as the harness names it."""
    import torch

    from gemmgate.inputs import layout
    from gemmgate.precision import get_mode
    from gemmgate.tuning import config_name
    from kernels import dispatch, matmul
    from kernels.modes import mode_named

    a, b = layout(case, get_mode(mode_name))
    scales = {}
    if mode_name == "fp8":
        one = torch.empty((), dtype=torch.float32, device="meta")
        scales = dict(scale_a=one, scale_b=one)
    matmul(a, b, precision=mode_name, cache_copies=cached, config=tile, **scales)
    return config_name(tile or dispatch.plan(mode_named(mode_name), a, b, cached).pick)


def audit(calls: list[tuple[str, object, bool]], chip: Target, tile=None,
          progress: int = 0, search: bool = False) -> tuple[dict[int, Kernel], int]:
    """The distinct kernels (by identity: Triton's JIT caches each specialization once)
    the calls compile, each with ptxas's report; `tile`: every call runs it (`config=`);
    `search`: each call runs every tile `gemmgate tune` would time for its key
    (`searched`). `progress`: a line to stderr every that many calls. Returns the kernels
    and how many calls ran (a call per searched tile)."""
    kernels: dict[int, Kernel] = {}
    runs = 0
    got: list = []   # the launches of the call in hand (`_audit_call` empties it first)
    with as_chip(chip, got):   # once: leaving it forgets the plans and re-reads the table
        for i, (mode_name, case, cached) in enumerate(calls, 1):
            if progress and i % progress == 0:
                print(f"call_audit: {i} of {len(calls)} calls, {len(kernels)} kernels",
                      file=sys.stderr, flush=True)
            tiles = list(searched(mode_name, case, cached)) if search else [tile]
            for t in tiles:
                _audit_call(kernels, mode_name, case, cached, t, chip, got)
            runs += len(tiles)
    return kernels, runs


def _audit_call(kernels: dict[int, Kernel], mode_name: str, case, cached: bool, tile,
                chip: Target, got: list) -> None:
    """One call's kernels into `kernels` (`audit`; inside `as_chip`, whose launches
    `got` collects)."""
    got.clear()
    label = f"{mode_name} {case.id}{' kept' if cached else ''}"
    try:
        label += f" {call(mode_name, case, cached, tile)}"
    except Exception as e:   # noqa: BLE001 - a kernel that does not compile
        kernels[-len(kernels) - 1] = Kernel(type(e).__name__, 0, 0, 0, "", error=str(e)
                                            [:300], calls={label}, first_call=label)
    for k, grid, persistent in got:
        seen = kernels.get(id(k))
        if seen is None:
            md = k.metadata
            names = k.src.fn.arg_names
            consts = " ".join(f"{n}={v}" for n, v in sorted(
                (names[p[0]], v) for p, v in k.src.constants.items()))
            seen = kernels[id(k)] = Kernel(k.name, md.num_warps, md.num_stages, md.shared,
                                           consts, first_call=label, smem_limit=chip.smem)
            try:
                rep = ptxas_report(k.asm["ptx"], chip.arch)
                seen.registers, seen.spill_stores = rep["registers"], rep["spill_stores"]
                seen.serialized = rep["serialized"]
                if seen.spill_stores:
                    seen.k_loop_spills = k_loop_spills(k.asm["cubin"])
            except RuntimeError as e:
                seen.error = str(e)[:300]
        seen.calls.add(label)
        if persistent:
            seen.asked = max(seen.asked, -(-math.prod(grid) // chip.sms))


def searched(mode_name: str, case, cached: bool) -> tuple:
    """The tiles `gemmgate tune` times for a call's key, the pick first
    (`kernels.dispatch.candidates`, as kernels.matmul hands them to a `choose` hook), as an
    H200 plans it (inside `as_chip`)."""
    from gemmgate.inputs import layout
    from gemmgate.precision import get_mode
    from kernels import dispatch
    from kernels.modes import mode_named

    a, b = layout(case, get_mode(mode_name))
    plan = dispatch.plan(mode_named(mode_name), a, b, cached)
    return dispatch.candidates(plan, a.device, case.m, case.n, case.k)


def ptxas_report(ptx: str, arch: int) -> dict:
    """ptxas -v on the PTX: registers, spill stores, and the C7515 serialization."""
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.ptx"
        path.write_text(ptx)
        got = subprocess.run([get_ptxas(arch).path, f"-arch=sm_{arch}a", "-v", str(path),
                              "-o", str(Path(d) / "k.cubin")],
                             capture_output=True, text=True, timeout=300)
    text = got.stdout + got.stderr
    if got.returncode:
        raise RuntimeError(f"ptxas failed: {text.strip()[:300]}")
    return parse_ptxas(text)


def parse_ptxas(text: str) -> dict:
    """ptxas -v's words: C7515 (wgmma serialized), registers a thread, spill stores."""
    regs = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    return {"serialized": "C7515" in text, "registers": int(regs[1]) if regs else None,
            "spill_stores": int(spills[1]) if spills else None}


_SASS_AT = re.compile(r"/\*[0-9a-f]{4,}\*/")         # an instruction line's address
_SASS_LABEL = re.compile(r"^\s*\.(L_x_\d+):")
_SASS_BRANCH = re.compile(r"\bBRA\b.*?\.(L_x_\d+)")
_SASS_MMA = re.compile(r"\b(?:HGMMA|QGMMA|IGMMA|HMMA|FFMA)\b")   # wgmma, mma.sync, FMA
_SASS_SPILL = re.compile(r"\b(?:STL|LDL)\b")


def k_loop_spills(cubin: bytes) -> int | None:
    """The spill instructions (STL, LDL) inside a kernel's K loop: the innermost loop (a
    branch back to a label) that holds at least half of its MMA instructions (wgmma,
    mma.sync or FMA), from nvdisasm's SASS; None where there is no such loop or nvdisasm
    cannot be run. A spill outside it (the persistent loop's epilogue) costs once a
    tile; inside it, once a K block."""
    from triton import knobs

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin)
        try:
            got = subprocess.run([knobs.nvidia.nvdisasm.path, "-c", str(path)],
                                 capture_output=True, text=True, timeout=300)
        except (OSError, AttributeError, subprocess.SubprocessError):
            return None
    return loop_spills(got.stdout) if got.returncode == 0 else None


def loop_spills(sass: str) -> int | None:
    """`k_loop_spills` of nvdisasm's text."""
    labels: dict[str, int] = {}
    ins: list[str] = []
    loops = []
    for line in sass.splitlines():
        label = _SASS_LABEL.match(line)
        if label:
            labels[label[1]] = len(ins)
        elif _SASS_AT.search(line):
            branch = _SASS_BRANCH.search(line)
            if branch and branch[1] in labels:   # back to a label seen: a loop
                loops.append((labels[branch[1]], len(ins)))
            ins.append(line)
    mma = [i for i, line in enumerate(ins) if _SASS_MMA.search(line)]
    inner = [(hi - lo, lo, hi) for lo, hi in loops
             if mma and 2 * sum(lo <= i <= hi for i in mma) >= len(mma)]
    if not inner:
        return None
    _, lo, hi = min(inner)
    return sum(bool(_SASS_SPILL.search(line)) for line in ins[lo:hi + 1])


def _calls(args) -> list[tuple[str, object, bool]]:
    from gemmgate.files import InputError
    from gemmgate.shapes import SETS, resolve

    modes = args.modes.split(",")
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise InputError(f"unknown modes {', '.join(bad)} (known: {', '.join(MODES)})")
    cached = {"yes": (True,), "no": (False,), "both": (True, False)}[args.cached]
    cases: list = []
    if args.shapes:
        names = list(SETS) if args.shapes == "all" else args.shapes.split(",")
        for spec in names if all(n in SETS for n in names) else [args.shapes]:
            cases += resolve(spec)[1]
    drawn: list = []
    if args.draw:
        seed, _, count = args.draw.partition(":")
        if not (seed.isdigit() and count.isdigit() and int(count) > 0):
            raise InputError(f"--draw takes SEED:COUNT (got {args.draw!r})")
        drawn = draw(int(seed), int(count))
    if not cases and not drawn:
        raise InputError("give --shapes or --draw")
    # each call once, as a run measures each case once: `--shapes all` (CI) held pr's
    # cases again in nightly and llm (303 cases, 289 distinct), counted in "N calls"
    return [(m, c, keep) for m in dict.fromkeys(modes)
            for c in dict.fromkeys((*cases, *drawn))
            if 0 not in (c.m, c.n, c.k) for keep in cached]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", help="set names (comma-separated; 'all': every set), a "
                    "shape file or inline MxNxK cases")
    ap.add_argument("--draw", metavar="SEED:COUNT", help="random calls per mode")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--cached", choices=("yes", "no", "both"), default="yes",
                    help="operand copies kept (the harness: yes) or made per call")
    ap.add_argument("--tile", help="run this tile (tiles.py's form) in every call")
    ap.add_argument("--search", action="store_true",
                    help="run every tile `gemmgate tune` would time for each call's key")
    ap.add_argument("--chip", default="nvidia-h200", help=f"one of {', '.join(HOPPER)}")
    ap.add_argument("--csv", metavar="FILE",
                    help="write the kernels flagged (refused, spilling, serialized; "
                         "--all: every one)")
    ap.add_argument("--summary-csv", metavar="FILE", help="write the per-function summary")
    ap.add_argument("--all", action="store_true", help="print and write every kernel")
    ap.add_argument("--progress", type=int, default=0, metavar="N",
                    help="a line to stderr every N calls")
    args = ap.parse_args(argv)
    from tiles import parse_tile

    from gemmgate.files import InputError

    try:
        calls = _calls(args)
        tile = parse_tile(args.tile) if args.tile else None
        chip = target(args.chip)
    except (InputError, ValueError) as e:
        print(f"call_audit: error: {e}", file=sys.stderr)
        return 2
    if tile is not None and args.search:
        print("call_audit: error: --tile and --search exclude each other", file=sys.stderr)
        return 2
    kernels, runs = audit(calls, chip, tile, args.progress, args.search)
    rows = sorted(kernels.values(), key=lambda k: (k.verdict() == "ok", k.name, -k.shared))
    for k in rows if args.all else [k for k in rows if k.flagged]:
        print(_line(k))
    table = summary(rows)
    for r in table:
        print(f"{r['kernel']:18s} {r['kernels']:5d} kernels, {r['calls']:5d} calls, shared "
              f"<= {r['max_shared']:6d} B, registers <= {r['max_registers']}, "
              f"{r['spilling']} spilling, {r['serialized']} serialized, {r['refused']} refused")
    refused = [k for k in rows if k.verdict() != "ok"]
    tried = f" ({runs} tiles searched)" if args.search else ""
    print(f"call_audit: {len(calls)} calls{tried}, {len(rows)} kernels, {len(refused)} the device "
          f"would refuse, {sum(k.serialized for k in rows)} serialized, "
          f"{sum(bool(k.spill_stores) for k in rows)} spilling")
    if args.csv:
        _write(args.csv, _FIELDS, [_fields(k) for k in rows if args.all or k.flagged])
    if args.summary_csv:
        _write(args.summary_csv, _SUMMARY, table)
    return 1 if refused else 0


def _line(k: Kernel) -> str:
    in_loop = "" if k.k_loop_spills is None else f" ({k.k_loop_spills} in the K loop)"
    flags = [f for f, on in ((f"{k.asked} programs an SM asked, {k.resident} resident",
                              k.short),
                             ("SERIALIZED", k.serialized),
                             (f"{k.spill_stores} B spilled{in_loop}", k.spill_stores)) if on]
    return (f"{k.verdict():9s} {k.name} w{k.warps} s{k.stages}: {k.shared} B shared, "
            f"{k.registers} registers{''.join(', ' + f for f in flags)}; {len(k.calls)} "
            f"calls, first {k.first_call}{(' | ' + k.error) if k.error else ''}")


def summary(kernels: list[Kernel]) -> list[dict]:
    """Per kernel function (`_SUMMARY`): its distinct compiled kernels, the calls that
    launched them, the most shared memory and registers, and how many spill, serialize
    or would be refused."""
    out: dict[str, dict] = {}
    for k in kernels:
        r = out.setdefault(k.name, dict(kernel=k.name, kernels=0, calls=0, max_shared=0,
                                        max_registers=0, spilling=0, serialized=0,
                                        refused=0))
        r["kernels"] += 1
        r["calls"] += len(k.calls)
        r["max_shared"] = max(r["max_shared"], k.shared)
        r["max_registers"] = max(r["max_registers"], k.registers or 0)
        r["spilling"] += bool(k.spill_stores)
        r["serialized"] += k.serialized
        r["refused"] += k.verdict() != "ok"
    return sorted(out.values(), key=lambda r: r["kernel"])


def _fields(k: Kernel) -> dict:
    return dict(kernel=k.name, warps=k.warps, stages=k.stages, shared=k.shared,
                registers=k.registers, spill_stores=k.spill_stores,
                k_loop_spills="" if k.k_loop_spills is None else k.k_loop_spills,
                asked=k.asked or "", resident="" if k.resident is None else k.resident,
                serialized=int(k.serialized), verdict=k.verdict(), calls=len(k.calls),
                first_call=k.first_call, constexprs=k.constexprs)


def _write(path: str, fields: tuple[str, ...], rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
