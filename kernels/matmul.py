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
from kernels.launch import current_index
from kernels.modes import KernelMode, mode_for_dtype, mode_named
from kernels.tile import VARIANTS, TileConfig, pow2_floor

# choose(key, candidates, bench) -> the tile to run; bench(tile) -> median ms (inf: fails)
Chooser = Callable[[str, Sequence[TileConfig], Callable[[TileConfig], float]], TileConfig]


@functools.cache
def kernel_hash() -> str:
    """Hash of every variant's source: a choice records which kernel it was made on."""
    joined = ",".join(table_file.variant_hash(v) for v in VARIANTS)
    return hashlib.sha1(joined.encode()).hexdigest()[:12]


def _wants_grad(a, b, out, scale_a, scale_b) -> bool:
    """Whether an argument requires grad (a scale too: its gradient would be lost as
    silently); written out, not a generator: this runs every call (host time)."""
    try:
        return a.requires_grad or b.requires_grad or \
            (out is not None and out.requires_grad) or \
            (scale_a is not None and scale_a.requires_grad) or \
            (scale_b is not None and scale_b.requires_grad)
    except AttributeError:   # not tensors: `_check` says what is wrong
        return False


def _bench_ms(fn, rep_ms: float = 25.0) -> float:
    """One candidate's median time for a chooser; inf if it cannot compile or launch
    (e.g. out of registers or shared memory on this chip)."""
    try:
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
    apart: tuple | None = None   # the last (a, b, out) addresses found apart (`_check_apart`)
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
        # (the scales' addresses too, where out is given: `_check_apart` reads them)
        psa = None if po is None or scale_a is None else scale_a.data_ptr()
        psb = None if po is None or scale_b is None else scale_b.data_ptr()
        key = (a.device, b.device, a.dtype, b.dtype, a.shape, b.shape, a.stride(), b.stride(),
               pa % 16 == 0, pb % 16 == 0, precision,
               None if po is None else (out.device, out.dtype, out.shape, out.stride(),
                                        po % 16 == 0, out.is_neg()),
               None if scale_a is None else _facts(scale_a),
               None if scale_b is None else _facts(scale_b), cached, a.is_neg(), b.is_neg())
        hit = dispatch.CALLS.get(key)
        ptrs = (pa, pb, po, psa, psb)
    except (AttributeError, TypeError, RuntimeError):   # not tensors, an unhashable
        key = hit = ptrs = None   # precision, a sparse tensor's strides: the checks say what
    if hit is not None:
        return hit, ptrs
    mode = _check(a, b, precision, out, scale_a, scale_b)
    resolved = Resolved(mode, dispatch.plan(mode, a, b, cached) if a.shape[0] and b.shape[1]
                        else None, spans=None if out is None else (_span(a), _span(b), _span(out)))
    if key is not None and a.device.type != "cpu":  # the CPU's checks read TRITON_INTERPRET
        dispatch.remember(key, resolved)
    return resolved, ptrs


def _span(x: torch.Tensor) -> int:
    """Bytes from x's first element to past its last (0 when x is empty)."""
    if x.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(x.shape, x.stride())) + 1) * x.element_size()


def _check_apart(spans: tuple[int, int, int], a, b, out, scale_a=None, scale_b=None) -> None:
    """`out` shares no memory with a or b: the kernels read A and B while tiles of C are
    written, so an out over an input gives wrong values where torch.matmul, which stages
    the product, gives right ones. Where the byte spans meet, blocks of one buffer's
    rows (or columns) with the same pitch are told apart exactly (`_rows_apart`: x @ W
    into the other half of a concatenation buffer); other layouts are refused."""
    o = out.data_ptr()
    for name, x, n in (("a", a, spans[0]), ("b", b, spans[1])):
        p = x.data_ptr()
        if n and spans[2] and p < o + spans[2] and o < p + n \
                and not (_rows_apart(x, out) or _rows_apart(x.t(), out.t())):
            raise ValueError(f"out overlaps {name} in memory: the kernels read {name} while "
                             f"they write out; pass an out of its own (or out=None)")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        # the kernels read a scale as each tile of out is stored (a scale inside out was
        # written over by the first tile: wrong values, no error; a review)
        if s is not None and spans[2] and o <= s.data_ptr() < o + spans[2]:
            raise ValueError(f"{name} lies inside out's memory: the kernels read it while "
                             "they write out; pass a scale of its own")


def _rows_apart(x, y) -> bool:
    """Whether 2-D x and y, each a block of rows of one pitch (the same row stride in
    bytes, elements contiguous along a row, a row's elements within the pitch), share no
    byte. y's rows land at a row offset r and a column offset c of x's rows; a y row that
    runs past the pitch goes on in the next row at column 0."""
    ld = x.stride(0) * x.element_size()
    wx, wy = x.shape[1] * x.element_size(), y.shape[1] * y.element_size()
    if (x.shape[1] > 1 and x.stride(1) != 1) or (y.shape[1] > 1 and y.stride(1) != 1) \
            or y.stride(0) * y.element_size() != ld or not 0 < wx <= ld or not 0 < wy <= ld:
        return False
    r, c = divmod(y.data_ptr() - x.data_ptr(), ld)
    mx, my = x.shape[0], y.shape[0]

    def rows_meet(first: int) -> bool:   # y's rows first .. first + my - 1 against x's
        return max(first, 0) <= min(first + my - 1, mx - 1)

    return not ((c < wx and rows_meet(r)) or (c + wy > ld and rows_meet(r + 1)))


def _facts(x) -> tuple | None:
    """What the checks read of `out` or a scale."""
    return None if x is None else (x.device, x.dtype, x.shape, x.is_neg())


def _check(a, b, precision, out, scale_a, scale_b) -> KernelMode:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be torch.Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"matmul needs 2-D a (M, K) and b (K, N); got a.dim()={a.dim()}, "
                         f"b.dim()={b.dim()}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is "
                         f"{tuple(b.shape)} (a.shape[1] must equal b.shape[0])")
    if a.dtype != b.dtype:
        raise TypeError(f"mixed dtypes: a is {a.dtype}, b is {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"mixed devices: a is on {a.device}, b is on {b.device}")
    if precision is not None and not isinstance(precision, str):
        raise ValueError(f"precision must be a mode name or None, got {precision!r}")
    for name, x in (("a", a), ("b", b)):
        # (any device: scripts/call_audit.py compiles the calls' kernels on meta tensors)
        if x.layout != torch.strided:
            raise ValueError(f"{name} must be a dense (strided) tensor, got layout {x.layout}")
        if x.is_neg():   # the kernels read storage as it is: its negation would be lost
            raise ValueError(f"{name} is a lazy negation view (is_neg()): pass "
                             f"{name}.resolve_neg()")
    mode, out_dtype = _mode_for(a.dtype, precision)
    _check_device(a.device, mode)  # not cached: on the CPU it reads TRITON_INTERPRET
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s is not None and (not isinstance(s, torch.Tensor) or s.numel() != 1
                              or s.dtype != torch.float32 or s.device != a.device):
            raise ValueError(f"{name} must be a one-element float32 tensor on {a.device}, "
                             f"got {_what(s)}")
        if s is not None and s.is_neg():   # read as stored: its sign would be lost (a review)
            raise ValueError(f"{name} is a lazy negation view (is_neg()): pass "
                             f"{name}.resolve_neg()")
    if out is not None:
        _check_out(out, (a.shape[0], b.shape[1]), out_dtype, a.device)
    return mode


def _what(x) -> str:
    return f"{tuple(x.shape)} {x.dtype} on {x.device}" if isinstance(x, torch.Tensor) \
        else type(x).__name__


def _check_out(out, want: tuple, dtype: torch.dtype, device: torch.device) -> None:
    """`out` a tensor the kernels can write the product into: its shape, dtype and device,
    no lazy negation, and no dimension of stride 0 (an expanded tensor: torch.matmul
    refuses it too; overlaps of other strides are too hard to tell, as for torch)."""
    if not isinstance(out, torch.Tensor) or out.shape != want or out.dtype != dtype:
        raise ValueError(f"out must be a {want} {dtype} tensor, got {_what(out)}")
    if out.device != device:
        raise ValueError(f"out is on {out.device}, inputs on {device}")
    if out.is_neg():
        raise ValueError("out is a lazy negation view (is_neg()): write into a plain tensor")
    if any(n > 1 and st == 0 for st, n in zip(out.stride(), out.shape)):
        raise ValueError(f"out's elements share memory (strides {out.stride()}, shape "
                         f"{tuple(out.shape)}): each must be its own (e.g. out.contiguous())")


@functools.lru_cache(maxsize=256)
def _mode_for(dtype: torch.dtype, precision: str | None) -> tuple[KernelMode, torch.dtype]:
    """(mode, output dtype) for a call's dtype and precision, or the error: checks made
    once per combination (host path: session 8 measured 58 us a call on the H200's host,
    against cuBLAS's 12)."""
    if not dtype.is_floating_point:
        raise TypeError(f"unsupported dtype {dtype}: integer, bool and complex inputs "
                        "are not supported")
    dtype_name = str(dtype).removeprefix("torch.")
    mode = mode_for_dtype(dtype_name) if precision is None else mode_named(precision)
    if dtype_name not in mode.input_dtypes:
        raise TypeError(f"precision {mode.name!r} needs {' or '.join(mode.input_dtypes)} "
                        f"inputs, got {dtype}")
    return mode, getattr(torch, mode.output_dtype)


def _check_device(device: torch.device, mode: KernelMode) -> None:
    if device.type == "cpu":
        if not dispatch.interpreting():
            raise ValueError("CPU tensors need the Triton interpreter (TRITON_INTERPRET=1)")
        if mode.name in ("tf32", "tf32x3", "fp8"):
            raise ValueError(f"{mode.name} is not supported on cpu")
        if mode.name == "bf16":   # pinned in tests/kernels/test_interpreter_defects.py
            raise ValueError("bf16 is not supported on cpu: the Triton interpreter's bf16 "
                             "dot returns garbage")
        return
    if torch.version.hip is not None:
        return
    cc = dispatch.device_capability(device)
    need = mode.min_capability
    if cc < need:
        raise ValueError(f"{mode.name} is not supported on {torch.cuda.get_device_name(device)} "
                         f"(needs compute capability {need[0]}.{need[1]}+)")


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
    if torch.is_grad_enabled() and _wants_grad(a, b, out, scale_a, scale_b):
        raise RuntimeError("kernels.matmul has no backward: call it under torch.no_grad() "
                           "or torch.inference_mode(), or on detached tensors")
    if config is not None and not isinstance(config, TileConfig):
        raise TypeError(f"config must be a TileConfig or None, got {type(config).__name__}")
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
        _check_apart(resolved.spans, a, b, out, scale_a, scale_b)   # the same addresses:
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
            return _bench_ms(fn)

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
