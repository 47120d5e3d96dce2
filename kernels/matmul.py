"""kernels.matmul: C = (A @ B) * scale_a * scale_b under an explicit precision mode.

The public entry: validate the call, ask the dispatcher (kernels/dispatch.py) for a plan
(operand copies, which variants apply, the tuned or heuristic tile), then launch one
variant: `tiled` (kernels/matmul_tiled.py: any strides, split-K), `tma` (kernels/
matmul_tma.py: persistent, tensor-memory descriptors, Hopper) or `tma_split` (kernels/
matmul_tma_split.py: split-K on tensor-memory descriptors). A call like an earlier one
(dtypes, shapes, strides, alignment) reuses its checks, plan and launch recipe, and the
kernel launches without Triton's binder (kernels/launch.py): it costs a key, the
descriptors and the launch; a call on the same tensors again (a weight, a preallocated
out) reuses the launch with its arguments fixed (kernels/launch.py, `Bound`).

Which tile runs: `config=` when the caller gives one; else the caller's `choose(key,
candidates, bench)` hook (the harness: pins, or timing `bench` within a budget for
`gemmgate tune`), which gets the dispatcher's pick first; else the dispatcher's pick
(the committed tuning table, kernels/tuned/<chip>.json, or the heuristic). Nothing is
tuned on the call path. The kernel imports only torch, triton and itself, so an old
commit's `kernels/` loads on its own (A/B, bisect).

`input_precision` is always explicit for fp32 inputs ("ieee", "tf32", "tf32x3"): Triton's
default for an fp32 dot is tf32, the silent downgrade this project exists to catch.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import triton

from kernels import (
    dispatch,
    matmul_gemv,
    matmul_tiled,
    matmul_tma,
    matmul_tma_hybrid,
    matmul_tma_split,
    matmul_tma_streamk,
    matmul_tma_wide,
    matmul_ws,
    table_file,
)
from kernels.checks import check_apart, check_call, facts, has_tangent, span, wants_grad
from kernels.launch_jit import current_index
from kernels.modes import KernelMode
from kernels.tile import VARIANTS, TileConfig, pow2_floor

# choose(key, candidates, bench) -> the tile to run; bench(tile) -> median ms (inf: fails)
Chooser = Callable[[str, Sequence[TileConfig], Callable[[TileConfig], float]], TileConfig]


@functools.cache
def kernel_hash() -> str:
    """Hash of every variant's source: a choice records which kernel it was made on."""
    joined = ",".join(table_file.variant_hash(v) for v in VARIANTS)
    return hashlib.sha1(joined.encode()).hexdigest()[:12]


def _bench_ms(fn, rep_ms: float = 25.0, cpu: bool = False) -> float:
    """One candidate's median time for a chooser; inf if it cannot compile or launch
    (e.g. out of registers or shared memory on this chip). `cpu`: the interpreter's
    call, timed by wall clock as the harness times the CPU (do_bench asks for a GPU
    driver: every tile that ran there measured inf, "fails", a review)."""
    try:
        if cpu:
            fn()   # (a warm-up: the interpreter's first launch of a kernel)
            times, end = [], time.perf_counter() + rep_ms / 1e3
            while len(times) < 3 or time.perf_counter() < end:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times)
        return triton.testing.do_bench(fn, warmup=5, rep=rep_ms, return_mode="median")
    except Exception:  # noqa: BLE001 - any compile/launch failure only rules the config out
        return math.inf


@dataclass
class Resolved:
    """A checked call: its mode, its plan (None when M or N is 0), and the launch recipes
    made for its tensors per tile (kernels/matmul_tiled.py, matmul_tma.py,
    matmul_tma_split.py)."""

    mode: KernelMode
    plan: dispatch.Plan | None
    recipes: dict = field(default_factory=dict)
    spans: tuple[int, int, int] | None = None   # a's, b's and out's bytes, with an out
    apart: tuple | None = None   # the last (a, b, out) addresses found apart (`check_apart`)
    pick_recipe: object = None   # recipes[plan.pick], read without hashing the tile
    kept: dict = field(default_factory=dict)   # the last kept copy per kind (`prepare`)


def _resolve(a, b, precision, out, scale_a, scale_b, cached: bool = False
             ) -> tuple[Resolved, tuple | None]:
    """The call checked and planned, and (a's, b's, out's data pointers) read once for
    the key, the out-overlap check and nothing else (None where the key could not be
    made). A GPU call whose tensors match an earlier call's in everything the checks,
    the plan and the launch recipe read (dtypes, devices, shapes, strides, alignment, out
    and scales) reuses that call's answer (dispatch.CALLS): the checks and the plan lookup
    cost ~12 us of host time a call, the key ~3 us."""
    try:
        pa, pb = a.data_ptr(), b.data_ptr()
        po = None if out is None else out.data_ptr()
        # (the scales' addresses too, where out is given: `check_apart` reads them)
        psa = None if po is None or scale_a is None else scale_a.data_ptr()
        psb = None if po is None or scale_b is None else scale_b.data_ptr()
        key = (a.device, b.device, a.dtype, b.dtype, a.shape, b.shape, a.stride(), b.stride(),
               pa % 16 == 0, pb % 16 == 0, precision,
               None if po is None else (out.device, out.dtype, out.shape, out.stride(),
                                        po % 16 == 0, out.is_neg(),
                                        out.is_inference()
                                        and not torch.is_inference_mode_enabled()),
               None if scale_a is None else facts(scale_a),
               None if scale_b is None else facts(scale_b), cached, a.is_neg(), b.is_neg())
        hit = dispatch.CALLS.get(key)
        ptrs = (pa, pb, po, psa, psb)
    except (AttributeError, TypeError, RuntimeError):   # not tensors, an unhashable
        key = hit = ptrs = None   # precision, a sparse tensor's strides: the checks say what
    if hit is not None:
        return hit, ptrs
    mode = check_call(a, b, precision, out, scale_a, scale_b)
    resolved = Resolved(mode, dispatch.plan(mode, a, b, cached) if a.shape[0] and b.shape[1]
                        else None, spans=None if out is None else (span(a), span(b), span(out)))
    if key is not None and a.device.type != "cpu":  # the CPU's checks read TRITON_INTERPRET
        dispatch.remember(key, resolved)
    return resolved, ptrs


def matmul(a, b, *, precision=None, out=None, scale_a=None, scale_b=None, config=None,
           choose: Chooser | None = None, cache_copies: bool = False):
    """C = A @ B under an explicit precision mode (names in kernels/modes.py).

    precision=None means the mode implied by the dtype (float32 -> IEEE fp32, never tf32).
    fp8 takes per-tensor float32 scales: C = (A @ B) * scale_a * scale_b, in bfloat16.
    `config` (a TileConfig) fixes the tile; else `choose(key, candidates, bench)` picks
    it (and so knows which tile ran); else the dispatcher's pick does.
    `cache_copies=True`: an operand the dispatcher copies (K-major for tf32/fp8 wgmma, or
    16-byte aligned for a descriptor) is copied once and the copy reused by later calls
    while the tensor is unchanged (its version counter: in-place PyTorch ops bump it);
    for operands that stay the same across calls, like weights. A new storage under the
    same tensor (`w.data = other`) is seen. A write that bypasses the version counter is
    not: a raw kernel storing into the tensor, or an in-place op on `w.data`; do not ask
    for the cache then.
    """
    if torch.is_grad_enabled() and wants_grad(a, b, out, scale_a, scale_b):
        raise RuntimeError("kernels.matmul has no backward: call it under torch.no_grad() "
                           "or torch.inference_mode(), or on detached tensors")
    if has_tangent(a, b, out, scale_a, scale_b):   # (forward AD: no_grad leaves it on)
        raise RuntimeError("kernels.matmul has no forward-mode derivative: an argument "
                           "carries a tangent (forward_ad.make_dual, torch.func.jvp); pass "
                           "its primal (forward_ad.unpack_dual(x).primal)")
    if config is not None and not isinstance(config, TileConfig):
        raise TypeError(f"config must be a TileConfig or None, got {type(config).__name__}")
    if cache_copies is not False and cache_copies is not True:   # (a list: "unhashable
        # type" from the plan cache; "no" kept copies: a review)
        raise TypeError(f"cache_copies must be True or False, got {cache_copies!r}")
    if choose is not None and not callable(choose):   # ("'int' object is not callable")
        raise TypeError(f"choose must be a callable or None, got {type(choose).__name__}")
    try:
        index = a.get_device()   # (an int, -1 off CUDA: ~40 ns, where a.device makes an
    except AttributeError:       # object; not a tensor: `_resolve` says what is wrong)
        index = -1
    if index >= 0 and index != current_index():
        # Triton launches on the current device, whatever the tensors' (a's pointers on
        # another GPU: an illegal address or another buffer's data); torch's own ops move
        # to the tensors' device for the call, and so does this, once
        with torch.cuda.device(index):
            if current_index() != index:
                raise RuntimeError(f"could not make CUDA device {index} current")
            return matmul(a, b, precision=precision, out=out, scale_a=scale_a,
                          scale_b=scale_b, config=config, choose=choose,
                          cache_copies=cache_copies)
    resolved, ptrs = _resolve(a, b, precision, out, scale_a, scale_b, cache_copies)
    mode, plan = resolved.mode, resolved.plan
    if resolved.spans is not None and (ptrs is None or ptrs != resolved.apart):
        check_apart(resolved.spans, a, b, out, scale_a, scale_b)   # the same addresses:
        # the same answer
        resolved.apart = ptrs
    if out is None:
        out = torch.empty((a.shape[0], b.shape[1]), dtype=getattr(torch, mode.output_dtype),
                          device=a.device)
    else:   # written in place, as PyTorch's own ops do: a copy kept of it (`cache_copies`)
        torch.autograd.graph.increment_version(out)   # and autograd see the change
    if plan is None:   # M or N is 0: nothing to compute
        return out
    if plan.copy_a or plan.copy_b:   # (most calls copy nothing: no prepare call made)
        a, b = dispatch.prepare(plan, a, b, cache=cache_copies, memo=resolved.kept)
    has_scale = scale_a is not None or scale_b is not None
    if not has_scale:   # the kernels take a pointer there and read nothing through it
        sa = sb = a
    elif scale_a is None or scale_b is None:
        one = torch.ones((), dtype=torch.float32, device=a.device)
        sa, sb = scale_a if scale_a is not None else one, scale_b if scale_b is not None else one
    else:
        sa, sb = scale_a, scale_b
    if config is None and choose is not None:
        flags = _flags(mode, plan, has_scale)
        M, K = a.shape
        N = b.shape[1]

        def bench(cfg: TileConfig) -> float:  # the launch prepared once: device time only
            try:
                fn = _launcher(cfg, a, b, out, sa, sb, flags, dispatch.b_room(plan, N))
            except Exception:  # noqa: BLE001 - a tile this call cannot take is ruled out
                return math.inf
            return _bench_ms(fn, cpu=a.device.type == "cpu")

        config = choose(plan.key, dispatch.candidates(plan, a.device, M, N, K), bench)
        if not isinstance(config, TileConfig):   # (None ran the dispatcher's pick unsaid)
            raise TypeError(f"choose returned {type(config).__name__}, not a TileConfig")
    if config is None and resolved.pick_recipe is not None:   # a repeated call's tile
        resolved.pick_recipe.launch(a, b, out, sa, sb)
        return out
    cfg = config if config is not None else plan.pick
    recipe = resolved.recipes.get(cfg)
    if recipe is None:  # the resolved call's tensors always yield the same recipe
        recipe = resolved.recipes[cfg] = _recipe(cfg, a, b, out,
                                                 _flags(mode, plan, has_scale),
                                                 dispatch.b_room(plan, b.shape[1]))
    if cfg is plan.pick:
        resolved.pick_recipe = recipe
    recipe.launch(a, b, out, sa, sb)
    return out


def _flags(mode: KernelMode, plan: dispatch.Plan, has_scale: bool) -> dict:
    """The kernels' mode arguments for a planned call."""
    return dict(input_precision=mode.input_precision, is_fp32=plan.family == "fp32",
                has_scale=has_scale)


# the TMA variants' recipes: those whose B descriptors read the zeros past N of B's kept
# copy (past_n.b_extent, READS_ROOM), and the tall and stream-K kernels'
_B_ROOM = {"tma": matmul_tma.recipe, "tma_split": matmul_tma_split.recipe,
           "tma_hybrid": matmul_tma_hybrid.recipe, "tma_wide": matmul_tma_wide.recipe,
           "tma_ws": matmul_ws.recipe}
_TMA_OTHER = {"tma_streamk": matmul_tma_streamk.recipe, "tma_tall": matmul_tma_wide.recipe}


def _recipe(cfg: TileConfig, a, b, out, flags: dict, b_room: int = 0):
    """A tile's launch recipe for these tensors; `b_room`: zeros past B's N in its kept
    copy (dispatch.b_room)."""
    if cfg.variant == "gemv":
        return matmul_gemv.recipe(cfg, a, b, out, **flags)
    if cfg.variant != "tiled":
        r = _B_ROOM[cfg.variant](cfg, a, b, out, **flags, b_room=b_room) \
            if cfg.variant in _B_ROOM else _TMA_OTHER[cfg.variant](cfg, a, b, out, **flags)
        if r is not None:
            return r
        if cfg.variant == "tma_ws":   # operands it does not take: the tile's tma form
            return _recipe(matmul_ws.fallback(cfg), a, b, out, flags, b_room)
        # not describable: pointer loads, one program a tile (the grid has no occupancy),
        # a wide or tall tile's sides cut to powers of two (the tiled kernel's)
        cfg = dataclasses.replace(cfg, variant="tiled", occupancy=1,
                                  block_m=pow2_floor(cfg.block_m),
                                  block_n=pow2_floor(cfg.block_n))
    return matmul_tiled.recipe(cfg, a, b, out, **flags)


def _launcher(cfg: TileConfig, a, b, out, sa, sb, flags: dict, b_room: int = 0):
    return _recipe(cfg, a, b, out, flags, b_room).bind(a, b, out, sa, sb)
