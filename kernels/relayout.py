"""Operand copies for the dispatcher: any 2-D strided view into a row-major matrix whose
leading dimension is padded to 16 bytes (what a tensor descriptor and wgmma want).

A transposing copy through torch (`empty(...).copy_(x.t())`) ran at ~0.4 TB/s for fp8 on
the H200 (docs/PERF.md, session 5): 86 us of a 190 us fp8 4096^3 GEMM. This kernel
reads a BLOCK x BLOCK tile coalesced along the source's contiguous dimension and writes
it coalesced along the destination's rows; Triton converts the layout through shared
memory in between.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable

import torch
import triton
import triton.language as tl
from torch.multiprocessing.reductions import StorageWeakRef

from kernels.jit_parts import wide
from kernels.launch import Launch
from kernels.scratch import SCRATCH
from kernels.tile import cdiv, pow2_floor, wide_offsets


@triton.jit
def _copy_kernel(x_ptr, y_ptr, R, C, sxr, sxc, syr, YR, YC,
                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, I64: tl.constexpr = False):
    """y[:YR, :YC] = x (R, C) and zeros past it (YR >= R, YC >= C): one pass, the zeros
    of a padded copy (`aligned_copy`'s `pad_to`) included. `I64`: offsets in 64 bits
    (`tile.wide_offsets`: a view whose rows lie 2**30 apart read and wrote rows 4 GiB
    away in int32; a review)."""
    sxr, sxc, syr = wide(sxr, I64), wide(sxc, I64), wide(syr, I64)
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None] * sxr + c[None, :] * sxc, mask=inside, other=0)
    tl.store(y_ptr + r[:, None] * syr + c[None, :], x,
             mask=(r[:, None] < YR) & (c[None, :] < YC))


@triton.jit
def _unstage_kernel(x_ptr, y_ptr, total, C, sxr,
                    BLOCK: tl.constexpr, ONE_WRAP: tl.constexpr):
    """y (contiguous, rows of C) = x (the same rows at pitch sxr), walked as y's flat
    memory: each program stores BLOCK consecutive elements of y with whole vectors (y's
    rows need not start aligned) and gathers them from x's rows."""
    start = tl.program_id(0).to(tl.int64) * BLOCK
    i = tl.arange(0, BLOCK)
    r0 = start // C              # the block's first row and column: once per program
    c = (start - r0 * C).to(tl.int32) + i
    if ONE_WRAP:   # BLOCK <= C: the block crosses one row end at most
        src = x_ptr + r0 * sxr + c + (c >= C).to(tl.int64) * (sxr - C)
    else:          # rows shorter than a block (< 128): a division per element
        q = c // C
        src = x_ptr + (r0 + q) * sxr + (c - q * C)
    dst = y_ptr + start + i
    if start + BLOCK <= total:
        tl.store(dst, tl.load(src))
    else:
        inside = start + i < total
        tl.store(dst, tl.load(src, mask=inside), mask=inside)


KERNELS = (_copy_kernel, _unstage_kernel)
_BLOCK = 64
UNSTAGE_BLOCK = 2048   # elements a program of the unstaging copy stores


def pitch(cols: int, elem: int, align: int = 16) -> int:
    """Elements per row of the copy: `cols` rounded up to `align` bytes."""
    per = max(align // elem, 1)
    return cdiv(cols, per) * per


def aligned_empty(rows: int, cols: int, dtype: torch.dtype, device,
                  align: int = 16, role: str | None = None) -> torch.Tensor:
    """An uninitialised (rows, cols) row-major view whose rows start `align`-byte aligned;
    with a `role`, a buffer for this call's kernels only, kept for the next call
    (kernels/scratch.py)."""
    shape = (rows, pitch(cols, dtype.itemsize, align))
    if role is None:
        return torch.empty(shape, dtype=dtype, device=device)[:, :cols]
    device = device if isinstance(device, torch.device) else torch.device(device)
    return SCRATCH.empty(shape, dtype, device, role, cols)


def aligned_copy(x: torch.Tensor, align: int = 16, role: str | None = None,
                 pad_to: tuple[int, int] = (1, 1)) -> torch.Tensor:
    """x (rows, cols), any strides, as a row-major view with an `align`-byte pitch (`role`:
    into a kept buffer, `aligned_empty`). `pad_to`: the buffer's rows and columns rounded
    up to multiples of these, the ones past x's zeroed, so that a descriptor may read
    them (a copy of B, kernels/past_n.py `PAD_N`); the view is x's shape."""
    rows, cols = x.shape
    R, C = cdiv(rows, pad_to[0]) * pad_to[0], cdiv(cols, pad_to[1]) * pad_to[1]
    y = aligned_empty(R, C, x.dtype, x.device, align, role)
    if rows and cols and torch_copies(x):
        y[:rows, :cols].copy_(x)
        if C > cols:
            y[:, cols:].zero_()
        if R > rows:
            y[rows:].zero_()
    elif rows and cols:   # the copy kernel, the zeros in the same launch; byte elements
        # through integer views of the bits (its masked load fills with an int 0, which
        # Triton cannot cast to fp8); others as they are (a view costs host time a call)
        xs, ys = (x.view(torch.uint8), y.view(torch.uint8)) if x.element_size() == 1 \
            else (x, y)
        copy_launch(rows, cols, x.stride(0), x.stride(1), y.stride(0), R, C).fast(xs, ys)
    return y if (R, C) == (rows, cols) else y[:rows, :cols]   # a copy per call: no view


# Byte elements copied rows to rows (an fp8 operand re-pitched), from this size up, are
# torch's copy: the copy kernel's loads of them are one byte each, and it ran them at
# 0.32-0.6 of torch's speed (H200, session 48 run 4: fp8 A of 3520 x 4840 (4840-byte rows)
# 130 us, torch 42; 7728 x 7824 60 us, torch 36); fp8 calls without kept copies ran
# 3520 x 536 x 4840 190 -> 99 us, 7664 x 368 x 7032 352 -> 178 (run 5). Below it the
# copy kernel's bound launch is less host work than torch's copy and zero launches (bf16
# 1111 x 777 x 555, every copy torch's: 54 -> 68 us a call in run 5's two processes; runs
# 7-8, processes alternated, do not resolve a few us on that host), and its transposing
# copies (K-major B) ran 0.84-4.3x torch's speed.
TORCH_COPY_BYTES = 2 << 20


def torch_copies(x: torch.Tensor) -> bool:
    """Whether `aligned_copy` copies x with torch (`TORCH_COPY_BYTES`)."""
    return x.element_size() == 1 and x.stride(1) == 1 and x.numel() >= TORCH_COPY_BYTES


LINE = 128   # bytes: a pitch that is a multiple of this starts every row on an L2 line


def pitched_copy(x: torch.Tensor, role: str | None = None, pad_cols: int = 1) -> torch.Tensor:
    """x, row- or column-major as it is, with its leading dimension's pitch rounded up to
    whole 128-byte lines (`LINE`): rows that straddle lines cost the TMA loads ~28%
    (docs/PERF.md, session 14: bf16 2048^3 with lda 2056 ran 35.7 us, with 2112 27.9).
    `pad_cols`: zeros past x's columns up to a multiple of it (`aligned_copy`'s `pad_to`,
    along whichever axis of the buffer holds them)."""
    if x.stride(1) == 1 or x.shape[1] == 1:
        return aligned_copy(x, LINE, role, (1, pad_cols))
    return aligned_copy(x.t(), LINE, role, (pad_cols, 1)).t()


@functools.lru_cache(maxsize=256)
def copy_launch(rows: int, cols: int, sxr: int, sxc: int, syr: int, y_rows: int = 0,
                y_cols: int = 0) -> Launch:
    """The copy kernel's launch but for its tensors (kernels/launch.py): x (rows, cols)
    with strides (sxr, sxc) into y with strides (syr, 1), y's (y_rows, y_cols) past x
    zeroed (0: x's)."""
    y_rows, y_cols = y_rows or rows, y_cols or cols
    grid = (cdiv(y_rows, _BLOCK), cdiv(y_cols, _BLOCK))
    i64 = wide_offsets(((rows, cols), (sxr, sxc)), ((y_rows, y_cols), (syr, 1)))
    return Launch(_copy_kernel, grid, (rows, cols, sxr, sxc, syr, y_rows, y_cols),
                  dict(BLOCK_R=_BLOCK, BLOCK_C=_BLOCK, num_warps=4, **({"I64": True} if i64
                                                                        else {})))


@functools.lru_cache(maxsize=256)
def unstage_launch(rows: int, cols: int, sxr: int, block: int = 0) -> Launch:
    """The unstaging copy's launch but for its tensors: x (rows, cols) at row pitch sxr
    (a staged C, rows on whole lines) into a contiguous y of the same shape, whose rows
    may start anywhere (N = 7316 bf16: 14632-byte rows, 8-byte aligned).

    The 2-D copy (`copy_launch`) stores y row by row; where y's pitch is not a multiple
    of 16 elements its stores are scalar: the staged C of bf16 2378 x 7316 x 166 took
    ~30 us (~2.3 TB/s), more than the GEMM's 29 us (session 17, call A). This one stores
    y's flat memory in whole vectors and gathers x instead (`block` elements a program,
    default `_unstage_block`)."""
    block = block or _unstage_block(cols)
    grid = (cdiv(rows * cols, block),)
    return Launch(_unstage_kernel, grid, (rows * cols, cols, sxr),
                  dict(BLOCK=block, ONE_WRAP=block <= cols,
                       num_warps=max(1, min(4, block // 256))))


def _unstage_block(cols: int) -> int:
    """Elements a program of the unstaging copy stores: UNSTAGE_BLOCK, or the largest
    power of two within a row (128 at least), so that a block crosses one row end at most
    and takes no division per element (session 17, call C: with a 32-bit division per
    element, C's of 1044-1620 columns ran their calls at 0.89-0.95 of the 2-D copy's)."""
    return max(128, min(UNSTAGE_BLOCK, pow2_floor(cols)))


def _same_storage(ref: StorageWeakRef, x: torch.Tensor) -> bool:
    """Whether `x` still has the storage `ref` was taken of. The identities compared
    suffice: a weak reference keeps the storage's object allocated after its last tensor
    dies (only its memory goes), so while `ref` lives no other storage can take its
    address, and x, alive, holds the one it has (on the CPU: 0 of 2,000 storages made
    after one died took its address while a weak reference was held, 652 without one).
    No `_expired` asked (session 61: a Python-level call a kept copy's hit paid)."""
    return ref.cdata == x.untyped_storage()._cdata


class _Kept:
    """A CopyCache entry: its key, the source's address, a weak reference to the source
    (its base), the source's version, the copy (None once evicted or dropped: a caller's
    memo holds the entry, never the memory) and a weak reference to its storage."""

    __slots__ = ("key", "ptr", "source", "version", "copy", "storage")

    def __init__(self, key: tuple, ptr: int, source: weakref.ref, version: int,
                 copy: torch.Tensor, storage: StorageWeakRef) -> None:
        self.key, self.ptr, self.source, self.version = key, ptr, source, version
        self.copy, self.storage = copy, storage


class CopyCache:
    """Operand copies kept for reuse while their source is unchanged (`cache_copies=True`
    in kernels.matmul: an operand that stays the same across calls, like a weight, pays
    its K-major or aligned copy once).

    An entry holds the copy, a weak reference to the source (its base tensor for a view,
    so `w.t()` made afresh per call still hits) and the source's version counter, which
    every in-place PyTorch op on the tensor or a view of it bumps. It is dropped when the
    source is freed or after `entries` newer ones. Inference tensors (no version counter)
    are not cached. During CUDA-graph capture a valid copy is used, so the graph reads
    it as it was at capture, as a graph reads any tensor it captured (change the source:
    capture again); a copy made during capture lives in the graph's pool and is not kept.
    The entry also holds a weak reference to the source's storage: `w.data = other`
    swaps the storage under the same tensor object at version 0, and the allocator hands
    the old address back routinely, so address, shape and version matched a stale copy
    (187 of 200 such swaps on the CPU). A write that bypasses PyTorch's version counter
    is not seen: a raw kernel storing into the tensor, or an in-place op on `w.data`;
    that is what the caller promises against by asking for the cache.
    """

    def __init__(self, entries: int = 16) -> None:
        if entries < 1:
            raise ValueError(f"entries must be >= 1, got {entries}")
        self.entries = entries
        self._store: OrderedDict[tuple, _Kept] = OrderedDict()   # oldest use first
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._store)

    def get(self, x: torch.Tensor, kind: str, make: Callable[[torch.Tensor], torch.Tensor],
            memo: dict | None = None):
        """make(x), or the copy made earlier for the same, unchanged x and kind. A hit
        runs on every eager call with kept copies: the key is x's own shape (a tuple) and
        an inference tensor is told by its missing version counter, not asked apart.
        `memo`: the caller's last entry per kind, tried before the key is made (a resolved
        matmul call's: the same shapes and strides every call, so a repeat on the same
        tensor needs only its address, source, version and storage compared)."""
        try:
            version = x._version
        except RuntimeError:   # an inference tensor: no version counter, not cached
            return make(x)
        base = x._base
        anchor = x if base is None else base
        ptr = x.data_ptr()
        if memo is not None:
            kept = memo.get(kind)
            if kept is not None and kept.ptr == ptr and kept.copy is not None \
                    and kept.source() is anchor and kept.version == version \
                    and _same_storage(kept.storage, x):
                try:
                    self._store.move_to_end(kept.key)
                except KeyError:   # (an entry out of the store holds no copy: not here)
                    kept.copy = None
                else:
                    self.hits += 1
                    return kept.copy
        key = (kind, ptr, x.shape, x.stride(), x.dtype, x.device)
        kept = self._store.get(key)
        if kept is not None and kept.source() is anchor and kept.version == version and \
                _same_storage(kept.storage, x):
            self._store.move_to_end(key)
            self.hits += 1
            if memo is not None:
                memo[kind] = kept
            return kept.copy
        self.misses += 1
        y = make(x)
        if x.is_cuda and torch.cuda.is_current_stream_capturing():
            return y
        store = self._store

        def drop(ref, key=key):  # the source was freed: free its copy with it
            gone = store.get(key)
            if gone is not None and gone.source is ref:
                del store[key]
                gone.copy = None

        # the entry there now goes, its copy with it (not when a memo lets go of it): the
        # stale one found above, or one another caller stored while `make` ran (a thread
        # on the same weight): replaced, it would sit in that caller's memo off the store
        replaced = store.get(key)
        if replaced is not None:
            replaced.copy = None
        kept = store[key] = _Kept(key, ptr, weakref.ref(anchor, drop), version, y,
                                  StorageWeakRef(x.untyped_storage()))
        store.move_to_end(key)
        while len(store) > self.entries:
            store.popitem(last=False)[1].copy = None
        if memo is not None:
            memo[kind] = kept
        return y

    def clear(self) -> None:
        for kept in self._store.values():
            kept.copy = None
        self._store.clear()
