"""kernels/decide.py: the per-call decisions (copies, variants, bucket) as pure logic for
a Hopper-like device (`_decide` and the variant tuples are shared with test_dispatch)."""

from kernels import decide
from kernels.modes import MODES

HOPPER, AMPERE = (9, 0), (8, 0)

# the variants of a call TMA runs: with the tiled kernel (its pointer path fast) or without;
# with the tall form where B is K-major or 16-bit A and B are row-major (`_KB`)
TMA_TILED = ("tma", "tiled", "tma_split", "tma_wide", "tma_hybrid")
TMA = ("tma", "tma_split", "tma_wide", "tma_hybrid")
TMA_TILED_KB = ("tma", "tiled", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
TMA_KB = ("tma", "tma_split", "tma_wide", "tma_tall", "tma_hybrid")
WS = ("tma_ws",)   # where the warp-specialized kernel's forms run (ws_forms.kind_of): its
# tuned entries are read too


def _decide(mode, m, n, k, a="r", b="r", cap=HOPPER, pad=0, elem=2, aligned=(True, True),
            cached=False):
    sa = (k + pad, 1) if a == "r" else (1, m + pad)
    sb = (n + pad, 1) if b == "r" else (1, k + pad)
    return decide.decide(MODES[mode], cap, m, n, k, sa, sb, aligned, elem,
                         has_tma=cap >= HOPPER, cached=cached)


def test_aligned_16bit_goes_to_tma_without_copies():
    fam, key, bucket, ca, cb, variants = _decide("bf16", 4096, 4096, 4096)
    assert (fam, ca, cb, variants) == ("16bit", "", "", TMA_TILED_KB + WS)
    assert bucket == "16bit bf16 rr tma ld128"
    assert key == "16bit bf16 rr tma ld128 | m4096 n4096 k4096 a4096,1 b4096,1"
    assert _decide("bf16", 2048, 2048, 2048, pad=8)[2] == "16bit bf16 rr tma ld16"


def test_fp8_and_tf32_get_k_major_copies_only_when_reused():
    _, _, bucket, ca, cb, _ = _decide("fp8", 4096, 4096, 4096, elem=1)
    assert (ca, cb) == ("", "kmajor") and bucket == "fp8 fp8 rc tma ld128"   # B copied K-major
    _, _, _, ca, cb, _ = _decide("tf32", 16, 4096, 4096, a="c", elem=4)
    assert (ca, cb) == ("kmajor", "")   # skinny M: copying B would be all the work
    _, _, bucket, _, cb, _ = _decide("tf32", 64, 11008, 4096, elem=4)
    assert cb == "kmajor" and bucket.startswith("fp32 tf32 rc tma")   # M=64: TMA, K-major B
    assert _decide("fp8", 32, 4096, 4096, elem=1)[4] == ""              # pointer path keeps it
    _, _, _, ca, cb, _ = _decide("tf32x3", 4096, 4096, 4096, elem=4)
    assert cb == "kmajor"
    _, _, _, ca, cb, _ = _decide("fp8", 4096, 4096, 4096, elem=1, cap=(8, 9))
    assert (ca, cb) == ("", "")          # no wgmma before Hopper: nothing to copy for


def test_unaligned_leading_dimensions():
    # 1000 bf16 = 2000 bytes: describable as is; 4097 is not: a large GEMM gets aligned copies
    # N=1000 is not a multiple of 16: the tiled kernel's B loads would be scalar, TMA only
    assert _decide("bf16", 1000, 1000, 1000)[3:] == ("", "", TMA_KB + WS)
    assert _decide("bf16", 4097, 4095, 4093)[3:] == ("aligned", "aligned", TMA_KB + WS)
    # K=253: A (lda 506 bytes) is copied aligned, N=4096 reuses it; so is a skinny M's A,
    # whose pointer loads would be scalar (and the copy is small)
    assert _decide("bf16", 4096, 4096, 253)[3:] == ("aligned", "", TMA_TILED_KB + WS)
    assert _decide("bf16", 16, 4096, 253)[3:] == ("aligned", "", TMA_TILED_KB + WS)
    assert _decide("fp8", 1000, 1000, 1000, elem=1)[3:] == \
        ("aligned", "kmajor", TMA_TILED_KB + WS)
    # skinny M with aligned operands keeps its layout; 16-bit above decode's M runs TMA's
    # 64-row tiles (K split) beside the tiled kernel (session 19); decode-like 16-bit M,
    # tf32 and IEEE fp32 the tiled kernel only
    assert _decide("bf16", 17, 4096, 4096)[3:] == ("", "", TMA_TILED_KB + WS)
    assert _decide("fp16", 48, 4096, 4096)[2] == "16bit fp16 rr tma ld128"
    assert _decide("bf16", 16, 4096, 4096)[3:] == ("", "", ("tiled",))
    assert _decide("bf16", 1, 4096, 4096)[2] == "16bit bf16 rr ptr ld128"
    assert _decide("fp32", 32, 4096, 4096, elem=4)[3:] == ("", "", ("tiled",))
    assert _decide("tf32", 32, 4096, 4096, elem=4)[3:] == ("", "", ("tiled",))
    # skinny M, unaligned B (5523 bf16 = 11046 bytes): copied K-major for fp8's wgmma
    assert _decide("fp8", 26, 5523, 7310, elem=1)[3:] == ("aligned", "kmajor", TMA_KB + WS)
    # fp8, thin M, B given K-major: TMA only (the tiled kernel ran it at 0.01-0.33)
    assert _decide("fp8", 16, 4096, 4096, b="c", elem=1)[3:] == ("", "", TMA_KB + WS)
    assert _decide("fp8", 16, 4096, 4096, elem=1)[3:] == ("", "", ("tiled",))  # N-major B
    # ... unless copies are kept (cache_copies): then B is copied K-major once, and TMA runs
    for m in (1, 16, 32):
        _, _, bucket, ca, cb, variants = _decide("fp8", m, 4096, 4096, elem=1, cached=True)
        assert (ca, cb, variants) == ("", "kmajor", TMA_KB + WS)
        assert bucket == "fp8 fp8 rc tma ld128"
    # kept copies change nothing for 16-bit (no K-major rule) or where M reuses B anyway
    for m in (16, 32):
        assert _decide("bf16", m, 4096, 4096, cached=True)[3:] == \
            _decide("bf16", m, 4096, 4096)[3:]
    assert _decide("fp8", 256, 4096, 4096, elem=1, cached=True)[3:] == \
        _decide("fp8", 256, 4096, 4096, elem=1)[3:]
    # ... and A K-major at any N alike (thin-N cr kept A MN-major: 0.41 of cuBLAS,
    # session 79); not copied per call, where the copy would be all the work
    for n in (1, 16, 32):
        _, _, bucket, ca, cb, _ = _decide("fp8", 11008, n, 4096, a="c", elem=1, cached=True)
        assert ca == "kmajor" and cb in ("kmajor", "aligned") and bucket.startswith("fp8 fp8 rc")
        if n > 1:   # (one column: the pointer loads are scalar, so copied anyway)
            assert _decide("fp8", 11008, n, 4096, a="c", elem=1)[3] == ""
    # lda = 2056 (pad 8) bf16 = 4112 bytes: a multiple of 16, described as is
    assert _decide("bf16", 2048, 2048, 2048, pad=8)[5] == TMA_TILED_KB + WS
    assert _decide("bf16", 4096, 4096, 4096, aligned=(False, True))[3] == "aligned"


def test_kept_copies_put_every_descriptor_row_on_whole_128_byte_lines():
    # lda = ldb = 2056 bf16 = 4112 bytes: rows straddle L2 lines; kept copies re-pitch both
    _, _, bucket, ca, cb, variants = _decide("bf16", 2048, 2048, 2048, pad=8, cached=True)
    assert (ca, cb) == ("pitch", "pitch") and bucket == "16bit bf16 rr tma ld128"
    assert variants == TMA_TILED_KB + WS
    assert _decide("bf16", 2048, 2048, 2048, pad=8)[3:5] == ("", "")   # not kept: as is
    # 1000^3 bf16 (2000-byte rows), column-major A: re-pitched in its own layout
    _, _, bucket, ca, cb, _ = _decide("bf16", 1000, 1000, 1000, a="c", cached=True)
    assert (ca, cb) == ("pitch", "pitch") and bucket == "16bit bf16 cr tma ld128"
    # already on whole lines, or copied anyway (fp8's K-major B, A's aligned copy): as before
    assert _decide("bf16", 4096, 4096, 4096, cached=True)[3:5] == ("", "")
    _, _, bucket, ca, cb, _ = _decide("fp8", 1000, 1000, 1000, elem=1, cached=True)
    assert (ca, cb) == ("aligned", "kmajor") and bucket.endswith("ld128")   # kept: on lines
    assert _decide("fp8", 1000, 1000, 1000, elem=1)[2].endswith("ld16")    # per call: 16 B
    # thin 16-bit M reads B through descriptors too: kept, it is re-pitched once
    assert _decide("bf16", 32, 4096, 4096, pad=8, cached=True)[3:5] == ("pitch", "pitch")
    assert _decide("bf16", 32, 4096, 4096, pad=8)[3:5] == ("", "")     # per call: as is
    # only the pointer path runs (decode-like 16-bit M, skinny tf32): no descriptor, no copy
    assert _decide("bf16", 16, 4096, 4096, pad=8, cached=True)[3:] == ("", "", ("tiled",))
    assert _decide("tf32", 16, 4096, 4096, pad=8, elem=4, cached=True)[3:] == \
        ("", "", ("tiled",))


def test_pointer_loads_vectorise_only_with_aligned_rows_and_wrapped_dims_of_16():
    fast = decide._pointer_fast
    assert fast(4096, 4096, "r", "r", 128)
    assert not fast(4096, 4538, "r", "r", 128)       # B rows wrap at N = 4538
    assert fast(4096, 4538, "r", "c", 128)           # K-major B: contiguous along K
    assert not fast(4100, 4096, "c", "c", 128)       # column-major A wraps at M
    assert not fast(4096, 4096, "r", "r", 8)         # rows 8-byte aligned


def test_ieee_fp32_uses_tma_only_for_row_major_operands():
    assert _decide("fp32", 4096, 4096, 4096, elem=4)[5] == TMA_TILED
    # a column-major A beside a row-major B is the FMA units' own order: as it is, tiled;
    # copied row-major (TMA) where the tiled kernel's B loads would be scalar (N = 659)
    assert _decide("fp32", 4096, 4096, 4096, a="c", elem=4)[3:] == ("", "", ("tiled",))
    assert _decide("fp32", 752, 659, 133, a="c", elem=4)[3:6:2] == ("rowmajor",
                                                                   TMA)
    assert _decide("tf32", 4096, 4096, 4096, a="c", elem=4)[5] == \
        TMA_TILED_KB  # copied (B K-major: the tall form too)


def test_ieee_fp32_at_one_or_two_rows_runs_gemv_on_its_operands_as_they_are():
    for m, a, b in ((1, "r", "r"), (2, "r", "c"), (1, "c", "c")):
        fam, key, bucket, ca, cb, variants = _decide("fp32", m, 4096, 4096, a=a, b=b, elem=4,
                                                      cached=True)
        assert (ca, cb, variants) == ("", "", ("gemv",))
        assert bucket.startswith("fp32 fp32 ") and " gemv ld" in bucket
    assert _decide("fp32", 1, 1024, 333, elem=4)[2] == "fp32 fp32 rr gemv ld128"
    assert _decide("fp32", 1, 1000, 1000, elem=4)[3:] == ("", "", ("gemv",))  # N % 4 will do
    # B's rows off 16 bytes: copied aligned, as the TMA path would copy them (kept: on lines)
    assert _decide("fp32", 1, 4096, 4097, b="c", elem=4)[3:] == ("", "aligned", ("gemv",))
    assert _decide("fp32", 1, 4096, 4097, b="c", elem=4, cached=True)[2] == \
        "fp32 fp32 rc gemv ld128"
    # where its loads of B would be scalar anyway (N % 4), or A is column-major beyond one
    # row (not measured on gemv): the other path
    assert _decide("fp32", 1, 333, 1999, elem=4)[5] != ("gemv",)
    assert _decide("fp32", 2, 4096, 4096, a="c", elem=4)[5] != ("gemv",)
    assert _decide("fp32", 3, 4096, 4096, elem=4)[5] == ("tiled",)        # from 3 rows: tiled
    for mode in ("bf16", "fp8"):                                           # not fp32 inputs
        assert "gemv" not in _decide(mode, 1, 4096, 4096, elem=4)[5]
    assert _decide("fp32", 1, 4096, 0, elem=4)[5] == ("tiled",)           # K = 0: zeros
    assert _decide("fp32", 1, 4096, 4096, elem=4, cap=AMPERE)[5] == ("tiled",)  # measured on H200


def test_tf32x3_at_two_rows_and_tf32_at_one_row_over_a_large_b_run_gemv():
    """fp32 inputs on tensor cores take the gemv variant (its FMA products are exact in
    fp32) where it measured faster (session 46, call 3): tf32x3 up to GEMV_M rows, tf32
    one row of a B of GEMV_TF32_MIN elements or more (1 x 1000 x 1000 ran x0.72)."""
    for m in (1, 2):
        fam, _, bucket, _, _, variants = _decide("tf32x3", m, 4096, 4096, elem=4)
        assert variants == ("gemv",) and bucket == "fp32 tf32x3 rr gemv ld128"
    assert _decide("tf32x3", 3, 4096, 4096, elem=4)[5] != ("gemv",)
    assert _decide("tf32", 1, 4096, 4096, elem=4)[5] == ("gemv",)
    assert _decide("tf32", 1, 1024, 4096, elem=4)[5] == ("gemv",)   # GEMV_TF32_MIN itself
    assert _decide("tf32", 1, 1000, 1000, elem=4)[5] != ("gemv",)
    assert _decide("tf32", 2, 4096, 4096, elem=4)[5] != ("gemv",)
    assert decide.GEMV_TF32_MIN == 1024 * 4096


def test_skinny_m_zero_k_and_old_chips_use_the_tiled_kernel():
    assert _decide("bf16", 16, 4096, 4096)[5] == ("tiled",)
    # but x @ W.T (B column-major) at thin M, decode's too: TMA only (session 20)
    assert _decide("bf16", 16, 4096, 4096, b="c")[5] == TMA_KB + WS
    assert _decide("fp16", 1, 4096, 4096, b="c")[5] == TMA_KB + WS
    assert _decide("bf16", 48, 4096, 4096, a="c", b="c")[5] == TMA_KB   # cc: no forms
    assert _decide("bf16", 64, 4096, 4096, b="c")[5] == TMA_TILED_KB + WS
    assert _decide("tf32", 16, 4096, 4096, elem=4)[5] == ("tiled",)
    assert _decide("bf16", 4096, 4096, 0)[5] == ("tiled",)
    assert _decide("bf16", 4096, 4096, 4096, cap=AMPERE)[5] == ("tiled",)


def test_the_warp_specialized_kernel_is_planned_on_hopper_only():
    """Its Gluon kernel is Hopper's wgmma: on an sm_100 its compile aborted the process
    (LLVM "Cannot select", no exception to catch; a review). Plain TMA stays."""
    hopper = _decide("bf16", 2048, 2048, 2048)[5]
    later = _decide("bf16", 2048, 2048, 2048, cap=(10, 0))[5]
    assert "tma_ws" in hopper and "tma_ws" not in later
    assert set(later) == set(hopper) - {"tma_ws"}
