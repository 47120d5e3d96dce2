"""The TMA stream-K variant: the persistent TMA GEMM with its last waves' work shared out
evenly by K blocks, for shapes whose tiles fill the SMs unevenly.

A shape of T output tiles on P SMs takes ceil(T / P) waves of the persistent kernel
(kernels/matmul_tma.py); 144 tiles on the H200's 132 SMs take two, the second 9% full.
Stream-K (Osama et al., PPoPP 2023, "data-parallel + two-tile stream-K") keeps the first
floor(T / P) - 1 waves whole (data-parallel: a program a tile, as the TMA kernel) and
splits the rest, one to two waves' tiles, into their K blocks, handing each of the P
programs an equal contiguous range of them (tile-major: a range covers the end of one
tile, whole tiles, the start of another). A tile whose K blocks one range holds whole is
stored at once. A tile split across ranges: each of its programs stores its fp32 partial
in its own workspace slot (slot 0: the segment its range starts with, 1: the one it ends
with; no other segment can be partial), then counts itself in on the tile's lock
(release, acquire: an atomic add). The program that counts last adds every partial, in
program order (the result does not depend on which came last), and stores the tile by
pointer stores, FIX_ROWS rows at a time (a whole tile's sum beside the accumulator would
double the registers the whole kernel is compiled for); it sets the lock back to 0 for
the next call (`locks` come zeroed from kernels/scratch.py and are left so). Nothing
waits on another program: no spin, so no deadlock, whatever runs when.

Not offered by the dispatcher or the table: a tile runs it only when named (kernels.
matmul(config=...), scripts/device/tiles.py). Measured on the H200 (session 32, call 5,
bf16 and fp8, 7 shapes, the same tile as `tma`): 0.47-0.94 of the TMA kernel's speed,
0.66-0.85 on 1408 x 1536 x 2048, whose 132 tiles of 128x128 fill whole waves (nothing
shared: the data-parallel loop alone, compiled beside the stream-K code, loses 15-34%).
Calls 3 and 4's forms (a `while` over segments; one flat loop with the fix-up inside)
ran 0.35-0.91. docs/PERF.md (session 32) has the tables and what to try next.

Both phases' K loops stay the kernel's own (for the pipeliner); their body is the TMA
kernel's `jit_parts.k_step` (A's tile loaded first), and `_tile_origin` its grouped tile
order (`jit_parts.grouped_tile`).

Operands and C as in the TMA variant: host-built descriptors, zero-filled past M, N and
K (no masks, no tails), column-major operands described transposed; C must be
describable or is staged by the launcher (matmul_tma.Recipe's rules).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from kernels.jit_parts import dot_acc, grouped_tile, k_step, load_oriented, wide
from kernels.launch import Bound, Launch
from kernels.matmul_tma import (
    _descriptor,
    _stage,
    bound,
    num_sms,
    operand_boxes,
    tma_form,
    tma_operands,
    unstage,
    unstager,
)
from kernels.relayout import LINE, pitch
from kernels.scratch import SCRATCH
from kernels.tile import TileConfig, cdiv, wide_offsets


@triton.jit
def _tile_origin(tile_id, num_pid_m, num_pid_n, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tile_id, GROUP_M * num_pid_n, num_pid_m, GROUP_M)
    return pid_m * BLOCK_M, pid_n * BLOCK_N


@triton.jit
def _owner(it, base, extra):
    """The program whose range holds stream-K block `it` (ranges of base + 1 blocks for
    the first `extra` programs, base after)."""
    long_part = extra * (base + 1)
    return tl.where(it < long_part, it // (base + 1),
                    extra + (it - long_part) // tl.maximum(base, 1))


@triton.jit
def _streamk_kernel(
    a_desc, b_desc, c_desc, c_ptr, ws_ptr, lock_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, scm, scn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, FIX_M: tl.constexpr,
    MAX_PARTS: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
    I64: tl.constexpr,
):
    scm = wide(scm, I64)   # C stored by pointer past 2**31 elements
    scn = wide(scn, I64)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    dp_tiles = num_tiles
    if num_tiles % NUM_SMS != 0:
        dp_tiles = tl.maximum(num_tiles // NUM_SMS - 1, 0) * NUM_SMS
    scale = 1.0
    if HAS_SCALE:
        scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    # data-parallel waves: the TMA kernel's loop
    for tile_id in tl.range(pid, dp_tiles, NUM_SMS, flatten=True):
        off_m, off_n = _tile_origin(tile_id, num_pid_m, num_pid_n, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            acc = k_step(a_desc, b_desc, acc, off_m, off_n, ki * BLOCK_K, A_T, B_T,
                         INPUT_PRECISION, IS_FP32, False)
        if HAS_SCALE:
            acc = acc * scale
        c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))
    # stream-K: the other tiles' K blocks in equal contiguous ranges
    sk_iters = (num_tiles - dp_tiles) * k_tiles
    base = sk_iters // NUM_SMS
    extra = sk_iters % NUM_SMS
    start = pid * base + tl.minimum(pid, extra)
    end = start + base + (pid < extra).to(tl.int32)
    tile_elems: tl.constexpr = BLOCK_M * BLOCK_N
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    # a range spans three tiles at most (a tile's end, a whole tile, a tile's start: the
    # shared tiles are under twice the programs): a loop of three passes whose bounds
    # are constants, each pass's K loop Triton's to pipeline (a runtime `while` around
    # it ran unpipelined, sessions 29 and 32)
    t0 = start // k_tiles
    for seg in tl.range(0, 3):
        t = t0 + seg
        tile_start = t * k_tiles
        k0 = tl.maximum(start - tile_start, 0)
        k1 = tl.minimum(end - tile_start, k_tiles)
        off_m, off_n = _tile_origin(dp_tiles + t, num_pid_m, num_pid_n, BLOCK_M, BLOCK_N,
                                    GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k0, k1):
            acc = k_step(a_desc, b_desc, acc, off_m, off_n, ki * BLOCK_K, A_T, B_T,
                         INPUT_PRECISION, IS_FP32, False)
        if (k0 == 0) & (k1 == k_tiles):   # the whole tile in this range
            if HAS_SCALE:
                acc = acc * scale
            c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))
        elif k0 < k1:
            slot = tl.minimum(seg, 1)   # 0: the range's first segment
            tl.store(ws_ptr + (pid * 2 + slot) * tile_elems + offs, acc, cache_modifier=".cg")
            tl.debug_barrier()   # every thread's partial before the count
            first = _owner(tile_start, base, extra)
            last = _owner(tile_start + k_tiles - 1, base, extra)
            arrived = tl.atomic_add(lock_ptr + t, 1, sem="acq_rel")
            if arrived == last - first:   # the last of its programs to count in
                # the partials summed FIX_M rows at a time, in program order, into C by
                # pointer stores: a whole tile's sum beside the accumulator would double
                # the registers the kernel is compiled for; MAX_PARTS programs a tile at
                # most (`recipe` checks), unrolled: no loop in the pass's epilogue
                cols = tl.arange(0, BLOCK_N)
                for r0 in tl.static_range(0, BLOCK_M, FIX_M):
                    rows = r0 + tl.arange(0, FIX_M)
                    part = tl.zeros((FIX_M, BLOCK_N), dtype=tl.float32)
                    for j in tl.static_range(0, MAX_PARTS):
                        q = first + j
                        q_start = q * base + tl.minimum(q, extra)
                        q_slot = (q_start < tile_start).to(tl.int32)
                        live = tl.where(q <= last, FIX_M, 0)   # past the last: none
                        part += tl.load(ws_ptr + (q * 2 + q_slot) * tile_elems
                                        + rows[:, None] * BLOCK_N + cols[None, :],
                                        mask=((rows[:, None] - r0) < live)
                                        & (cols[None, :] < BLOCK_N),
                                        other=0.0, cache_modifier=".cg")
                    if HAS_SCALE:
                        part = part * scale
                    cm = off_m + rows
                    cn = off_n + cols
                    tl.store(c_ptr + cm[:, None] * scm + cn[None, :] * scn,
                             part.to(c_ptr.dtype.element_ty),
                             mask=(cm[:, None] < M) & (cn[None, :] < N))
                tl.atomic_xchg(lock_ptr + t, 0)


KERNELS = (_streamk_kernel, _tile_origin, _owner, k_step, load_oriented, dot_acc,
           grouped_tile, wide)
FIX_ROWS = 32   # rows of a split tile's partials summed at a time (the kernel's FIX_M)
MAX_PARTS = 4   # programs sharing a tile at most (the kernel's fix-up is unrolled for it)
# host parts that decide a constexpr the entry's tile does not hold: in the source hash too
COMPILED_IN = ("FIX_ROWS", "MAX_PARTS", "wide_offsets")   # (kernels/table_file.variant_hash)


def stream_tiles(tiles: int, sms: int) -> int:
    """How many of a shape's output tiles the kernel shares out by K blocks: none where
    they fill whole waves of `sms` programs, else the last partial wave and the full one
    before it (all of them, below two)."""
    if tiles % sms == 0:
        return 0
    return tiles - max(tiles // sms - 1, 0) * sms


def parts(tiles: int, k_blocks: int, sms: int) -> int:
    """The most programs any shared tile's K blocks are spread over (0: none shared):
    a range of `base` blocks or one more meets ceil(k_blocks / base) + 1 tiles' worth."""
    shared = stream_tiles(tiles, sms)
    if not shared:
        return 0
    base = shared * k_blocks // sms
    return k_blocks + 1 if base == 0 else min(cdiv(k_blocks, base) + 1, sms)


@dataclass(frozen=True)
class Recipe:
    """The variant's launch for operands of given shapes, layouts and alignment: the
    kernel's, over kept partials (`workspace`: two tiles a program) and locks, and C's
    staging copy where `out` is not describable (matmul_tma's rules)."""

    run: Launch
    a_t: bool
    b_t: bool
    blocks: tuple[list[int], list[int], list[int]]
    workspace: tuple[int, int]
    locks: int
    staged: bool
    unstage: Launch | None = None
    repeats: Bound = field(default_factory=Bound, compare=False, repr=False)

    def launch(self, a, b, out, sa, sb) -> None:
        c = _stage(out, "c") if self.staged else out
        ws = SCRATCH.empty(self.workspace, torch.float32, a.device, "sk-ws")
        locks = SCRATCH.zeros((self.locks,), torch.int32, a.device, "sk-locks")
        self.repeats.run(
            (a.data_ptr(), b.data_ptr(), c.data_ptr(), ws.data_ptr(), locks.data_ptr(),
             sa.data_ptr(), sb.data_ptr()),
            self.run, lambda: self._args(a, b, c, ws, locks, sa, sb))
        if c is not out:
            unstage(self.unstage, c, out)

    def _args(self, a, b, c, ws, locks, sa, sb) -> tuple:
        ab, bb, cb = self.blocks
        return (_descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, bb),
                _descriptor(c, False, cb), c, ws, locks, sa, sb)

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        stage = _stage(out) if self.staged else None
        c = out if stage is None else stage
        ws = torch.empty(self.workspace, dtype=torch.float32, device=a.device)
        locks = torch.zeros((self.locks,), dtype=torch.int32, device=a.device)
        return bound(self.run, self._args(a, b, c, ws, locks, sa, sb), stage, out,
                     self.unstage)


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool) -> Recipe | None:
    """The variant's launch for tensors like these, or None when a or b cannot be
    described (matmul_tma.tma_operands). C through a descriptor, into `out` or a staged
    buffer copied into it."""
    got = tma_operands(a, b)
    if got is None:
        return None
    a_t, b_t, M, N, K = got
    sms = num_sms(a.device)
    tiles = cdiv(M, config.block_m) * cdiv(N, config.block_n)
    if parts(tiles, cdiv(K, config.block_k), sms) > MAX_PARTS:
        raise ValueError(f"stream-K {config.block_m}x{config.block_n}x{config.block_k} on "
                         f"{M} x {N} x {K}: {tiles} tiles on {sms} SMs would spread a tile "
                         f"over more than {MAX_PARTS} programs (take tiles at least half "
                         "as many as the SMs, or split K: tma_split)")
    staged = tma_form(out) is not False
    sc = (pitch(N, out.element_size(), LINE), 1) if staged else out.stride()
    run = _launch(config, M, N, K, a_t, b_t, sc, a.dtype, sms, input_precision, is_fp32,
                  has_scale)
    bm, bn = config.block_m, config.block_n
    return Recipe(run, a_t, b_t, (*operand_boxes(config, a_t, b_t), [bm, bn]),
                  (sms * 2, bm * bn), max(stream_tiles(tiles, sms), 1), staged,
                  unstager(out, sc[0]) if staged else None)


@functools.lru_cache(maxsize=1024)
def _launch(config: TileConfig, M: int, N: int, K: int, a_t: bool, b_t: bool, sc: tuple,
            dtype: torch.dtype, sms: int, input_precision: str, is_fp32: bool,
            has_scale: bool) -> Launch:
    """The kernel's launch but for its tensors: one program per SM."""
    kw = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
              GROUP_M=config.group_m, NUM_SMS=sms, FIX_M=min(FIX_ROWS, config.block_m),
              MAX_PARTS=MAX_PARTS,
              A_T=a_t, B_T=b_t,
              INPUT_PRECISION=input_precision, IS_FP32=is_fp32, HAS_SCALE=has_scale,
              I64=wide_offsets(((M, N), sc)),
              num_stages=config.num_stages, num_warps=config.num_warps)
    return Launch(_streamk_kernel, (sms,), (M, N, K, *sc), kw)


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launch for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
