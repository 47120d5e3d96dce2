"""A call's operands, variants and tuning bucket, from its shape, strides and mode: pure
logic, no device (`decide`); kernels/dispatch.py plans a call with it.

1. Operands. On Hopper, tf32 and fp8 wgmma take K-major operands only (otherwise Triton
   falls back to the Ampere mma at ~1/4 of the rate, docs/PERF.md v1 -> v2). A non-K-
   major operand is copied K-major when the other dimension reuses it enough to pay for
   the copy (>= 128: at M=128 the slow path ran fp8 at 0.21 of cuBLAS, session 5; B
   from M >= 64, where the TMA variant runs: at M=64 the N-major B ran tf32 at 0.37 and
   fp8 at 0.30, session 9); a decode-like call (M=16) keeps its layout (the copy would
   be all the work).
   An operand a tensor descriptor cannot take (a leading dimension like 4097 or fp8's
   1000 bytes, not 16-byte aligned) gets an aligned copy by the same reuse rule, so the
   TMA variant can run (kernels/relayout.py: a tiled transposing copy kernel). With
   `cache_copies=True` a copy is made once per unchanged source tensor and reused
   (relayout.CopyCache), so an operand that stays the same across calls, like a weight,
   does not pay it per call; kept copies are made on whole 128-byte lines, and an operand
   the TMA variant would read with rows off them (a pitch like 2000 or 4112 bytes) is
   copied to whole lines too, in its own layout (`pitch`: ~28% of the kernel's time on
   the H200, session 14). IEEE fp32 (FMA units) copies a column-major B row-major, and a
   column-major A only beside it or where its loads would be scalar (`rowmajor`).
2. Variants: `tma` where both operands (after 1) can be described and the chip has TMA
   (sm_90+), from wgmma's M = 64 (16-bit from M = 17, its operands as given: the table
   chooses between TMA's 64-row tiles and the tiled kernel's thin ones; and at any M
   with B column-major, x @ W.T, TMA alone); `tiled` too
   unless its pointer loads would be scalar (`_pointer_fast`; such a call takes TMA even
   at thin M, with aligned copies) or it is fp8 with a K-major B and M < 128; `gemv`
   alone for IEEE fp32 and tf32x3 at M <= GEMV_M and tf32 at M = 1 over a large B
   (`gemv_rows`; it reads either layout: B copied only to align its rows); split-K
   where the output tiles leave SMs idle and K is long: `tiled` with split_k > 1, and
   `tma_split` (split-K on TMA loads) wherever `tma` runs.
"""

from __future__ import annotations

from kernels import ws_forms
from kernels.fma import GEMV_M
from kernels.matmul_tma import describable
from kernels.modes import KernelMode
from kernels.past_n import reads_room
from kernels.relayout import LINE, pitch
from kernels.tile import WGMMA_M

_COPY_MIN_DIM = 128    # copy an operand K-major only when the other side reuses it this much
_DECODE_M = 16         # 16-bit M up to this: the tiled kernel only (its 16-row tiles)


def family(mode: KernelMode) -> str:
    return "fp32" if mode.input_dtypes == ("float32",) else "fp8" if mode.scaled else "16bit"


def on_fma_units(mode: KernelMode) -> bool:
    """IEEE fp32: no tensor core takes it, so its dots run on the FMA units (its own
    operand rules in `decide`, its own tiles in kernels/configs.py)."""
    return family(mode) == "fp32" and mode.input_precision == "ieee"


# tf32 at one row runs the gemv variant where B is GEMV_TF32_MIN elements or more. Session
# 46, call 3 (A/B against the tiled kernel's 16-row tile and the TMA split, rr and rc):
# tf32 1 x N x K, N x K of 4-235 M elements, x0.99-1.17 (16 of 18 faster; nightly 1 x 4096
# x 4096 0.82 -> 0.96 of cuBLAS), 1 x 1000 x 1000 x0.72 (its K split 2 ways: 16 programs);
# 2 rows x0.948 (6 of 12 faster). tf32x3 at one row x1.621 (20 of 20), two x1.265 (9 of
# 12): three tensor-core passes cost more than one FMA pass over a row.
GEMV_TF32_MIN = 1 << 22


def gemv_rows(mode: KernelMode, M: int, N: int, K: int) -> bool:
    """Whether a call of M rows is, by its mode and size, the gemv variant's: fp32 inputs
    only, their products exact in fp32 on the FMA units (more accurate than tf32 and
    tf32x3 promise). IEEE fp32 and tf32x3 up to GEMV_M rows; tf32 one row of a B of
    GEMV_TF32_MIN elements or more."""
    if family(mode) != "fp32" or not 0 < M <= GEMV_M:
        return False
    if mode.input_precision == "tf32":
        return M == 1 and N * K >= GEMV_TF32_MIN
    return True


def _layout(stride: tuple) -> str:
    return "r" if stride[1] == 1 else "c" if stride[0] == 1 else "s"


def _needs_kmajor(mode: KernelMode, cap: tuple[int, int]) -> bool:
    return cap >= (9, 0) and (mode.scaled or mode.input_precision.startswith("tf32"))


def decide(mode: KernelMode, cap: tuple[int, int], M: int, N: int, K: int, sa: tuple,
           sb: tuple, aligned: tuple[bool, bool], elem: int, *, has_tma: bool,
           cached: bool = False):
    """(family, key, bucket, copy_a, copy_b, variants) for a call: pure, no device.
    `cached`: copies are kept across calls (fp8 then copies B K-major at any M)."""
    fam = family(mode)
    copy_a = copy_b = ""
    given_a, given_b = _layout(sa), _layout(sb)   # the operands' layouts as given
    if gemv_rows(mode, M, N, K) and has_tma and K > 0 \
            and given_b in ("r", "c") and (given_b == "c" or N % 4 == 0) \
            and (M == 1 or given_a == "r"):
        # fp32 inputs at one or two rows (`gemv_rows`): a read of B, on the gemv variant,
        # operands as they are (it reads either major order). In IEEE fp32, where the
        # tiled kernel's thinnest dot is 16 rows: 1 x 4096 x 4096 ran 0.80 of cuBLAS on
        # it, 0.96 on gemv; 2 x 4096 x 4096 2.59 (x1.22); rc and cc x1.10-1.55 (session
        # 21, calls C, D and F). Its loads of B vectorise where B's rows start on 16 bytes
        # (else B is copied so, as the TMA path copies it) and, B row-major, N is a
        # multiple of 4 (1 x 333 x 1999: the other path). A column-major A beyond one row
        # is not measured on it (its two-row tiles ran 2 x 4096 x 4096 cr at x0.09,
        # session 21 call D): the other path.
        copy_b = "aligned" if max(sb) * elem % 16 else ""
        ld_b = _ld_class(sb, N if given_b == "r" else K, copy_b, elem, cached)
        bucket = f"{fam} {mode.name} {given_a}{given_b} gemv ld{ld_b}"
        return fam, _key(bucket, M, N, K, sa, sb), bucket, "", copy_b, ("gemv",)
    # The tiled kernel's loads would be scalar: a thin-M call takes TMA too (with copies).
    slow = not _pointer_fast(M, N, given_a, given_b,
                             min(_ld_class(sa, 0, "", elem), _ld_class(sb, 0, "", elem)))
    kmajor = _needs_kmajor(mode, cap)
    if kmajor:
        # fp8 with kept copies: B K-major at any M, for the TMA variant's wgmma (a decode-
        # like call's copy is paid once, as the vendor's K-major fp8 B is made once), and
        # A at any N alike: a thin-N fp8 call kept A column-major (wgmma's MN-major fp8
        # path), 11008 x 32 x 4096 cr at 0.41 of cuBLAS on an H100 (session 79, call B).
        keep = cached and mode.scaled
        copy_a = "kmajor" if sa[1] != 1 and (N >= _COPY_MIN_DIM or slow or keep) else ""
        copy_b = "kmajor" if sb[0] != 1 and (M >= WGMMA_M or slow or keep) else ""
    ieee = on_fma_units(mode)
    if ieee and has_tma:
        # IEEE fp32 runs on FMA units, whose outer products read a column of A and a row of
        # B per step: a column-major B is read badly (rc 4096^3: 0.44 of cuBLAS, rr 0.83,
        # session 5; holdout4 thin rc 0.22-0.39, session 20), so it is copied row-major
        # (~1% of the GEMM) by the reuse rule, or at any M when kept (a weight's copy is
        # paid once). A column-major A is the FMA units' own order (4096^3 cr ran 0.92 of
        # cuBLAS on the tiled kernel, rr 0.85: session 20, call C) and stays, except beside
        # a column-major B (cc copies both and runs row-major on TMA: holdout4 cc 0.23-0.41
        # -> 0.60-0.96, call C) or where the tiled kernel's loads would be scalar (N not a
        # multiple of 16: 752 x 659 x 133 cr ran 0.48 as it is, 0.80 copied, call D).
        if given_b == "c" and (M >= _COPY_MIN_DIM or cached):
            copy_b = "rowmajor"
        if given_a == "c" and N >= _COPY_MIN_DIM and (copy_b or slow):
            copy_a = "rowmajor"
        # the copies as the tiled kernel would read them: a row-major B wrapping at an N
        # not a multiple of 16 takes scalar loads, so TMA too (fp32 17 x 1000 x 2048 rc on
        # the tiled kernel over a copied B: 0.43 of cuBLAS, x0.63; session 20, call B)
        slow = slow or not _pointer_fast(M, N, "r" if copy_a else given_a,
                                         "r" if copy_b else given_b, 16)
    ok_a = copy_a != "" or (aligned[0] and describable((M, K), sa, elem) is not None)
    ok_b = copy_b != "" or (aligned[1] and describable((K, N), sb, elem) is not None)
    # fp8 with a K-major B and thin M: the tiled kernel ran at 0.01-0.33 of cuBLAS (session
    # 9 holdout, M = 26-70), the TMA variant fp8 K-major at 0.7-1.0 elsewhere.
    fp8_kb = mode.scaled and kmajor and (sb[0] == 1 or copy_b == "kmajor")
    # 16-bit at thin M above decode's: TMA tiles (64 rows, K split) beside the tiled
    # kernel's thin ones, the table choosing per key (session 19, calls A and C: bf16 48 x
    # 4096 x 4096 0.59 -> 1.00 of cuBLAS, 32 x 3504 x 2544 0.79 -> 0.92). At M <= 16 the
    # tiled kernel's 16-row tiles were fastest or tied on every row-major shape measured,
    # and TMA tiles borrowed by LLM decode shapes ran x0.92-0.97. Operands as they are.
    copies_for_tma = M >= WGMMA_M or slow or fp8_kb
    # A column-major B (x @ W.T of an nn.Linear weight) at thin M, decode's too: TMA only.
    # The tiled kernel ran 16-bit LLM decode shapes at 0.31-0.50 of cuBLAS (session 20,
    # call A); TMA split-K of 64x128x128 ran 16 and 1 x 4096 x 4096 at 1.02 where the
    # tiled kernel's best named tile ran 0.84 and 0.70 (call B).
    tma_m = copies_for_tma or (fam == "16bit" and (M > _DECODE_M or given_b == "c"))
    if has_tma and copies_for_tma:
        if not ok_a and (N >= _COPY_MIN_DIM or slow):
            copy_a, ok_a = "aligned", True
        if not ok_b and (M >= _COPY_MIN_DIM or slow):
            copy_b, ok_b = "aligned", True
    la = "r" if copy_a else given_a
    lb = "c" if b_kmajor_after(copy_b, sb) else "r" if copy_b else given_b
    # IEEE fp32 runs on FMA units, which read a transposed shared-memory tile badly
    # (6 TFLOP/s for cr/rc on the H200, session 5): TMA only for row-major A and B.
    natural = not ieee or la + lb == "rr"
    # A descriptor needs every dimension > 0: K = 0 (a zero result) takes the tiled kernel.
    variants = ("tma", "tiled") if has_tma and ok_a and ok_b and tma_m and K > 0 \
        and natural else ("tiled",)
    def ld_of(copy_a: str, copy_b: str) -> int:   # the bucket's row alignment
        return min(_ld_class(sa, K if la == "r" else M, copy_a, elem, cached),
                   _ld_class(sb, N if lb == "r" else K, copy_b, elem, cached))

    ld = ld_of(copy_a, copy_b)
    # Where the tiled kernel is slow, TMA only: scalar pointer loads, fp8_kb, or 16-bit
    # thin M with B column-major.
    thin_kb = fam == "16bit" and given_b == "c" and M < WGMMA_M
    if variants[0] == "tma" and (not _pointer_fast(M, N, la, lb, ld) or (fp8_kb and M < 128)
                                 or thin_kb):
        variants = ("tma",)
    if variants[0] == "tma":   # split-K, wide and hybrid tiles run wherever TMA does; the
        # tall form (C.T = B.T @ A.T) where B is K-major, so that its A operand, B.T, is
        # too (kernels/steps.py: 16-bit tall blocks over a row-major B cost ~1.2x), and
        # 16-bit rr, where the lookup offers it in one wave only (kernels/wide_forms.py
        # ONE_WAVE_16_128: 320 rows tall over a row-major B ran as fast as 320 wide)
        tall = lb == "c" or (fam == "16bit" and la + lb == "rr")
        variants = (*variants, "tma_split", "tma_wide", *(("tma_tall",) if tall else ()),
                    "tma_hybrid")
        if cached:  # kept copies: every operand the descriptors read on whole 128 B lines
            copy_a = copy_a or ("pitch" if max(sa) * elem % LINE else "")
            # and B, where a tile may read past N (`reads_room`), copied with zeros there
            copy_b = copy_b or ("pitch" if max(sb) * elem % LINE or reads_room(N) else "")
            ld = ld_of(copy_a, copy_b)
    bucket = f"{fam} {mode.name} {la}{lb} {'tma' if variants[0] == 'tma' else 'ptr'} ld{ld}"
    if cap[0] == 9 and ws_forms.kind_of(bucket):   # the warp-specialized kernel's own
        # entries (a tune times its tiles: configs.search_space) are read where its forms
        # run: Hopper only, its Gluon kernel is Hopper's wgmma (on an sm_100 its compile
        # aborted the process, LLVM "Cannot select"; a review)
        variants = (*variants, "tma_ws")
    return fam, _key(bucket, M, N, K, sa, sb), bucket, copy_a, copy_b, variants


def _key(bucket: str, M: int, N: int, K: int, sa: tuple, sb: tuple) -> str:
    """The tuning key: the bucket, the shape and the operands' strides."""
    return f"{bucket} | m{M} n{N} k{K} a{sa[0]},{sa[1]} b{sb[0]},{sb[1]}"


def _pointer_fast(M: int, N: int, la: str, lb: str, ld_bytes: int) -> bool:
    """Whether the tiled kernel's pointer loads vectorise: rows 16-byte aligned, and the
    dimension it wraps (offs % M, offs % N) along a contiguous axis a multiple of 16, the
    only divisibility Triton specialises on. Else its loads are scalar (session 9: bf16
    278 x 4538 x 313 on the tiled variant at 0.10 of the TMA variant's speed)."""
    return ld_bytes >= 16 and (la != "c" or M % 16 == 0) and (lb != "r" or N % 16 == 0)


def _ld_class(stride: tuple, cols: int, copied: str, elem: int, kept: bool = False) -> int:
    """Bytes the leading dimension is aligned to, up to 128: a padded lda (2056 bf16 =
    4112 bytes) runs at 0.65 of an aligned one on the H200, so it is its own bucket. A
    copy's pitch is its `cols` on 16 bytes, or on whole 128-byte lines when `kept`
    (`prepare`) or re-pitched."""
    line = copied == "pitch" or kept
    ld = pitch(cols, elem, LINE if line else 16) * elem if copied else max(stride) * elem
    # ld's lowest set bit is the largest power of two that divides it
    return min(ld & -ld, 128) if ld else 128


def b_kmajor_after(copy_b: str, stride: tuple) -> bool:
    """Whether B is copied K-major (column-major): asked for, or aligning a K-major B."""
    return copy_b == "kmajor" or (copy_b == "aligned" and stride[0] == 1)
