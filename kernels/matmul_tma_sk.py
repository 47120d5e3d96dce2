"""The TMA stream-K-tail variant: whole waves of tiles as in the TMA variant, and the last,
partial wave's tiles shared out by K over every SM (data-parallel + stream-K).

Where the output tiles fill the SMs unevenly (1152 x 1856 x 1920: 135 tiles of 128x128 on
132 SMs), one program per tile runs the last 3 tiles as a second wave while 129 SMs idle:
two tiles' time for 1.02 tiles' work. Here each of the NUM_SMS programs first runs its
share of the DP_TILES = (tiles // NUM_SMS) x NUM_SMS tiles of the whole waves, exactly as
`matmul_tma._tma_kernel` does (grouped order, TMA loads, C stored through a descriptor).
The remaining tiles' K blocks are then laid end to end and cut into ranges of SK_ITERS
blocks, one range per program (`schedule`: never fewer than _MIN_ITERS blocks a range,
nor more than _MAX_PIECES ranges a tile). A range that covers a tile whole stores it; a
partial one stores its fp32 partial tile in a workspace slot and counts itself in on the
tile's counter (an atomic add, acquire-release, after a CTA barrier: the CUTLASS pattern).
The program that arrives last sums the tile's partials in range order (its own from
registers; fixed order, so the result does not depend on who came last), resets the
counter to 0 for the next launch and stores the tile. Nothing waits on another program,
so the interpreter's one-by-one programs run it too.

Session 12's stream-K (every tile shared out, partials summed by a second kernel) lost to
one program per tile on every shape measured: every tile paid partial traffic and the
fixup a launch. Here only the last wave's tiles do, and the fixup is in the kernel.

The counters are a persistent, self-resetting buffer per (device, stream): two launches
sharing one at once (two streams) would mix their counts, so each stream has its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from kernels.configs import TileConfig, cdiv
from kernels.launch import Launch
from kernels.matmul_tma import _descriptor, num_sms, operand_boxes, tma_form

_MIN_ITERS = 4     # K blocks a stream-K range takes at least: a pipeline fill each
_MAX_PIECES = 4    # ranges one tile is cut into at most: the last one reads the others


@triton.jit
def _coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """A tile's (row, column) in grouped order: GROUP_M tile-rows share B tiles in L2."""
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (tile_id // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _k_blocks(a_desc, b_desc, acc, off_m, off_n, k_lo, k_hi, BLOCK_K: tl.constexpr,
              A_T: tl.constexpr, B_T: tl.constexpr, INPUT_PRECISION: tl.constexpr,
              IS_FP32: tl.constexpr):
    """acc += A[off_m, k] @ B[k, off_n] over K blocks [k_lo, k_hi), TMA-loaded."""
    for ki in range(k_lo, k_hi):
        off_k = ki * BLOCK_K
        if A_T:
            a = a_desc.load([off_k, off_m]).T
        else:
            a = a_desc.load([off_m, off_k])
        if B_T:
            b = b_desc.load([off_n, off_k]).T
        else:
            b = b_desc.load([off_k, off_n])
        if IS_FP32:
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        else:
            acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _tma_sk_kernel(
    a_desc, b_desc, c_desc, c_ptr, ws_ptr, cnt_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, DP_TILES, SK_ITERS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, IS_FP32: tl.constexpr, HAS_SCALE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    scale = 1.0
    if HAS_SCALE:
        scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    # The whole waves: one program per tile, as the TMA variant.
    for tile_id in tl.range(pid, DP_TILES, NUM_SMS, flatten=True):
        pid_m, pid_n = _coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc = _k_blocks(a_desc, b_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N, 0, k_tiles,
                        BLOCK_K, A_T, B_T, INPUT_PRECISION, IS_FP32)
        if HAS_SCALE:
            acc = acc * scale
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))
    # The last wave's tiles: K blocks end to end, SK_ITERS of them per program.
    sk_total = (num_tiles - DP_TILES) * k_tiles
    it = pid * SK_ITERS
    end = min(it + SK_ITERS, sk_total)
    max_seg = tl.cdiv(SK_ITERS, k_tiles) + 1        # tiles one range can touch
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    while it < end:
        t = it // k_tiles
        k_lo = it - t * k_tiles
        k_hi = min(k_tiles, k_lo + end - it)
        pid_m, pid_n = _coords(DP_TILES + t, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc = _k_blocks(a_desc, b_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N, k_lo, k_hi,
                        BLOCK_K, A_T, B_T, INPUT_PRECISION, IS_FP32)
        done = k_lo == 0 and k_hi == k_tiles
        if not done:
            first = (t * k_tiles) // SK_ITERS            # the programs sharing tile t
            last = ((t + 1) * k_tiles - 1) // SK_ITERS
            slot = pid * max_seg + t - (pid * SK_ITERS) // k_tiles
            tl.store(ws_ptr + slot * (BLOCK_M * BLOCK_N) + offs, acc, cache_modifier=".cg")
            tl.debug_barrier()
            arrived = tl.atomic_add(cnt_ptr + t, 1, sem="acq_rel", scope="gpu")
            tl.debug_barrier()
            if arrived == last - first:                  # the last one: sum in range order
                total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                for q in range(first, last + 1):
                    if q == pid:
                        part = acc
                    else:
                        qs = q * max_seg + t - (q * SK_ITERS) // k_tiles
                        part = tl.load(ws_ptr + qs * (BLOCK_M * BLOCK_N) + offs,
                                       cache_modifier=".cg")
                    total += part
                acc = total
                tl.atomic_xchg(cnt_ptr + t, 0, sem="relaxed", scope="gpu")
                done = True
        if done:
            if HAS_SCALE:
                acc = acc * scale
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))
        it += k_hi - k_lo


KERNELS = (_tma_sk_kernel,)


@dataclass(frozen=True)
class Schedule:
    """How a launch shares out the tiles: the whole waves' tiles (run one program each),
    the K blocks a stream-K range takes, and the sizes these imply."""

    dp_tiles: int
    sk_iters: int
    sk_tiles: int
    sk_programs: int
    max_seg: int          # tiles one range can touch: workspace slots per program


def schedule(config: TileConfig, M: int, N: int, K: int, sms: int) -> Schedule:
    """Whole waves one program a tile; the rest's K blocks in ranges of at least
    _MIN_ITERS blocks, a tile in at most _MAX_PIECES ranges, over at most `sms` programs.
    With no tiles left over (tiles a multiple of the SMs) it is the TMA variant's launch."""
    tiles = cdiv(M, config.block_m) * cdiv(N, config.block_n)
    k_tiles = max(cdiv(K, config.block_k), 1)
    dp = tiles // sms * sms
    sk_tiles = tiles - dp
    total = sk_tiles * k_tiles
    iters = max(cdiv(total, sms), _MIN_ITERS, cdiv(k_tiles, _MAX_PIECES), 1)
    return Schedule(dp, iters, sk_tiles, cdiv(total, iters), cdiv(iters, k_tiles) + 1)


@dataclass(frozen=True)
class Recipe:
    """The variant's launch for operands of given shapes and layouts; `bind` adds a call's
    descriptors, a workspace for the partial tiles (allocated per call) and the stream's
    counters."""

    run: Launch
    a_t: bool
    b_t: bool
    blocks: tuple[list[int], list[int], list[int]]   # A's, B's and C's descriptor boxes
    plan: Schedule
    tile: int                                        # BLOCK_M x BLOCK_N
    counters: dict = field(default_factory=dict, compare=False)  # (device, stream) -> int32

    def bind(self, a, b, out, sa, sb) -> Callable[[], None]:
        ab, bb, cb = self.blocks
        p = self.plan
        ws = torch.empty(max(p.sk_programs * p.max_seg * self.tile, 1), dtype=torch.float32,
                         device=a.device)
        cnt = self._counters(a.device)
        args = (_descriptor(a, self.a_t, ab), _descriptor(b, self.b_t, bb),
                _descriptor(out, False, cb), out, ws, cnt, sa, sb)
        run = self.run
        return lambda: run(*args)

    def _counters(self, device: torch.device) -> torch.Tensor:
        """The stream's tile counters: zeroed once, left at zero by every launch."""
        key = (device, torch.cuda.current_stream(device).cuda_stream
               if device.type == "cuda" else 0)
        cnt = self.counters.get(key)
        if cnt is None:
            cnt = self.counters[key] = torch.zeros(max(self.plan.sk_tiles, 1),
                                                   dtype=torch.int32, device=device)
        return cnt


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool) -> Recipe | None:
    """The variant's launch for tensors like these, or None when a, b or `out` cannot be
    described (matmul_tma.tma_form: the TMA variant stages such a C) or K is 0."""
    a_t, b_t = tma_form(a), tma_form(b)
    M, K = a.shape
    N = b.shape[1]
    if a_t is None or b_t is None or tma_form(out) is not False or K == 0:
        return None
    sms = num_sms(a.device)
    plan = schedule(config, M, N, K, sms)
    run = _launch(config, M, N, K, a_t, b_t, plan.dp_tiles, plan.sk_iters, a.dtype, sms,
                  input_precision, is_fp32, has_scale)
    blocks = (*operand_boxes(config, a_t, b_t), [config.block_m, config.block_n])
    return Recipe(run, a_t, b_t, blocks, plan, config.block_m * config.block_n)


@functools.lru_cache(maxsize=1024)
def _launch(config: TileConfig, M: int, N: int, K: int, a_t: bool, b_t: bool, dp: int,
            iters: int, dtype: torch.dtype, sms: int, input_precision: str, is_fp32: bool,
            has_scale: bool) -> Launch:
    """The kernel's launch but for its tensors, one per operand dtype (a descriptor adds
    nothing to a Launch's signature: kernels/matmul_tma_split._launch)."""
    kw = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
              GROUP_M=config.group_m, NUM_SMS=sms, A_T=a_t, B_T=b_t,
              INPUT_PRECISION=input_precision, IS_FP32=is_fp32, HAS_SCALE=has_scale,
              num_stages=config.num_stages, num_warps=config.num_warps)
    return Launch(_tma_sk_kernel, (sms,), (M, N, K, dp, iters), kw)


def launcher(config: TileConfig, a, b, out, sa, sb, **flags) -> Callable[[], None] | None:
    """The variant's launch for these tensors, prepared, or None (`recipe`)."""
    r = recipe(config, a, b, out, **flags)
    return None if r is None else r.bind(a, b, out, sa, sb)
