"""kernels.matmul's call contract: what a call may pass and what it is refused, with a
message that names the argument (types, shapes, dtypes, devices, modes the device runs,
an out the kernels can write and that shares no memory with what they read)."""

from __future__ import annotations

import functools

import torch
from torch.autograd import forward_ad

from kernels import dispatch
from kernels.modes import KernelMode, mode_for_dtype, mode_named


def wants_grad(a, b, out, scale_a, scale_b) -> bool:
    """Whether an argument requires grad (a scale too: its gradient would be lost as
    silently); written out, not a generator: this runs every call (host time)."""
    try:
        return a.requires_grad or b.requires_grad or \
            (out is not None and out.requires_grad) or \
            (scale_a is not None and scale_a.requires_grad) or \
            (scale_b is not None and scale_b.requires_grad)
    except AttributeError:   # not tensors: `check_call` says what is wrong
        return False


def has_tangent(a, b, out, scale_a, scale_b) -> bool:
    """Whether an argument is a forward-mode AD dual tensor (`forward_ad.make_dual`): its
    tangent would be dropped from the product silently, grad mode or not (no_grad keeps
    forward AD on). Asked only inside a `forward_ad.dual_level()` (a module global read
    otherwise: this runs every call)."""
    if forward_ad._current_level < 0:
        return False
    return any(isinstance(x, torch.Tensor) and forward_ad.unpack_dual(x).tangent is not None
               for x in (a, b, out, scale_a, scale_b))


def span(x: torch.Tensor) -> int:
    """Bytes from x's first element to past its last (0 when x is empty)."""
    if x.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(x.shape, x.stride())) + 1) * x.element_size()


def check_apart(spans: tuple[int, int, int], a, b, out, scale_a=None, scale_b=None) -> None:
    """`out` shares no memory with a or b: the kernels read A and B while tiles of C are
    written, so an out over an input gives wrong values where torch.matmul, which stages
    the product, gives right ones. Where the byte spans meet, blocks of one buffer's
    rows (or columns) with the same pitch are told apart exactly (`rows_apart`: x @ W
    into the other half of a concatenation buffer); other layouts are refused."""
    o = out.data_ptr()
    for name, x, n in (("a", a, spans[0]), ("b", b, spans[1])):
        p = x.data_ptr()
        if n and spans[2] and p < o + spans[2] and o < p + n \
                and not (rows_apart(x, out) or rows_apart(x.t(), out.t())):
            raise ValueError(f"out overlaps {name} in memory: the kernels read {name} while "
                             f"they write out; pass an out of its own (or out=None)")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        # the kernels read a scale as each tile of out is stored (a scale inside out was
        # written over by the first tile: wrong values, no error; a review)
        # (any byte of it: one starting a byte before out ran into its first element)
        if s is not None and spans[2] and s.data_ptr() < o + spans[2] \
                and o < s.data_ptr() + s.element_size():
            raise ValueError(f"{name} lies inside out's memory: the kernels read it while "
                             "they write out; pass a scale of its own")


def rows_apart(x, y) -> bool:
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


def facts(x) -> tuple | None:
    """What the checks read of `out` or a scale."""
    return None if x is None else (x.device, x.dtype, x.shape, x.is_neg())


def check_call(a, b, precision, out, scale_a, scale_b) -> KernelMode:
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
        dense(name, x)
        stored(name, x)
        not_negated(name, x)
    mode, out_dtype = mode_for(a.dtype, precision)
    check_device(a.device, mode, a.dtype)  # not cached: it reads TRITON_INTERPRET
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s is not None and (not isinstance(s, torch.Tensor) or s.numel() != 1
                              or s.dtype != torch.float32 or s.device != a.device):
            raise ValueError(f"{name} must be a one-element float32 tensor on {a.device}, "
                             f"got {_what(s)}")
        if s is not None:
            not_negated(name, s)
    if out is not None:
        check_out(out, (a.shape[0], b.shape[1]), out_dtype, a.device)
    return mode


def dense(name: str, x: torch.Tensor) -> None:
    """`x` a strided tensor, whose strides the kernels read (a sparse out was told its
    elements share memory, a review)."""
    if x.layout != torch.strided:
        raise ValueError(f"{name} must be a dense (strided) tensor, got layout {x.layout}")


def stored(name: str, x: torch.Tensor) -> None:
    """`x` has memory the kernels can read: a tensor that a torch.func transform wraps
    (vmap, jvp) has none, and a call under vmap raised torch's "Cannot access data pointer
    of Tensor that doesn't have storage" from inside the plan (a review)."""
    try:
        x.data_ptr()
    except RuntimeError:
        raise ValueError(f"{name} has no storage for the kernels to read (a tensor a "
                         "torch.func transform such as vmap wraps, or a subclass without "
                         "data): call kernels.matmul on plain tensors, outside the "
                         "transform") from None


def not_negated(name: str, x: torch.Tensor) -> None:
    """`x` no lazy negation view: the kernels read storage as it is, so its negation (an
    operand's, a scale's sign: a review) would be lost."""
    if x.is_neg():
        raise ValueError(f"{name} is a lazy negation view (is_neg()): pass "
                         f"{name}.resolve_neg()")


def _what(x) -> str:
    return f"{tuple(x.shape)} {x.dtype} on {x.device}" if isinstance(x, torch.Tensor) \
        else type(x).__name__


def check_out(out, want: tuple, dtype: torch.dtype, device: torch.device) -> None:
    """`out` a tensor the kernels can write the product into: its shape, dtype and device,
    no lazy negation, and no dimension of stride 0 (an expanded tensor: torch.matmul
    refuses it too; overlaps of other strides are too hard to tell, as for torch)."""
    if not isinstance(out, torch.Tensor) or out.shape != want or out.dtype != dtype:
        raise ValueError(f"out must be a {want} {dtype} tensor, got {_what(out)}")
    if out.device != device:
        raise ValueError(f"out is on {out.device}, inputs on {device}")
    dense("out", out)
    stored("out", out)
    if out.is_inference() and not torch.is_inference_mode_enabled():   # as torch refuses
        raise RuntimeError("out is an inference tensor: it can be written in place only "
                           "inside torch.inference_mode()")
    if out.is_neg():
        raise ValueError("out is a lazy negation view (is_neg()): write into a plain tensor")
    if any(n > 1 and st == 0 for st, n in zip(out.stride(), out.shape)):
        raise ValueError(f"out's elements share memory (strides {out.stride()}, shape "
                         f"{tuple(out.shape)}): each must be its own (e.g. out.contiguous())")


@functools.lru_cache(maxsize=256)
def mode_for(dtype: torch.dtype, precision: str | None) -> tuple[KernelMode, torch.dtype]:
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


def check_device(device: torch.device, mode: KernelMode,
                 dtype: torch.dtype | None = None) -> None:
    if device.type == "meta" and dispatch.device_capability(device) == (0, 0):
        # meta tensors hold no data: only a planning tool that stands in a chip's facts
        # (scripts/call_audit.py) may call with them; a user's call crashed in Triton
        raise ValueError("meta tensors hold no data to multiply: give cuda tensors (or cpu "
                         "ones under TRITON_INTERPRET=1)")
    if device.type == "cpu":
        if not dispatch.interpreting():
            raise ValueError("CPU tensors need the Triton interpreter (TRITON_INTERPRET=1)")
        if not dispatch.kernels_interpreted():   # (a driver error, "0 active drivers")
            raise ValueError("TRITON_INTERPRET=1 was set after `kernels` was imported: its "
                             "kernels were made for a GPU; set it before the import")
        if not dispatch.triton_interpreted():
            raise ValueError("TRITON_INTERPRET=1 was set after `triton` was imported: "
                             "triton's own language functions were made for a GPU; set it "
                             "before importing triton")
        if mode.name in ("tf32", "tf32x3", "fp8"):
            raise ValueError(f"{mode.name} is not supported on cpu")
        if mode.name == "bf16":   # pinned in tests/kernels/test_interpreter_defects.py
            raise ValueError("bf16 is not supported on cpu: the Triton interpreter's bf16 "
                             "dot returns garbage")
        return
    if torch.version.hip is not None:
        return
    if dtype == torch.float8_e4m3fnuz:   # AMD's fp8 format: on an NVIDIA GPU Triton
        # refused it inside its compiler (a review)
        raise ValueError("float8_e4m3fnuz is AMD's fp8 format (ROCm); on an NVIDIA GPU give "
                         "float8_e4m3fn inputs")
    cc = dispatch.device_capability(device)
    need = mode.min_capability
    if cc < need:
        raise ValueError(f"{mode.name} is not supported on {dispatch.device_name(device)} "
                         f"(needs compute capability {need[0]}.{need[1]}+)")
