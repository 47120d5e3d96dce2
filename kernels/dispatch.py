"""Which variant and tile a call runs, and on what operands: decided in microseconds.

A call is keyed by (device, mode, M, N, K, operand strides and alignment). For a key:

1. Operands and variants (`kernels.decide`): which operands are copied (K-major for
   tf32 and fp8 wgmma, aligned or on whole lines for TMA, row-major for IEEE fp32), which
   variants can run, and the tuning bucket.
2. The tile: the committed tuning table's entry for the exact key, else the nearest entry
   of the same bucket by regime (kernels/table.py), among the variants the call can run;
   else kernels.configs.heuristic. A caller's `choose` hook (the harness) gets this pick
   first among the candidates.

Plans are cached per key, so a repeated call skips all of this.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch
import triton

from kernels import relayout, table, ws_forms
from kernels.configs import (
    INTERPRETER_CONFIG,
    heuristic,
    ranges_fit,
    search_space,
    tma_split_space,
)
from kernels.decide import b_kmajor_after, decide, on_fma_units
from kernels.fma import gemv_space
from kernels.matmul_tma import num_sms
from kernels.modes import KernelMode
from kernels.past_n import PAD_N, pads_b, room
from kernels.pricing import b_kmajor
from kernels.relayout import LINE, CopyCache, aligned_copy, pitched_copy
from kernels.scratch import SCRATCH
from kernels.steps import derive
from kernels.tile import MAX_TMA_SPLIT, WGMMA_M, TileConfig, cdiv, usable

COPIES = CopyCache()   # operand copies of calls with cache_copies=True
CALLS: dict[tuple, object] = {}   # kernels.matmul's checked calls: key -> Resolved
_MAX_CALLS = 4096


@dataclass(frozen=True)
class Plan:
    family: str
    key: str                        # the tuning key: "<bucket> | <shape and strides>"
    copy_a: str                     # "" | "kmajor" | "aligned" | "rowmajor" (IEEE fp32) | "pitch"
    copy_b: str
    variants: tuple[str, ...]
    pick: TileConfig                # the table's or the heuristic's choice
    source: str                     # "table", "table-nearest", "heuristic", "interpreter"
    fma: bool = False               # IEEE fp32: the FMA units' tiles (kernels/fma.py)
    pad_b: bool = False             # B's kept copy holds zeros past N to a multiple of PAD_N


def interpreting() -> bool:
    """Whether TRITON_INTERPRET asks for the interpreter, read as Triton reads it ("false"
    and "off" are off: it was on here, a review)."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is not None and hasattr(runtime, "interpret"):
        return bool(runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() not in ("", "0", "false", "off",
                                                                   "no")


def kernels_interpreted() -> bool:
    """Whether the kernels were made for the interpreter: Triton decides at each
    @triton.jit, when `kernels` is imported, not when TRITON_INTERPRET is read later.
    (Asked of the copy kernel this module imported: a package import here at call time
    would find this tree's `kernels` from an A/B reference's, tests/test_imports.py.)"""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(relayout._copy_kernel, InterpretedFunction)


def triton_interpreted() -> bool:
    """Whether triton's own @jit helpers (tl.cdiv, ...) were made for the interpreter:
    they are decorated when `triton` is imported, so TRITON_INTERPRET=1 set after
    `import triton` but before `import kernels` left them GPU functions, and a CPU call
    failed inside the interpreter ("Cannot call @triton.jit'd outside of the scope of a
    kernel", a review)."""
    from triton.runtime.jit import JITFunction

    return not isinstance(getattr(triton.language, "cdiv", None), JITFunction)


@functools.cache
def _device_info(device: torch.device) -> tuple[tuple[int, int], int, str]:
    """(capability, shared memory per block, device name): asked once per device."""
    if device.type != "cuda":
        return (0, 0), 1 << 20, "cpu"
    p = torch.cuda.get_device_properties(device)
    cap = (0, 0) if torch.version.hip is not None else (p.major, p.minor)
    return cap, p.shared_memory_per_block_optin, p.name


def device_capability(device: torch.device) -> tuple[int, int]:
    return _device_info(device)[0]


def device_name(device: torch.device) -> str:
    """The name the device's tuning table is found by (and errors say)."""
    return _device_info(device)[2]


def plan(mode: KernelMode, a: torch.Tensor, b: torch.Tensor, cached: bool = False) -> Plan:
    """The call's plan; `cached`: its operand copies are kept across calls
    (kernels.matmul's cache_copies), so a copy's cost is paid once."""
    M, K = a.shape
    N = b.shape[1]
    align = tuple(x.data_ptr() % 16 == 0 for x in (a, b))
    return _plan(mode, a.device, M, N, K, a.stride(), b.stride(), align, a.element_size(),
                 cached)


@functools.lru_cache(maxsize=4096)
def _plan(mode: KernelMode, device: torch.device, M: int, N: int, K: int, sa: tuple,
          sb: tuple, aligned: tuple, elem: int, cached: bool = False) -> Plan:
    cap, smem, name = _device_info(device)
    on_cpu = interpreting() or device.type == "cpu"
    fam, key, bucket, copy_a, copy_b, variants = decide(
        mode, cap, M, N, K, sa, sb, aligned, elem, has_tma=cap >= (9, 0) and not on_cpu,
        cached=cached)
    fma = on_fma_units(mode)
    pad = pads_b(copy_b, variants, N)
    if on_cpu:
        return Plan(fam, key, copy_a, copy_b, variants, INTERPRETER_CONFIG, "interpreter",
                    fma, pad)
    sms = num_sms(device)
    found = table.lookup(name, bucket, M, N, K, variants=variants, sms=sms, smem=smem)
    if found is not None and usable(found[0], fam, smem):
        pick, source = found
    else:
        pick, source = fallback(fam, M, N, K, variants, sms, smem, fma,
                                mode.input_precision == "tf32x3", b_kmajor(bucket)), "heuristic"
    pick = within_workspace(pick, M, N, variants)
    ranged = within_workspace(fast_ranges(pick, fam, M, N, K, variants, smem, sms), M, N,
                              variants)
    if ranged is pick and "tma_ws" in variants:   # (decide: Hopper only)
        ranged = _ws(pick, bucket, M, N, K, sms)
    return Plan(fam, key, copy_a, copy_b, variants, ranged, source, fma, pad)


WORKSPACE_MAX = 2**31   # a split's fp32 partials, (split, M, N), addressed in int32


def within_workspace(c: TileConfig, m: int, n: int, variants: tuple[str, ...]) -> TileConfig:
    """`c` split no more ways than its partials' workspace can be addressed (split x M x N
    under WORKSPACE_MAX elements): a table entry's split borrowed by a larger shape (the
    regime caps output tiles, so 8192^3's split looked near 16384 x 32768) or fp8's forced
    split of 32768^3 raised "split less" at launch, which a caller cannot do (a review,
    456 such picks over large shapes in both tables). Unsplit where even 2 ways are too
    many: a TMA split (or hybrid) tile as the plain TMA tile where the call runs it, else
    the tiled and gemv kernels' split 1."""
    if c.split_k < 2 or c.split_k * m * n < WORKSPACE_MAX:
        return c
    split = (WORKSPACE_MAX - 1) // max(m * n, 1)
    if split >= 2:
        return derive(c, c.variant, split, c.occupancy)
    if c.variant in ("tma_split", "tma_hybrid"):
        return derive(c, "tma", 1, 1) if "tma" in variants else c
    return derive(c, c.variant, 1, c.occupancy)


# fp8's dot on sm_90 sums in wgmma's fast accumulator, never promoted: its error grows
# with a program's K range and passes fp8's max_error (5e-3) between K = 32,768 and
# 65,536 (session 60, accum.py, on the H200 and an H100; cuBLASLt's fast accumulation
# equals it). A split's programs start each range's sum afresh and its reduction adds the
# ranges in fp32. Measured (session 63, H100, `accum.py --max-range 16384`): a range of
# 28,672 sums to 4.66e-3 (93% of the band), 32,768 to 5.00e-3 (at it), 65,536 to 7.24e-3
# (past it); split into ranges of 16,384 they sum to 3.33-3.54e-3 (scripts/accum_model.py
# predicted 3.6-3.7e-3), the pick's own split at x0.84-0.88 of the unsplit tile, but x0.64
# on 2048 x 2048 x 65536, whose pick splits into a slow tile (FP8_SPLIT_TILE below). So a
# pick is split only where one of its ranges would pass FP8_UNSPLIT_MAX, the longest
# range measured with a 5% margin, and then into ranges of FP8_MAX_RANGE at most.
FP8_UNSPLIT_MAX = 28672
FP8_MAX_RANGE = 16384
# The tile such a split runs where the output is 1024 x 1024 or more (session 63, an H100,
# tiles.py on 17 shapes of K 32-64k): there the pick's own split ran 0.54-0.64 of cuBLAS
# where the pick was 128x128x128 of 8 warps or 64x64x128 (the H100's heuristic picks),
# 0.74-0.76 where it was 128x128x128 of 4 (the H200's table pick of 2048 x 2048 x 65536),
# and this tile 0.72-1.19, never below the pick's split; on 512 x 512 the pick's own split
# ran faster (0.75 and 1.08 against 0.44 and 0.72).
FP8_SPLIT_TILE = TileConfig(128, 256, 128, 8, 3, 8, "tma_split")
FP8_SPLIT_TILE_MIN = 1024
# The half-width tile a forced split runs where its waves cost less (session 64, an H100:
# tiles_programs.csv and tiles_k3.csv beside session 63's tiles_k*.csv, 22 shapes of K
# 32-64k of 1024 x 1024 or more). An FP8_SPLIT_TILE program ran 1.35-1.80x as long as one
# of this tile (median 1.63), so this tile is taken where its waves are fewer than
# FP8_SPLIT_TILE's times FP8_SPLIT_PROGRAM_COST: 1024 x 1024 x 32768 (one wave against
# one: 1.09 of cuBLAS against 0.72) and 1536 x 1536 x 32768 (three against two: 0.67
# against 0.57), not 1024 x 1280 to 8192 x 8192 (twice the waves or more: 0.65-1.03
# against 0.74-1.19) nor 1058 x 3067 x 43005 (five against three: 0.72 against 0.89).
# The model classifies all 22. Below FP8_SPLIT_TILE_MIN, where outputs are small and
# programs wait on their loads, this tile runs where its waves load fewer rows and
# columns than the pick's own split's (`_loads`): 640 x 640 x 65536 (one wave of 256
# against two of 192: 1.43 against 1.07), 100 x 4000 x 65536 (1.01 against 0.79), not 5216
# x 47 x 34665 (one of 256 against two of 128: 0.91 against 0.96) nor 512 x 512 x 32768
# (one of 256 against one of 128: 0.73-0.76 against 0.75-0.86).
FP8_SPLIT_ONE_WAVE = TileConfig(128, 128, 128, 8, 5, 4, "tma_split")
FP8_SPLIT_PROGRAM_COST = 1.6


def fast_ranges(pick: TileConfig, fam: str, m: int, n: int, k: int,
                variants: tuple[str, ...], smem: int = 0, sms: int = 0) -> TileConfig:
    """An fp8 pick one of whose programs would sum more than FP8_UNSPLIT_MAX of K in the
    fast accumulator, split into ranges of FP8_MAX_RANGE at most (where that takes more
    than MAX_TMA_SPLIT ranges: into MAX_TMA_SPLIT), as a split tile the chip holds
    (`usable` in `smem` bytes a program). Where M and N are FP8_SPLIT_TILE_MIN or more:
    FP8_SPLIT_TILE, or FP8_SPLIT_ONE_WAVE where its waves on the chip's `sms` cost less
    (FP8_SPLIT_PROGRAM_COST). Smaller: FP8_SPLIT_ONE_WAVE where its waves load less
    than the pick's own split's (`_loads`; the pick's own split on a tie, and where no SM
    count is known), else that; FP8_SPLIT_ONE_WAVE too where the pick has no split form.
    Other picks as they are."""
    if fam != "fp8" or longest_range(pick, k) <= max(FP8_UNSPLIT_MAX, FP8_MAX_RANGE):
        return pick
    # past MAX_TMA_SPLIT ranges of FP8_MAX_RANGE, ranges as short as a split makes them
    # (the pick ran unsplit there: fp8 2048 x 2048 x 1,052,672 summed all of K in the fast
    # accumulator where 1,048,576 ran 64 ranges of 16,384; a review)
    most = max(FP8_MAX_RANGE, cdiv(k, MAX_TMA_SPLIT))

    def held(tile: TileConfig) -> TileConfig | None:
        if not smem or not usable(tile, fam, smem):
            return None
        got = split_ranges(tile, k, variants, most)
        return got if longest_range(got, k) <= most else None

    one, own = held(FP8_SPLIT_ONE_WAVE), split_ranges(pick, k, variants, most)
    big = held(FP8_SPLIT_TILE) if min(m, n) >= FP8_SPLIT_TILE_MIN else None
    if big is not None:
        if one is not None and sms and \
                _waves(one, m, n, sms) < FP8_SPLIT_PROGRAM_COST * _waves(big, m, n, sms):
            return one
        return big
    if longest_range(own, k) > most:   # no split form of its own
        return one or own
    if one is None or not sms:
        return own
    return one if _loads(one, m, n, sms) < _loads(own, m, n, sms) else own


def longest_range(pick: TileConfig, k: int) -> int:
    """The most of K one program of `pick` sums: a K range of its split; all of K for a
    hybrid tile, whose head runs `tma` unsplit (its split_k is the tail's alone: an fp8
    hybrid pick over K = 65,536 summed it whole in the fast accumulator, past fp8's band
    by the session-63 model, and fast_ranges left it so; a review)."""
    return k if pick.variant == "tma_hybrid" else cdiv(k, pick.split_k)


def _programs(c: TileConfig, m: int, n: int) -> int:
    """Programs of a split tile's grid: its output tiles times its K ranges."""
    return cdiv(m, c.block_m) * cdiv(n, c.block_n) * c.split_k


def _waves(c: TileConfig, m: int, n: int, sms: int) -> int:
    """Waves of a split tile's grid of one program an SM."""
    return cdiv(_programs(c, m, n), sms)


def _loads(c: TileConfig, m: int, n: int, sms: int) -> int:
    """A split's operand loads in its longest SM's programs, in rows of a K range: waves
    times the rows of A and columns of B a program loads."""
    return _waves(c, m, n, sms) * (c.block_m + c.block_n)


def split_ranges(pick: TileConfig, k: int, variants: tuple[str, ...],
                 max_range: int) -> TileConfig:
    """`pick` with no program summing more than `max_range` of K: a TMA tile (`tma`,
    `tma_ws`, `tma_split`) as `tma_split` of the fewest ranges of at most `max_range` whose
    blocks fit (`ranges_fit`), the tiled kernel's as its own split. `pick` itself where its
    ranges are that short already, where it has no split form (a `tma_ws` tile whose
    BLOCK_N is no power of two, the wide, stream-K and gemv kernels), and where the split
    would pass MAX_TMA_SPLIT."""
    if longest_range(pick, k) <= max_range:
        return pick
    if pick.variant in ("tma", "tma_ws", "tma_split", "tma_hybrid") \
            and "tma_split" in variants \
            and not pick.block_n & (pick.block_n - 1):
        variant = "tma_split"
    elif pick.variant == "tiled":
        variant = "tiled"
    else:
        return pick
    split = cdiv(k, max_range)
    while split <= MAX_TMA_SPLIT and not ranges_fit(k, split, pick.block_k):
        split += 1
    return derive(pick, variant, split, 1) if split <= MAX_TMA_SPLIT else pick


def _ws(pick: TileConfig, bucket: str, m: int = 0, n: int = 0, k: int = 0,
        sms: int = 0) -> TileConfig:
    """A 16-bit TMA pick over row-major A (B either way: ws_forms.LAYOUTS), or an fp8 one
    over a K-major B, in its warp-specialized form where it has one (kernels/ws_forms.py:
    x1.02-1.13 on the same tiles, sessions 49-51; a 128x128 tile one a program over a
    short K plain at 4 warps, session 55: `ws_forms.short_plain`), else the pick."""
    kind = ws_forms.kind_of(bucket)
    return (ws_forms.form(pick, kind, m, n, k, sms) or pick) if kind else pick


def fallback(fam: str, M: int, N: int, K: int, variants: tuple[str, ...], sms: int,
             smem: int, fma: bool, three_pass: bool = False, b_kmajor: bool = False
             ) -> TileConfig:
    """The heuristic's tile for a call the table has nothing near (kernels.configs)."""
    return heuristic(fam, M, N, K, tma=variants[0] == "tma", num_sms=sms, smem_limit=smem,
                     tiled="tiled" in variants, fma=fma, gemv=variants == ("gemv",),
                     three_pass=three_pass, b_kmajor=b_kmajor)


def b_room(p: Plan, N: int) -> int:
    """Zeros past N in the B the plan's kernels read (its copy, `pads_b`)."""
    return room(N) if p.pad_b else 0


def candidates(p: Plan, device: torch.device, M: int, N: int, K: int) -> tuple[TileConfig, ...]:
    """What a `choose` hook picks from: the plan's pick first, then the search space
    (the interpreter: the pick alone). Below wgmma's M, TMA tiles of 64 rows at most (IEEE
    fp32's thin split tiles have 16 and 32: `tma_split_space`)."""
    if p.source == "interpreter":
        return (p.pick,)
    _, smem, _ = _device_info(device)
    if p.variants == ("gemv",):
        space = gemv_space(M, N, K, num_sms(device), smem)
        return (p.pick, *(c for c in space if c != p.pick))
    splits = tuple(s for s in (2, 4, 8, 16) if K >= s * 256 and M * N <= 1024 * 1024)
    skinny = M <= 32
    tma_splits = tma_split_space(p.family, M, N, K, num_sms(device), smem, p.fma) \
        if "tma_split" in p.variants else ()
    space = search_space(p.family, p.variants, smem, skinny=skinny, split_ks=splits,
                         tma_splits=tma_splits, limit=29, fma=p.fma,
                         tma_rows=WGMMA_M if M < WGMMA_M else 256)
    return (p.pick, *(c for c in space if c != p.pick))


def prepare(p: Plan, a: torch.Tensor, b: torch.Tensor, cache: bool = False,
            memo: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The operands the plan's kernels read (copies where the plan says so); with
    `cache` (the plan's `cached`), a copy is reused while its source tensor is unchanged
    (COPIES; `memo`: the caller's last kept copy per kind, CopyCache.get), and is made on
    whole 128-byte lines (a copy per call: on 16 bytes)."""
    align = LINE if cache else 16

    def copy(x: torch.Tensor, kind: str, make) -> torch.Tensor:
        # a kept copy is a tensor of its own; a copy per call goes into a buffer kept for
        # the next call (kernels/scratch.py), `kind` its role
        return COPIES.get(x, kind, make, memo) if cache else make(x, kind)

    if p.copy_a == "pitch":
        a = copy(a, "a-pitch", pitched_copy)
    elif p.copy_a:
        a = copy(a, "a", lambda x, role=None: aligned_copy(x, align, role))
    # B's copy with zeros past N (`pads_b`) is its own kind: a copy of the same tensor
    # made for a plan without them must not stand in for it
    pad, zeros = (PAD_N, "-padded") if p.pad_b else (1, "")
    if p.copy_b == "pitch":
        b = copy(b, "b-pitch" + zeros, lambda x, role=None: pitched_copy(x, role, pad))
    elif b_kmajor_after(p.copy_b, b.stride()):
        b = copy(b, "b-kmajor" + zeros,
                 lambda x, role=None: aligned_copy(x.t(), align, role, (pad, 1)).t())
    elif p.copy_b:
        b = copy(b, "b" + zeros, lambda x, role=None: aligned_copy(x, align, role, (1, pad)))
    return a, b


def remember(key: tuple, resolved: object) -> None:
    """Keep a checked call (kernels.matmul.Resolved) for reuse (CALLS), at most _MAX_CALLS."""
    if len(CALLS) >= _MAX_CALLS:
        CALLS.clear()
    CALLS[key] = resolved


def reset() -> None:
    """Forget cached plans, tables and operand copies (after a tuning table was written)."""
    CALLS.clear()
    _plan.cache_clear()
    COPIES.clear()
    SCRATCH.clear()
    table.reload()
