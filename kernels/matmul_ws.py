"""A warp-specialized persistent GEMM for Hopper, written in Gluon (Triton's explicit
dialect): one warp loads A and B by TMA into a ring of shared-memory stages, the other
warps (two warpgroups, 64 rows of the tile each) run wgmma on them and store C by TMA.

Why: cuBLAS runs the H200's mid-size 16-bit shapes on warp-specialized kernels (384
threads: a producer warpgroup and two consumer warpgroups; session 49 run 1, the
`nvjet_sm90_tst_*` kernels) and on the same tile as ours ran 2160 x 952 x 3784 bf16 in
25.4 us where `tma_wide` 128x144 ran 32.1 (0.43 against 0.54 us a K step). Triton's
own pipeliner does not specialize this loop on sm_90 (session 35: one partition in the
TTGIR) and syncs the whole CTA around each stage's loads; here the stages are handed
over by mbarriers alone: `ready` (the loads landed, counted in bytes) and `empty` (both
warpgroups' wgmma that read the stage are done). The load warp runs ahead across tiles,
so the next tile's first stages load while the consumers store C.

16-bit, and fp8 (its B K-major, as the dispatcher copies it for fp8; C in bf16 times the
two scales; session 50). kernels.matmul runs it as the `tma_ws` variant (`recipe`): the
dispatcher gives a 16-bit rr or rc 128-row pick, or an fp8 128-row wide one, that form
(kernels/ws_forms.py), and a caller may name a `tma_ws` tile; `matmul_ws` and the
`mm_ws_*` providers (the kernels.matmul contract, for `gemmgate run --providers`) name
one. A: row-major on 16 bytes; B: row-major, or
column-major (its K-major stages permuted for wgmma); other operands run the tile's `tma`
form. Tails in M, N and K are the TMA unit's (loads zero-filled, stores clipped).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

# kernels.matmul imports this module: the entry point is read from its module at call
# time (a function-level import would bind whatever package is `kernels` then: in an A/B
# reference commit's package, this tree's)
import kernels.matmul as _entry
from kernels import dispatch
from kernels.launch import Bound, Launch
from kernels.matmul_tma import StagedC, num_sms, tma_form, unstager
from kernels.past_n import b_extent
from kernels.relayout import LINE, pitch
from kernels.tile import TileConfig, cdiv, replace
from kernels.ws_forms import (
    BLOCK_K,
    BLOCK_M,
    WARPS,
    _most_stages,  # noqa: F401 - `stages` reads it (COMPILED_IN: the source hash)
    fits,
    max_regs,
    parts,
    stages,
    stages_for,
    warps,
)

LOAD_REGS = 40     # the load warp's registers (setmaxnreg)
_DTYPES = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16,
           torch.float8_e4m3fn: gl.float8e4nv}   # fp8: B K-major, scales, C in bf16
_MODES = {torch.bfloat16: (None, "bf16"), torch.float16: (None, "fp16")}   # precision=
# TMA's copies under both names (triton 3.6: async_copy_*; later: async_load, async_store)
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
_LOAD_REGS = gl.constexpr(LOAD_REGS)


@gluon.jit
def _tile(t, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Tile t's (pid_m, pid_n), GROUP_M rows of tiles at a time (as kernels/matmul_tma)."""
    in_group = GROUP_M * num_pid_n
    first_m = (t // in_group) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    return first_m + (t % in_group) % rows, (t % in_group) // rows


@gluon.jit
def _load_b(desc, k, off_n, bar, buf, B_KMAJOR: gl.constexpr):
    if B_KMAJOR:
        _tma_load(desc, [off_n, k], bar, buf)
    else:
        _tma_load(desc, [k, off_n], bar, buf)


@gluon.jit
def _loads(a_desc, b_desc, b1_desc, a_bufs, b_bufs, b1_bufs, ready, empty, M, N, K,
           BN: gl.constexpr, BN1: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
           B_KMAJOR: gl.constexpr, BM: gl.constexpr, BK: gl.constexpr):
    """The load warp: every K block of this program's tiles, into the next free stage
    (a wide tile's B in two boxes, BN and BN1 columns)."""
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN + BN1)
    k_steps = gl.cdiv(K, BK)
    nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes + \
        (b1_desc.block_type.nbytes if BN1 > 0 else 0)
    i = 0
    for t in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = _tile(t, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * (BN + BN1)
        for ks in range(k_steps):
            s = i % STAGES
            mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)
            bar = ready.index(s)
            mbarrier.expect(bar, nbytes)
            _tma_load(a_desc, [off_m, ks * BK], bar, a_bufs.index(s))
            _load_b(b_desc, ks * BK, off_n, bar, b_bufs.index(s), B_KMAJOR)
            if BN1 > 0:
                _load_b(b1_desc, ks * BK, off_n + BN, bar, b1_bufs.index(s), B_KMAJOR)
            i += 1


@gluon.jit
def _store_c(acc, c_desc, c_smem, off_m, off_n):
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    _tma_store(c_desc, [off_m, off_n], c_smem)


@gluon.jit
def _mmas(a_bufs, b_bufs, b1_bufs, ready, empty, c_desc, c1_desc, c_smem, c1_smem, scale_a,
          scale_b, M, N, K, BN: gl.constexpr, BN1: gl.constexpr, GROUP_M: gl.constexpr,
          STAGES: gl.constexpr, B_KMAJOR: gl.constexpr, BM: gl.constexpr, BK: gl.constexpr,
          HAS_SCALE: gl.constexpr, INSTR_K: gl.constexpr, num_warps: gl.constexpr):
    """The consumers: wgmma over each stage as it lands (one group in flight), the stage
    handed back once the group that read it is done; C by TMA, its store left in flight
    until the next tile's C is ready to go out. A wide tile keeps two accumulators."""
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BN, INSTR_K])
    layout1: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1],
        instr_shape=[16, max(BN1, 8), INSTR_K])
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN + BN1)
    k_steps = gl.cdiv(K, BK)
    i = 0
    for t in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = _tile(t, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=layout)
        acc1 = gl.zeros((BM, max(BN1, 8)), dtype=gl.float32, layout=layout1)
        for ks in range(k_steps):
            s = i % STAGES
            mbarrier.wait(ready.index(s), (i // STAGES) & 1)
            a = a_bufs.index(s)
            b = b_bufs.index(s)
            if B_KMAJOR:
                b = b.permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            if BN1 > 0:
                b1 = b1_bufs.index(s)
                if B_KMAJOR:
                    b1 = b1.permute((1, 0))
                acc1 = warpgroup_mma(a, b1, acc1, is_async=True)
                acc, acc1, a, b, b1 = warpgroup_mma_wait(num_outstanding=2,
                                                         deps=(acc, acc1, a, b, b1))
            else:
                acc, a, b = warpgroup_mma_wait(num_outstanding=1, deps=(acc, a, b))
            # the groups before this step's are done: their stage goes back to the load warp
            mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES), pred=ks > 0)
            i += 1
        acc, acc1 = warpgroup_mma_wait(num_outstanding=0, deps=(acc, acc1))
        mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES))
        if HAS_SCALE:   # fp8: C = (A @ B) * scale_a * scale_b
            scale = gl.load(scale_a) * gl.load(scale_b)
            acc = acc * scale
            acc1 = acc1 * scale
        off_m = pid_m * BM
        off_n = pid_n * (BN + BN1)
        tma.store_wait(pendings=0)   # the previous tile's C has left c_smem
        _store_c(acc, c_desc, c_smem, off_m, off_n)
        if BN1 > 0:
            _store_c(acc1, c1_desc, c1_smem, off_m, off_n + BN)
    tma.store_wait(pendings=0)


@gluon.jit
def _ws_kernel(a_desc, b_desc, b1_desc, c_desc, c1_desc, scale_a, scale_b, M, N, K,
               BN: gl.constexpr, BN1: gl.constexpr, GROUP_M: gl.constexpr,
               STAGES: gl.constexpr, B_KMAJOR: gl.constexpr, HAS_SCALE: gl.constexpr,
               INSTR_K: gl.constexpr, num_warps: gl.constexpr):
    """fp8 (HAS_SCALE): A and B in e4m3, B K-major (wgmma takes 8-bit B no other way),
    INSTR_K 32; C in c_desc's dtype (bf16), times the two scales."""
    dtype: gl.constexpr = a_desc.dtype
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    if BN1 > 0:
        b1_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b1_desc.block_type.shape,
                                            b1_desc.layout)
        c1_smem = gl.allocate_shared_memory(c1_desc.dtype, c1_desc.block_type.shape,
                                            c1_desc.layout)
    else:   # no second part: its arguments are the first part's, never read
        b1_bufs = b_bufs
        c1_smem = c_smem
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (_mmas, (a_bufs, b_bufs, b1_bufs, ready, empty, c_desc, c1_desc, c_smem, c1_smem,
                 scale_a, scale_b, M, N, K, BN, BN1, GROUP_M, STAGES, B_KMAJOR, BM, BK,
                 HAS_SCALE, INSTR_K, num_warps)),
        (_loads, (a_desc, b_desc, b1_desc, a_bufs, b_bufs, b1_bufs, ready, empty, M, N, K,
                  BN, BN1, GROUP_M, STAGES, B_KMAJOR, BM, BK)),
    ], [1], [_LOAD_REGS])


KERNELS = (_ws_kernel, _mmas, _loads, _load_b, _store_c, _tile)   # the source hashed
# host parts that decide what the launch compiles beyond the entry's tile: the consumer
# warps and the register budget (num_warps, maxnreg), the B and C boxes, the stages a tile
# runs at: in the source hash too (kernels/table_file.variant_hash)
COMPILED_IN = ("warps", "max_regs", "parts", "stages", "_most_stages", "stages_for")


@dataclass(frozen=True)
class Recipe(StagedC):
    """The warp-specialized kernel's launch for operands of given shapes and layouts:
    all but the descriptors, which `bind` builds from a call's tensors (kernels.matmul's
    recipe contract, as matmul_tma.Recipe: a call repeating its tensors' addresses takes
    its bound launch, kernels/launch.py)."""

    run: Launch
    b_kmajor: bool
    parts: tuple[int, int]            # B's and C's boxes: the power of two, the rest
    block_mk: tuple[int, int]         # the tile's rows and BLOCK_K
    b_cols: int                       # B's N as its descriptors read it (`b_extent`)
    staged: bool                      # C through an aligned buffer, then copied to out
    unstage: Launch | None = None     # that copy's launch (matmul_tma.unstager)
    repeats: Bound = field(default_factory=Bound, compare=False, repr=False)

    def _descs(self, a, b, c) -> tuple:
        first, rest = self.parts
        bm, bk = self.block_mk
        dt, dc = _DTYPES[a.dtype], _DTYPES[c.dtype]
        cols = self.b_cols or b.shape[1]

        def b_box(width: int) -> TensorDescriptor:
            if self.b_kmajor:   # B.T's rows, N of them (its room past N included)
                return _desc(b.t(), [width, bk], dt, rows=cols)
            return _desc(b, [bk, width], dt, cols=cols)

        b_desc, c_desc = b_box(first), _desc(c, [bm, first], dc)
        b1_desc, c1_desc = (b_box(rest), _desc(c, [bm, rest], dc)) if rest \
            else (b_desc, c_desc)
        return _desc(a, [bm, bk], dt), b_desc, b1_desc, c_desc, c1_desc

    def _args(self, a, b, c, sa, sb) -> tuple:
        """The kernel's leading arguments (`matmul_tma.StagedC`)."""
        return (*self._descs(a, b, c), sa, sb)


@functools.lru_cache(maxsize=256)
def _launch(first: int, rest: int, group_m: int, stages: int, b_kmajor: bool, M: int, N: int,
            K: int, programs: int, dtype: torch.dtype, block_m: int = BLOCK_M,
            occupancy: int = 1) -> Launch:
    """The kernel's launch but for its descriptors, once per shape, tile, B layout and
    operand dtype (a Launch keeps one compiled kernel per descriptor signature, and a
    descriptor's dtype is not in it: kernels/launch.py)."""
    return Launch(_ws_kernel, (programs,), (M, N, K),
                  dict(BN=first, BN1=rest, GROUP_M=group_m, STAGES=stages, B_KMAJOR=b_kmajor,
                       HAS_SCALE=dtype.itemsize == 1, INSTR_K=32 // dtype.itemsize,
                       num_warps=warps(block_m), maxnreg=max_regs(block_m, occupancy)))


_DEVICES = ("cuda", "meta")   # where `recipe` makes a launch (meta: planned, never run)


def recipe(config: TileConfig, a, b, out, *, input_precision: str, is_fp32: bool,
           has_scale: bool, b_room: int = 0) -> Recipe | None:
    """The launch for tensors like these, or None where this kernel cannot take them (not
    on a CUDA device, a tile it does not run (`fits`), an A not row-major on 16 bytes, a B a
    descriptor takes neither way): kernels.matmul then runs the tile's `tma` form.
    `b_room`: zeros past B's N in its copy, read to whole tiles (past_n.b_extent). Meta
    tensors plan as CUDA ones (scripts/call_audit.py compiles what a call would launch).
    """
    elem = a.element_size()
    if not (a.shape[0] and a.shape[1] and b.shape[1]):   # a descriptor's box needs every
        return None   # extent positive (`tma_operands`; a `config=` of K = 0: a review)
    if a.device.type in _DEVICES and dispatch.device_capability(a.device)[0] != 9:
        return None   # wgmma and setmaxnreg are Hopper's: a `config=` tma_ws tile on an
        # sm_80 or sm_100 GPU aborted the process in LLVM (a review); the dispatcher's own
        # picks were gated so already (decide: cap[0] == 9). Meta: the chip stood in.
    if a.device.type not in _DEVICES or a.dtype not in _DTYPES or is_fp32 \
            or has_scale != (elem == 1) \
            or not fits(config, elem) or tma_form(a) is not False:   # (Triton's interpreter
        return None                                       # runs no Gluon: the tma form)
    b_t = tma_form(b)
    if b_t is None or (elem == 1 and not b_t):   # fp8's B K-major only
        return None
    staged = tma_form(out) is not False
    first, rest = parts(config)
    bm, bk, occ = config.block_m, config.block_k, config.occupancy
    (M, K), N = a.shape, b.shape[1]
    tiles = cdiv(M, bm) * cdiv(N, config.block_n)
    run = _launch(first, rest, config.group_m, stages(config, elem), b_t, M, N, K,
                  min(num_sms(a.device) * occ, tiles), a.dtype, bm, occ)
    return Recipe(run, b_t, (first, rest), (bm, bk), b_extent(config, N, b_room), staged,
                  unstager(out, pitch(N, out.element_size(), LINE)) if staged else None)


def fallback(config: TileConfig) -> TileConfig:
    """The `tma` or `tma_wide` tile a `tma_ws` tile runs as where `recipe` says no."""
    _, rest = parts(config)   # a second box: a wide tile
    return replace(config, variant="tma_wide" if rest else "tma")


def _desc(t: torch.Tensor, block: list[int], dt, rows: int = 0, cols: int = 0
          ) -> TensorDescriptor:
    """A Gluon host descriptor of t's rows (`rows`, `cols`: its extent read past its own,
    where its memory holds zeros there)."""
    (r, c), (sr, sc) = t.shape, t.stride()
    return TensorDescriptor(t, [rows or r, cols or c], [sr, sc], block, _layout(tuple(block), dt))


@functools.lru_cache(maxsize=64)
def _layout(shape: tuple[int, int], dtype):
    return gl.NVMMASharedLayout.get_default_for(list(shape), dtype)


def matmul_ws(a: torch.Tensor, b: torch.Tensor, *, precision=None, out=None, scale_a=None,
              scale_b=None, block_n: int = 128, group_m: int = 8,
              stages: int | None = None, cache_copies: bool = False,
              block_n1: int = 0) -> torch.Tensor:
    """C = A @ B for bf16 or fp16 operands on a Hopper GPU on a `tma_ws` tile 128 rows
    tall and block_n + block_n1 columns (`block_n1` > 0: a wide tile, a power of two and a
    smaller one, as `tma_wide`'s), run by kernels.matmul: its copies (`cache_copies`: kept,
    on whole 128-byte lines), its staged C, its `tma` form for operands this kernel does not
    take."""
    if a.dtype not in _MODES or b.dtype != a.dtype:
        raise TypeError(f"matmul_ws takes bf16 or fp16 operands, got {a.dtype}, {b.dtype}")
    if precision not in _MODES[a.dtype]:
        raise ValueError(f"matmul_ws runs {a.dtype} only, not precision {precision!r}")
    if scale_a is not None or scale_b is not None:
        raise ValueError("matmul_ws takes no scales")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul_ws needs (M, K) @ (K, N), got {tuple(a.shape)} @ "
                         f"{tuple(b.shape)}")
    tile = TileConfig(BLOCK_M, block_n + block_n1, BLOCK_K, group_m,
                      stages or stages_for(block_n, block_n1=block_n1), WARPS, "tma_ws")
    return _entry.matmul(a, b, precision=precision, out=out, config=tile, cache_copies=cache_copies)


def mm_ws_128x128(a, b, *, cache_copies=False, **kw):
    """`matmul_ws` on 128x128 tiles (a `--providers` entry: the harness asks it to keep
    its copies, as it asks kernels.matmul)."""
    return matmul_ws(a, b, block_n=128, cache_copies=cache_copies, **kw)


def mm_ws_128x144(a, b, *, cache_copies=False, **kw):
    """`matmul_ws` on 128x(128 + 16) tiles (a `--providers` entry)."""
    return matmul_ws(a, b, block_n=128, block_n1=16, cache_copies=cache_copies, **kw)


def mm_ws_128x192(a, b, *, cache_copies=False, **kw):
    """`matmul_ws` on 128x(128 + 64) tiles (a `--providers` entry)."""
    return matmul_ws(a, b, block_n=128, block_n1=64, cache_copies=cache_copies, **kw)


def mm_ws_128x256(a, b, *, cache_copies=False, **kw):
    """`matmul_ws` on 128x256 tiles (a `--providers` entry: the harness asks it to keep
    its copies, as it asks kernels.matmul)."""
    return matmul_ws(a, b, block_n=256, cache_copies=cache_copies, **kw)
