"""Precision modes: what each one fixes on the Triton side and on the vendor side.

A mode names the input and output dtypes, the accumulator, Triton's `input_precision`
for fp32 dots, the vendor's math flags, the 1e-2 error bound, and `max_error`: the
largest relative error the mode can honestly produce on random normal inputs. An error
under the bound but above `max_error` means the computation ran in a lower precision
than promised ("precision downgraded"): e.g. fp32 that is really tf32 (~3e-4) or bf16
(~3e-3). Typical errors (float64 reference of the same rounded inputs, random normal
inputs): fp32 ~1e-7..1e-6, tf32 ~3e-4, bf16 output rounding ~1.5e-3, fp16 ~2e-4.
`tf32x3` (three tf32 passes, hi*hi + hi*lo + lo*hi) is timed against the vendor's IEEE
fp32: its promise is fp32-like accuracy at tensor-core speed.

dtypes are stored by name so importing this module does not import torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

ERROR_BOUND = 1e-2


@dataclass(frozen=True)
class PrecisionMode:
    name: str
    input_dtype: str          # torch dtype attribute name
    output_dtype: str
    input_precision: str      # Triton tl.dot input_precision for fp32 inputs
    allow_tf32: bool          # vendor: torch.backends.cuda.matmul.allow_tf32
    max_error: float          # above this (yet under the bound): "precision downgraded"
    downgrade_hint: str       # what an error above max_error looks like
    scaled: bool = False      # per-tensor scales (fp8)
    accumulator: str = "float32"
    bound: float = ERROR_BOUND
    # the most error beyond the output's own rounding (gemmgate/accuracy.py `Errors.excess`)
    # an fp32 accumulation leaves, for modes whose inputs are exact on the tensor cores and
    # whose output is 16-bit; None: not judged
    max_excess: float | None = None
    # below this, the computation ran more precisely than the mode (tf32 at IEEE fp32: a
    # vendor whose tf32 switch did not take, e.g. ROCm's HIPBLASLT_ALLOW_TF32 unset):
    # the speed ratio then compares two modes. Noted, not judged; None: not looked for
    min_error: float | None = None
    # an excess above this and over EXCESS_RATIO x the other side's on the same inputs
    # (accuracy.kept_less) says that side kept its sum below fp32: judged against the other
    # side where an absolute `max_excess` would be too near the honest figures; None: not
    kept_less_floor: float | None = None
    # the band of the kernels that claim the mode (Triton, the A/B reference, extras)
    # where the vendor runs another computation (tf32x3: IEEE fp32, judged at max_error);
    # None: max_error for every side (`band_for`)
    kernel_max_error: float | None = None
    # the band the worst block of rows, columns or tile is judged by (gemmgate/accuracy.py);
    # None: accuracy.BLOCK_SLACK x max_error
    block_max_error: float | None = None

    def __post_init__(self) -> None:
        if not 0 < self.max_error < self.bound:
            raise ValueError(f"{self.name}: need 0 < max_error < bound")
        if self.max_excess is not None and not 0 < self.max_excess < self.max_error:
            raise ValueError(f"{self.name}: need 0 < max_excess < max_error")
        if self.kernel_max_error is not None and not 0 < self.kernel_max_error < self.bound:
            raise ValueError(f"{self.name}: need 0 < kernel_max_error < bound")
        if self.block_max_error is not None and not 0 < self.block_max_error < self.bound:
            raise ValueError(f"{self.name}: need 0 < block_max_error < bound")
        if self.kept_less_floor is not None and not 0 < self.kept_less_floor < self.max_error:
            raise ValueError(f"{self.name}: need 0 < kept_less_floor < max_error")
        if self.min_error is not None and not 0 < self.min_error < self.max_error:
            raise ValueError(f"{self.name}: need 0 < min_error < max_error")
        if self.input_precision not in ("ieee", "tf32", "tf32x3"):
            raise ValueError(f"{self.name}: unknown input_precision {self.input_precision!r}")


MODES: dict[str, PrecisionMode] = {
    m.name: m
    for m in (
        PrecisionMode("fp32", "float32", "float32", "ieee", False, 2e-5, "tf32 or lower"),
        # tf32's blocks are judged at its band itself, not at twice it: a block computed
        # from bf16 inputs shows at 2.3e-3 to 2.4e-3 and passed 2 x 1.5e-3 (a review,
        # session 81), where a whole bf16 output (2.35e-3) fails the band. An honest tf32
        # block is at most ~1.35e-3 (a row at K = 1: one of A's elements cut by up to
        # 2^-10, as Triton's tensor cores read fp32), 0.8-0.9e-3 from K = 64 (CPU)
        PrecisionMode("tf32", "float32", "float32", "tf32", True, 1.5e-3, "bf16 or lower",
                      min_error=2e-5,   # fp32's max_error: tf32 rounds inputs to 11 bits
                      block_max_error=1.5e-3),
        # bf16, fp16 and fp8: the error beyond the output's own rounding (`max_excess`) is
        # measured and recorded (`ProviderResult.excess`). Sums rounded to nearest in fp32
        # leave <= 1e-4 of it on the CPU (K up to 61,440), sums kept to 13 bits or to the
        # output type >= 2.5e-4; an fp32 sum that truncates, as tensor cores have been
        # measured to (Fasi et al. 2021: V100, T4, A100), leaves 3.5e-4 at K = 11,008 in a
        # simulation. bf16 is judged at 1e-3: on H100s and the H200 the honest figure was at
        # most 4.07e-4 (8192 x 8192 x 28672, Triton and cuBLAS alike) over 211 cases each
        # (docs/results, sessions 60-66), and a sum kept in bf16 between K steps of 64 or 128
        # leaves >= 2.1e-3 from K = 128 on (CPU simulation, session 67), which the whole
        # error (2.6e-3 at K = 253 against a 5e-3 band) passed. fp16's excess is not
        # judged: its honest device figure reached 1.46e-4 and a sum kept in fp16 2.65e-4,
        # too close for one absolute band: a sum kept in fp16 between K blocks of 128 (fp32
        # inside a block) left 2.7e-4 to 4.8e-4 for K up to 1024 and passed (a review,
        # session 77), so fp16 judges each side's excess against the other's
        # (`kept_less_floor` 2.2e-4, 1.5x the devices' honest maximum, and over 3x the
        # other side's: a chip whose sums truncate on both sides alike is not judged).
        # Its whole error is: an honest fp16 output's is its own rounding, no
        # element's above the unit roundoff 2^-11 = 4.88e-4 (the fp32 sum adds ~1e-5), and
        # measured 2.06e-4 to 2.10e-4 on every device case (H200: 119 provider-cases, K up
        # to 28,672, session 71; the H100 and H200 baselines). 6e-4 is above any honest
        # output's; a sum kept in fp16 passed 1e-3 on the CPU at K 16 and 32 (6.2e-4 and
        # 8.4e-4, a review) and fails 6e-4 from K 32 where it is kept in fp16 after every
        # product (at K 16 about half the seeds pass: `judging.judge_kept_less` catches
        # those, against the other side).
        # fp8: Triton's fp8 dot on sm_90 sums in wgmma's fast accumulator, never promoted
        # (max_num_imprecise_acc_default 2**30): its error grows with K (4.9e-3 at 28,672).
        PrecisionMode("bf16", "bfloat16", "bfloat16", "ieee", False, 5e-3,
                      "reduced-precision accumulation", max_excess=1e-3),
        # Its blocks are judged at the band itself (an honest block is its own rounding,
        # under 2^-11 too): a tile summed in fp16 after every product showed at 8.2e-4 (K =
        # 32) to 1.2e-3 (K = 64) in its block and passed 2 x 6e-4 (a review, session 81).
        PrecisionMode("fp16", "float16", "float16", "ieee", False, 6e-4,
                      "reduced-precision accumulation", kept_less_floor=2.2e-4,
                      block_max_error=6e-4),
        PrecisionMode("fp8", "float8_e4m3fn", "bfloat16", "ieee", False, 5e-3,
                      "reduced-precision accumulation", scaled=True),
        # Three tf32 passes on tensor cores against the vendor's IEEE fp32: its band is
        # fp32-like (measured ~1e-6 on random inputs); single-pass tf32 is ~3e-4. Last in
        # the canonical order, so adding it changed no other mode's place in a run. The
        # kernels' own side is judged at 3e-6 (`kernel_max_error`): three bf16 passes
        # (bf16x3, at twice tf32's tensor-core rate) leave ~4.4e-6 at any K and passed
        # 1e-5 (a review, session 77); honest tf32x3 measured 1.4e-7 to 3.6e-7 on the
        # H200 (K 253 to 11,008), growing about as sqrt(K): ~9e-7 at K = 65,536. The
        # vendor's IEEE fp32 (1.9e-6 at K = 11,008) keeps 1e-5.
        PrecisionMode("tf32x3", "float32", "float32", "tf32x3", False, 1e-5,
                      "single-pass tf32 or lower", kernel_max_error=3e-6),
    )
}
MODE_NAMES: tuple[str, ...] = tuple(MODES)


def band_for(mode: PrecisionMode, provider: str) -> PrecisionMode:
    """`mode` as `provider`'s output is judged: the vendor's at the mode's band, every
    other side's at `kernel_max_error` where the mode has one (tf32x3), its blocks too."""
    if mode.kernel_max_error is None or provider == "vendor":
        return mode
    # its blocks at the band itself: a tile of bf16x3 (4.4e-6 to 4.8e-6 in its block)
    # passed twice it (a review, session 81); an honest block is under 7e-7 (CPU)
    return replace(mode, max_error=mode.kernel_max_error,
                   block_max_error=mode.kernel_max_error,
                   downgrade_hint="bf16x3 or lower")


def get_mode(name: str) -> PrecisionMode:
    try:
        return MODES[name]
    except KeyError:
        raise ValueError(
            f"unknown precision mode {name!r}; known modes: {', '.join(MODE_NAMES)}"
        ) from None


def parse_modes(text: str) -> tuple[PrecisionMode, ...]:
    """'tf32,fp32' -> modes in the canonical order (MODE_NAMES), duplicates dropped.

    Canonical because the run order is part of what is measured: each case runs in the
    thermal and power state its predecessors left. On the H200, checks that ran fp8
    after fp32 (alphabetical order) measured fp8 4096^3 3.8% faster, in every check, than
    the calibration that ran it after fp16."""
    parts = [t.strip() for t in text.split(",")]
    names = [t for t in parts if t]
    if not names:
        raise ValueError("no precision mode given")
    if "" in parts[:-1]:   # a trailing comma is taken, as by --shapes; an empty item
        raise ValueError(f"--modes {text!r} has an empty item: a mode left out?")   # (a review)
    wanted = {get_mode(n).name for n in names}
    return tuple(MODES[n] for n in MODE_NAMES if n in wanted)


def mode_for_dtype(dtype_name: str) -> PrecisionMode:
    """The mode a bare dtype implies: float32 means IEEE fp32, never tf32."""
    for m in MODES.values():
        if m.input_dtype == dtype_name and not m.name.startswith("tf32"):
            return m
    if dtype_name.startswith("float8"):
        return MODES["fp8"]
    raise TypeError(
        f"unsupported dtype {dtype_name}: use float32, bfloat16, float16 or float8_e4m3fn"
    )


def _has_flag(m, name: str) -> bool:
    try:
        getattr(m, name)
    except (AttributeError, RuntimeError):
        return False
    return True


def _flag(torch, m, name: str):
    """A flag as its setter takes it back whole: torch 2.13's reduced-precision flags are
    (reduced, split-K) pairs whose attribute reads the first alone, and setting that
    alone set split-K to its default, so a case left it changed."""
    whole = getattr(torch._C, f"_get_cublas_{name}", None)
    return whole() if whole is not None and name.endswith("reduction") else getattr(m, name)


def _restore(torch, m, name: str, value) -> None:
    """Set a flag back as `_flag` read it (through the setter matching its getter)."""
    whole = getattr(torch._C, f"_set_cublas_{name}", None)
    if whole is not None and name.endswith("reduction"):
        whole(*value) if isinstance(value, tuple) else whole(value)
    else:
        setattr(m, name, value)


def _pinned(m) -> tuple[str, tuple[str, ...]]:
    """The cuBLAS flags `vendor_flags` pins (`math_flags` watches them too): its tf32
    switch (`fp32_precision` on torch 2.9+, else `allow_tf32`) and the reduced-precision
    ones it turns off, those this torch has (fp16 accumulation: torch 2.7+)."""
    tf32 = "fp32_precision" if hasattr(m, "fp32_precision") else "allow_tf32"
    return tf32, tuple(n for n in ("allow_bf16_reduced_precision_reduction",
                                   "allow_fp16_reduced_precision_reduction",
                                   "allow_fp16_accumulation") if _has_flag(m, n))


@contextlib.contextmanager
def vendor_flags(mode: PrecisionMode) -> Iterator[None]:
    """Set torch's matmul math flags explicitly for `mode`; restore them afterwards.

    tf32 goes through `torch.backends.cuda.matmul.fp32_precision` where torch has it
    (2.9+): mixing it with the legacy `allow_tf32` / `set_float32_matmul_precision`
    puts torch 2.13 in a state where reading either raises. Older torch: legacy flag.
    Reduced-precision reductions and cuBLAS's fp16 accumulation are always off: the
    vendor must accumulate in fp32, as the Triton kernel does, or the comparison is not
    like for like. Each flag is restored whole afterwards.
    """
    import torch

    m = torch.backends.cuda.matmul
    tf32_attr, off = _pinned(m)
    new_api = tf32_attr == "fp32_precision"
    tf32_value = ("tf32" if mode.allow_tf32 else "ieee") if new_api else mode.allow_tf32
    saved = {n: _flag(torch, m, n) for n in (tf32_attr, *off)}
    try:
        setattr(m, tf32_attr, tf32_value)
        for n in off:
            setattr(m, n, False)
        yield
    finally:
        for n, v in saved.items():
            _restore(torch, m, n, v)


def math_flags() -> dict[str, object]:
    """torch's matmul math flags as they are now: those `vendor_flags` pins, and oneDNN's
    fp32 matmul precision (the CPU vendor's). A provider that changes one changes what the
    others compute after it: one setting tf32 made the vendor's fp32 calls "downgraded"
    (a review), on a GPU a tf32 vendor timed against an IEEE Triton."""
    import torch

    m = torch.backends.cuda.matmul
    tf32, off = _pinned(m)
    flags: dict[str, object] = {}
    # the parents first (torch 2.9+: a backend's "none" is its parent's value): a provider
    # that set `torch.backends.fp32_precision` was seen through mkldnn.matmul's "none",
    # which was "set back" to "none", still the parent's tf32; the next check of the same
    # flags then said a timed provider had changed them (exit 3; a review)
    for where in _PARENTS:
        owner = _owner(torch, where)
        if owner is not None and _has_flag(owner, "fp32_precision"):
            flags[f"{where}.fp32_precision".lstrip(".")] = owner.fp32_precision
    flags.update({f"cuda.matmul.{n}": _flag(torch, m, n)
                  for n in (tf32, *off) if _has_flag(m, n)})
    onednn = getattr(getattr(torch.backends, "mkldnn", None), "matmul", None)
    if onednn is not None and _has_flag(onednn, "fp32_precision"):
        flags["mkldnn.matmul.fp32_precision"] = onednn.fp32_precision
    return flags


_PARENTS = ("", "mkldnn")   # torch.backends.fp32_precision, torch.backends.mkldnn's


def _owner(torch, where: str):
    """torch.backends' member at dotted path `where` ("" torch.backends), else None."""
    owner = torch.backends
    for part in filter(None, where.split(".")):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return owner


def flags_changed(before: dict[str, object]) -> str:
    """What changed in `math_flags()` since `before` ("" where nothing did); every
    changed flag is set back to its value in `before`."""
    import torch

    now = math_flags()
    changed = [n for n in before if now.get(n) != before[n]]
    for n in changed:   # (in `math_flags`' order: parents before their children)
        where, _, attr = n.rpartition(".")
        _restore(torch, _owner(torch, where), attr, before[n])
    return ", ".join(f"{n} {before[n]!r} -> {now.get(n)!r}" for n in changed)
