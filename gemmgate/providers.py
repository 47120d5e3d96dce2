"""Providers: who computes the GEMM. Each builds, from inputs, a zero-argument callable
that returns the output; anything that is setup (allocation, a layout the vendor
insists on) happens in the builder, outside the timed call.

- "triton": the project's kernel, kernels.matmul, with the mode passed explicitly and
  the run's tile-choice hook (gemmgate/tuning.py Chooser), which records the tile; and
  `cache_copies=True` where the kernel takes it: its operand copies are made once per
  case, as the vendor's fp8 layout is (docs/PERF.md, session 7); with `--copies
  per-call`, not: the copies a library caller's call makes, timed.
- "vendor": torch.matmul (cuBLAS / hipBLASLt / CPU BLAS); fp8 through torch._scaled_mm,
  whose K-major, padded operands are made once per case, or with `--copies per-call` in
  every call, as the Triton side's copies then are.
  The vendor's math flags are set by gemmgate.precision.vendor_flags around the case.
- "reference": the project's kernel at another commit (gemmgate/reference.py), for A/B:
  the same kernel_call with that commit's matmul.
- "inductor" (`--providers`): torch.compile of the same matmul (fp8: the same
  torch._scaled_mm on the same padded operands as "vendor"), max-autotune restricted to
  Triton templates, compiled and autotuned in the builder. Needs a CUDA GPU.
- "vendor_fast" (`--providers`, fp8 only): torch._scaled_mm as "vendor" runs it, with
  `use_fast_accum=True`: cuBLASLt's fp8 GEMM summing in the tensor core's fast
  accumulator, never promoted, as Triton's fp8 dot does on sm_90 by default. "vendor"
  accumulates in fp32; beside it this gives the like-for-like ratio (docs/PERF.md,
  session 58). Other modes: unsupported.
- `module:function` (`--providers`): any GEMM with the kernels.matmul contract, through
  kernel_call (a `choose` hook only if its signature takes one).

Nothing here is global state: the Runner (gemmgate/run.py) holds the kernels it calls.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

import torch

from gemmgate.autotune_pick import Picks, recording
from gemmgate.inputs import GemmInputs
from gemmgate.precision import PrecisionMode

Call = Callable[[], torch.Tensor]
Builder = Callable[[GemmInputs, PrecisionMode], Call]


class Unsupported(Exception):
    """This provider cannot run this case (e.g. the vendor's fp8 alignment rules)."""


def _out(inp: GemmInputs, mode: PrecisionMode) -> torch.Tensor:
    """The output a kernel writes: (M, N) row-major; in fp8, in the vendor's layout, rows
    padded to 16 elements (`_scaled_mm`: cuBLASLt writes a padded C and the provider
    returns its (M, N) view), so that both write the same memory."""
    m, n = inp.a.shape[0], inp.b.shape[1]
    cols = _round16(n) if mode.scaled else n
    out = torch.empty((m, cols), dtype=getattr(torch, mode.output_dtype), device=inp.a.device)
    return out[:, :n] if cols != n else out


def kernel_call(matmul, choose, inp: GemmInputs, mode: PrecisionMode,
                keep_copies: bool = True) -> Call:
    """A kernel honouring the kernels.matmul contract, with a tile-choice hook (None: no
    hook passed, for a kernel whose signature has none). `keep_copies` False (`--copies
    per-call`): the kernel is not asked to keep its operand copies, so it makes them on
    every call, as a library caller whose operands change every call.

    The hook is asked on the first call only: once it has recorded the tile (a Chooser's
    `last`), later calls pass that tile as `config=`, so a timed call costs what a library
    call with its tile known costs, not the hook's candidate list on every call (eager
    timing includes the host path)."""
    a, b = inp.a, inp.b
    kw: dict = {"precision": mode.name, "out": _out(inp, mode)}
    if mode.scaled:   # scales for a scaled mode only: a custom GEMM need not take them
        kw.update(scale_a=inp.scale_a, scale_b=inp.scale_b)
    if choose is not None:
        kw["choose"] = choose
    fixed = choose is not None and _takes(matmul, "config")
    # The inputs stay the same through a case, as a weight does: a kernel that can keep
    # its operand copies (K-major, aligned) is asked to, as the vendor's fp8 layout is
    # made once in its builder. A kernel without the option pays them per call.
    if keep_copies and _takes(matmul, "cache_copies"):
        kw["cache_copies"] = True
    # the keywords made once: an eager sample times this call, whose own work is the
    # harness's, not the library's (~0.25 us a call less on a CI core than three
    # dictionaries unpacked and the hook asked every call)

    def call() -> torch.Tensor:
        got = matmul(a, b, **kw)
        if fixed and "choose" in kw:
            last = getattr(choose, "last", None)
            if last is not None:
                del kw["choose"]
                kw["config"] = last.config
        return got

    return call


def _takes(fn, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature (a builtin)
        return False


def takes_choose(fn) -> bool:
    """Whether a custom provider's signature names a `choose` parameter."""
    return _takes(fn, "choose")


def vendor_provider(inp: GemmInputs, mode: PrecisionMode, keep_copies: bool = True) -> Call:
    """The vendor's call; `keep_copies` False (`--copies per-call`): fp8's operands are
    laid out for torch._scaled_mm in every call (`_scaled_mm`), as a caller whose
    operands change makes them (the other modes take the operands as they are)."""
    a, b = inp.a, inp.b
    if mode.scaled:
        return _scaled_mm(inp, keep_copies)
    out = _out(inp, mode)

    def call() -> torch.Tensor:
        return torch.matmul(a, b, out=out)

    return call


def _round16(x: int) -> int:
    return -(-x // 16) * 16


def _k_major_padded(inp: GemmInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """A row-major (M, K16) and B column-major (K16, N16), zero-padded where K or N is not
    a multiple of 16: what cuBLASLt's fp8 GEMM needs, done once, outside the timing."""
    a, b = inp.a, inp.b
    (m, k), n = a.shape, b.shape[1]
    k16, n16 = _round16(k), _round16(n)
    if (k16, n16) == (k, n):
        return a.contiguous(), b.t().contiguous().t()
    ap = torch.zeros((m, k16), dtype=a.dtype, device=a.device)
    ap[:, :k].copy_(a)
    bt = torch.zeros((n16, k16), dtype=b.dtype, device=b.device)  # B^T row-major
    bt[:n, :k].copy_(b.t())
    return ap, bt.t()


def _scaled_operands(inp: GemmInputs) -> tuple:
    """(A, B K-major, both padded; scale_a, scale_b; N) for torch._scaled_mm, which needs
    non-zero dims (Unsupported otherwise)."""
    m, k = inp.a.shape
    n = inp.b.shape[1]
    if m == 0 or n == 0 or k == 0:
        raise Unsupported(f"torch._scaled_mm needs non-zero dims (got M={m}, N={n}, K={k})")
    return (*_k_major_padded(inp), inp.scale_a, inp.scale_b, n)


def _scaled_product(a, b, sa, sb, n: int, fast: bool = False) -> torch.Tensor:
    out = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                           use_fast_accum=fast)
    return out[:, :n] if out.shape[1] != n else out


def vendor_fast_provider(inp: GemmInputs, mode: PrecisionMode,
                         keep_copies: bool = True) -> Call:
    """fp8 through torch._scaled_mm with cuBLASLt's fast accumulation (see the module's
    docstring); Unsupported in other modes."""
    if not mode.scaled:
        raise Unsupported(f"vendor_fast is fp8's fast accumulation; {mode.name} has none")
    if torch.version.hip is not None:   # PyTorch applies use_fast_accum on CUDA only: on
        raise Unsupported("vendor_fast: ROCm's torch._scaled_mm has no fast accumulation "
                          "(use_fast_accum is ignored there: it would time the vendor "
                          "twice)")                                # ROCm it is the vendor
    return _scaled_mm(inp, keep_copies, fast=True)


def _scaled_mm(inp: GemmInputs, keep_copies: bool = True, fast: bool = False) -> Call:
    """fp8 through torch._scaled_mm (cuBLASLt). Where K or N is not a multiple of 16,
    which cuBLASLt requires, both operands are zero-padded up to one, as a cuBLAS user
    would pad, and the output is sliced back. The padded product is exact (the extra
    terms are zeros), and the vendor does at most 16/K + 16/N more work (K = 253: 1.2%).
    B is made K-major (and A, B padded) once, or with `keep_copies` False in every call.
    The product goes into a C made once (`out=`), as the Triton side writes its `out`:
    allocated and sliced per call, an eager sample counted the allocation on the vendor's
    side only; a torch whose _scaled_mm takes no `out=` allocates, as before."""
    ap, bt, sa, sb, n = _scaled_operands(inp)
    c = torch.empty((ap.shape[0], bt.shape[1]), dtype=torch.bfloat16, device=ap.device)
    view = c if c.shape[1] == n else c[:, :n]

    def into(a, b, sa, sb) -> torch.Tensor:
        torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                         use_fast_accum=fast, out=c)
        return view

    def allocating(a, b, sa, sb) -> torch.Tensor:
        return _scaled_product(a, b, sa, sb, n, fast)

    product = into
    try:
        try:
            into(ap, bt, sa, sb)
        except (TypeError, RuntimeError):   # no out= here: the product allocated
            product = allocating
            allocating(ap, bt, sa, sb)
    except RuntimeError as e:  # a shape rule of this torch/cuBLASLt not met: no vendor
        (m, k) = inp.a.shape
        raise Unsupported(f"torch._scaled_mm rejects M={m}, N={n}, K={k}: "
                          f"{str(e).splitlines()[0][:200]}") from None

    def call() -> torch.Tensor:
        return product(ap, bt, sa, sb)

    def per_call() -> torch.Tensor:
        return product(*_scaled_operands(inp)[:4])

    return call if keep_copies else per_call


# max-autotune-no-cudagraphs, as options: torch.compile takes a mode or options, not both
# fx_graph_cache off: a hit loads the compiled graph whole, so inductor does not autotune
# (its timings come from its own autotune cache either way) and its pick went unrecorded:
# a second run on one host showed no inductor_config (session 76, an H100)
_INDUCTOR_OPTIONS = {"max_autotune": True, "coordinate_descent_tuning": True,
                     "triton.cudagraphs": False, "max_autotune_gemm_backends": "TRITON",
                     "fx_graph_cache": False}


@contextlib.contextmanager
def _legacy_precision_readable() -> Iterator[None]:
    """Inductor reads torch.get_float32_matmul_precision() while it autotunes, and that
    raises ("mix of the legacy and new APIs") once vendor_flags has set tf32 through the
    new API (torch 2.11, 2.13), or answers the caller's own legacy setting: after
    `set_float32_matmul_precision('high')` (a --providers module, a sitecustomize) it said
    "high" inside vendor_flags(fp32), and inductor compiled fp32 as tf32 (a review). While
    it compiles, the mode's tf32/ieee choice is stated through the legacy API too; the
    new-API state is put back exactly."""
    m = torch.backends.cuda.matmul
    want = "high" if m.fp32_precision == "tf32" else "highest"
    try:
        said = torch.get_float32_matmul_precision()
    except RuntimeError:
        said = None
    if said == want:
        yield  # readable and the mode's already (or a torch with the legacy API only)
        return
    mkl = torch.backends.mkldnn.matmul
    saved = m.fp32_precision, mkl.fp32_precision
    torch.set_float32_matmul_precision(want)
    try:
        yield
    finally:   # the legacy setting as it was (torch keeps it apart from the new flags'
        torch.set_float32_matmul_precision(said or "highest")   # values), then the new
        m.fp32_precision, mkl.fp32_precision = saved              # flags exactly


def inductor_provider(inp: GemmInputs, mode: PrecisionMode, picks: Picks | None = None
                      ) -> Call:
    """torch.compile's Triton GEMM for this case, compiled and autotuned here (outside the
    timed call), under the math flags vendor_flags(mode) has set around the case: inductor
    reads torch.backends.cuda.matmul when it lowers, so fp32 stays IEEE and tf32 is tf32.
    `picks` records which template config its autotuning chose (gemmgate.autotune_pick)."""
    if not inp.a.is_cuda:
        raise Unsupported("inductor provider needs a CUDA GPU")
    return _compiled(inp, mode, picks)


def _compiled(inp: GemmInputs, mode: PrecisionMode, picks: Picks | None = None) -> Call:
    """The compiled call, on any device (tests drive it on the CPU with torch.compile
    replaced)."""
    if mode.scaled:
        *args, n = _scaled_operands(inp)

        def fn(a, b, sa, sb):
            return _scaled_product(a, b, sa, sb, n)
    else:
        args = (inp.a, inp.b)

        def fn(a, b):
            return torch.matmul(a, b)
    # Dynamo keeps compiled code per code object, and `fn` has one code object for every
    # case: past its recompile limit (8 shapes) it would silently run eager, i.e. cuBLAS.
    # A reset per case keeps one compiled function per case; fullgraph: no silent breaks.
    import torch._dynamo  # heavy: imported only when --providers inductor runs

    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, dynamic=False, options=_INDUCTOR_OPTIONS)
    try:
        with _legacy_precision_readable(), recording(picks or Picks()):
            compiled(*args)  # compile and autotune now, not in the timed call
    except Exception as e:
        if "NoValidChoicesError" in f"{type(e).__name__} {e}":  # no Triton template fits
            raise Unsupported(f"inductor has no Triton GEMM template for this case: "
                              f"{str(e).splitlines()[0][:200]}") from None
        raise

    def call() -> torch.Tensor:
        return compiled(*args)

    return call
