"""kernels/dispatch.py: the per-call decisions (copies, variants, bucket) as pure logic
for a Hopper-like device, and the interpreter's plan on the CPU."""

import pytest
import torch

from kernels import dispatch, past_n
from kernels.configs import INTERPRETER_CONFIG
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
    return dispatch.decide(MODES[mode], cap, m, n, k, sa, sb, aligned, elem,
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


def test_kept_copies_of_b_hold_zeros_past_a_part_tile_of_n():
    # B's rows on whole lines (N = 448 bf16: 896 bytes) but N a part of PAD_N: kept, it is
    # copied once, with zeros past N for the TMA variants' last column of tiles
    cb, variants = _decide("bf16", 2048, 448, 2048, cached=True)[4:]
    assert cb == "pitch" and past_n.pads_b(cb, variants, 448)
    assert _decide("bf16", 2048, 448, 2048)[4] == ""                     # per call: as is
    assert not past_n.pads_b("pitch", variants, 512)                   # whole: no room
    # past 2048 columns no tile reads the room (b_extent): B stays as given, or its copy
    # unpadded
    assert _decide("bf16", 2048, 4160, 2048, cached=True)[4] == ""
    assert not past_n.pads_b("pitch", variants, 4097)
    assert not past_n.pads_b("pitch", ("tiled",), 448)                 # no descriptor
    assert not past_n.pads_b("", variants, 448)                        # the caller's B
    # a copy made per call anyway (fp8's K-major B) holds the zeros too: the copy kernel
    # writes them in its one pass
    _, _, _, _, cb, variants = _decide("fp8", 2048, 448, 2048, elem=1)
    assert cb == "kmajor" and past_n.pads_b(cb, variants, 448)
    p = dispatch.Plan("16bit", "k", "", "pitch", variants, INTERPRETER_CONFIG, "t",
                      pad_b=True)
    assert dispatch.b_room(p, 448) == 64 and dispatch.b_room(p, 4097) == 255
    assert dispatch.b_room(dispatch.Plan("16bit", "k", "", "pitch", variants,
                                         INTERPRETER_CONFIG, "t"), 448) == 0


def test_a_padded_copy_of_b_is_kept_apart_from_a_plain_one(device):
    b = torch.randn(37, 50, device=device)
    plain = dispatch.Plan("fp32", "k", "", "aligned", ("tma",), INTERPRETER_CONFIG, "t")
    padded = dispatch.Plan("fp32", "k", "", "aligned", ("tma",), INTERPRETER_CONFIG, "t",
                           pad_b=True)
    a = torch.randn(8, 37, device=device)
    try:
        _, b1 = dispatch.prepare(plain, a, b, cache=True)
        _, b2 = dispatch.prepare(padded, a, b, cache=True)
        _, b3 = dispatch.prepare(padded, a, b, cache=True)
    finally:
        dispatch.COPIES.clear()
    assert torch.equal(b1, b) and torch.equal(b2, b) and b3 is b2 and b1 is not b2
    room = past_n.PAD_N - 50
    assert torch.count_nonzero(b2.as_strided((37, 50 + room), b2.stride())[:, 50:]) == 0


def test_pointer_loads_vectorise_only_with_aligned_rows_and_wrapped_dims_of_16():
    fast = dispatch._pointer_fast
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


def test_ieee_fp32_copies_a_column_major_b_row_major(device):
    _, _, bucket, ca, cb, variants = _decide("fp32", 4096, 4096, 4096, b="c", elem=4)
    assert (ca, cb, variants) == ("", "rowmajor", TMA_TILED)
    assert bucket == "fp32 fp32 rr tma ld128"
    assert _decide("fp32", 16, 4096, 4096, b="c", elem=4)[4] == ""         # decode-like
    assert _decide("fp32", 16, 4096, 4096, b="c", elem=4, cached=True)[4] == "rowmajor"
    # a column-major A too, where N reuses it (session 20: holdout4 fp32 cc 0.23-0.41)
    _, _, bucket, ca, cb, variants = _decide("fp32", 1680, 4123, 1248, a="c", b="c", elem=4)
    assert (ca, cb, variants) == ("rowmajor", "rowmajor", TMA)
    assert bucket == "fp32 fp32 rr tma ld16"       # N = 4123: the copies' rows on 16 bytes
    # a copied B the tiled kernel would read with scalar loads (N = 1000): TMA too
    assert _decide("fp32", 17, 1000, 2048, b="c", elem=4, cached=True)[3:] == \
        ("", "rowmajor", TMA)
    assert _decide("fp32", 17, 1024, 2048, b="c", elem=4, cached=True)[3:] == \
        ("", "rowmajor", ("tiled",))
    assert _decide("tf32", 4096, 4096, 4096, b="c", elem=4)[4] == ""       # K-major already
    assert _decide("fp32", 4096, 4096, 4096, b="c", elem=4, cap=AMPERE)[4] == ""
    b = torch.randn(50, 37, device=device).t()                            # (37, 50) col-major
    p = dispatch.Plan("fp32", "k", "", "rowmajor", ("tma",), INTERPRETER_CONFIG, "t")
    _, b2 = dispatch.prepare(p, torch.randn(8, 37, device=device), b)   # the copy kernel
    assert torch.equal(b2, b) and b2.stride() == (52, 1)                  # row-major, padded


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
    assert dispatch.GEMV_TF32_MIN == 1024 * 4096


def test_gemv_candidates_are_gemv_tiles_the_heuristic_first():
    p = dispatch.Plan("fp32", "k", "", "", ("gemv",),
                      dispatch.fallback("fp32", 1, 4096, 4096, ("gemv",), 132, 232448, True),
                      "heuristic", True)
    assert p.pick.variant == "gemv" and p.pick.block_m == 1 and p.pick.split_k == 8
    got = dispatch.candidates(p, torch.device("cpu"), 1, 4096, 4096)   # 4 SMs, as a CPU counts
    assert got[0] == p.pick and len(got) > 1 and all(c.variant == "gemv" for c in got)


def test_only_ieee_fp32_plans_search_the_fma_tiles():
    a, b = torch.randn(40, 24), torch.randn(24, 56)
    assert dispatch.plan(MODES["fp32"], a, b).fma
    assert not dispatch.plan(MODES["tf32"], a, b).fma
    assert not dispatch.plan(MODES["tf32x3"], a, b).fma


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


def test_cpu_plan_is_the_interpreter_tile_and_the_only_candidate():
    a, b = torch.randn(40, 24), torch.randn(24, 56)
    p = dispatch.plan(MODES["fp32"], a, b)
    assert p.source == "interpreter" and p.pick == INTERPRETER_CONFIG
    assert dispatch.candidates(p, a.device, 40, 56, 24) == (INTERPRETER_CONFIG,)


def test_prepare_copies_to_aligned_k_major_operands(device):
    a = torch.randn(64, 44, device=device)[:, :37]     # lda 44, K=37
    b = torch.randn(37, 50, device=device)
    p = dispatch.Plan("fp32", "k", "aligned", "kmajor", ("tma",), INTERPRETER_CONFIG, "t")
    a2, b2 = dispatch.prepare(p, a, b)
    assert torch.equal(a2, a) and torch.equal(b2, b)
    assert a2.stride() == (40, 1)                      # 37 fp32 padded to 40 (160 bytes)
    assert b2.stride() == (1, 40)                      # column-major, K padded the same


def test_kept_copies_are_made_on_whole_lines(device):
    a = torch.randn(64, 44, device=device)[:, :37]     # lda 44, K=37
    b = torch.randn(37, 50, device=device)
    p = dispatch.Plan("fp32", "k", "aligned", "kmajor", ("tma",), INTERPRETER_CONFIG, "t")
    try:
        a2, b2 = dispatch.prepare(p, a, b, cache=True)
    finally:
        dispatch.COPIES.clear()
    assert torch.equal(a2, a) and torch.equal(b2, b)
    assert a2.stride() == (64, 1) and b2.stride() == (1, 64)   # 148 bytes -> 256


def test_prepare_re_pitches_each_operand_in_its_own_layout(device):
    a = torch.randn(24, 40, device=device).half()[:, :36]   # row-major, 80-byte rows
    b = torch.randn(48, 36, device=device).half().t()       # (36, 48) col-major, 72-byte pitch
    p = dispatch.Plan("16bit", "k", "pitch", "pitch", ("tma",), INTERPRETER_CONFIG, "t")
    a2, b2 = dispatch.prepare(p, a, b)
    assert torch.equal(a2, a) and torch.equal(b2, b)
    assert a2.stride() == (64, 1) and b2.stride() == (1, 64)   # 36 halves -> 128 bytes


def test_relayout_copies_any_view_to_an_aligned_row_major_matrix(device):
    from kernels.relayout import aligned_copy

    x = torch.randn(70, 90, device=device).half()
    for view in (x, x.t(), x[:, 3:40], x.t()[5:, :33]):
        y = aligned_copy(view)
        assert torch.equal(y, view) and y.stride(1) == 1 and y.stride(0) % 8 == 0


H200_SMEM, H200_SMS = 232448, 132


def _h200_pick(name, m, n, k, a="r", b="r", pad=0, cached=False, priced=False):
    """(family, bucket, variants, elem, pick) of a call as an H200 plans it: decide, then
    the committed table's lookup (`priced`: with the SMs and shared memory, so every
    derived form competes; else the nearest entry's tile) or the heuristic."""
    from kernels import table

    elem = {"fp8": 1, "bf16": 2, "fp16": 2}.get(name, 4)
    fam, _, bucket, _, _, variants = _decide(name, m, n, k, a=a, b=b, pad=pad, elem=elem,
                                             cached=cached)
    hw = dict(sms=H200_SMS, smem=H200_SMEM) if priced else {}
    found = table.lookup("NVIDIA H200", bucket, m, n, k, variants=variants, **hw)
    pick = found[0] if found else dispatch.fallback(
        fam, m, n, k, variants, H200_SMS, H200_SMEM, name == "fp32", name == "tf32x3")
    return fam, bucket, variants, elem, pick


@pytest.mark.parametrize("cached", [False, True])
def test_every_set_resolves_to_a_runnable_tile_on_the_committed_h200_table(cached):
    """decide + the committed table (or the heuristic) for every shape of every set and
    mode, as an H200 would, with copies kept (the harness) or not: the tile fits its
    shared memory and registers, and its variant is one the call may run (a tiled entry
    never reaches a TMA-only call)."""
    from gemmgate.shapes import SETS
    from kernels.tile import usable

    for shapes in SETS.values():
        for case in shapes:
            if 0 in (case.m, case.n, case.k):
                continue
            for name in ("fp32", "tf32", "tf32x3", "bf16", "fp16", "fp8"):
                fam, _, variants, _, tile = _h200_pick(
                    name, case.m, case.n, case.k, case.layout[0], case.layout[1], case.pad,
                    cached)
                assert usable(tile, fam, H200_SMEM) and tile.variant in variants, (case, name)


@pytest.mark.parametrize("cached", [True, False])
def test_random_calls_plan_a_runnable_tile_as_an_h200_prices_it(cached):
    """decide + the committed table's priced lookup (the SMs and shared memory given, so
    every derived form competes: re-splits, twins, wides, halves, one-wave forms, hybrids)
    + the warp-specialized form, on random shapes, layouts and row paddings in every mode:
    the tile the call runs fits the H200's shared memory and registers, and its variant is
    one the call may run."""
    import random

    from kernels import ws_forms
    from kernels.tile import usable

    rng = random.Random(52)
    for name in ("fp32", "tf32", "tf32x3", "bf16", "fp16", "fp8"):
        for _ in range(120):
            m, n, k = (rng.choice((rng.randint(1, 600), rng.randint(1, 9000))) for _ in range(3))
            a, b = rng.choice("rc"), rng.choice("rc")
            pad = rng.choice((0, 0, 1, 8, 40))
            fam, bucket, variants, elem, pick = _h200_pick(name, m, n, k, a, b, pad, cached,
                                                           priced=True)
            ran = dispatch._ws(pick, bucket)
            case = (name, m, n, k, a + b, pad, bucket, pick, ran)
            assert usable(pick, fam, H200_SMEM) and pick.variant in variants, case
            if ran is not pick:
                assert ran.variant == "tma_ws" and "tma_ws" in variants, case
                assert ws_forms.fits(ran, elem) and usable(ran, fam, H200_SMEM), case


def test_the_fallback_reads_b_s_major_order_from_the_bucket():
    """tf32x3's skinny tile depends on whether the kernel reads B K-major (copies made):
    the bucket's layouts word, as the lookup's pricing reads it."""
    from kernels.pricing import b_kmajor

    assert b_kmajor("fp32 tf32x3 rc ptr ld128")
    assert b_kmajor("fp32 tf32x3 cc ptr ld128")
    assert not b_kmajor("fp32 tf32x3 rr ptr ld128")
    assert not b_kmajor("fp32 tf32x3 cr ptr ld128")
    assert not b_kmajor("16bit")
    args = ("fp32", 16, 10240, 6144, ("tiled",), 132, 232448, False, True)
    assert dispatch.fallback(*args, b_kmajor=True).block_n == 64
    assert dispatch.fallback(*args).block_n == 128
