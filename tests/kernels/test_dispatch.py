"""kernels/dispatch.py: a call's plan (the table's or the heuristic's tile, its form), its
operand copies, and the interpreter's plan on the CPU; the decisions before the tile are
kernels/decide.py's (test_decide)."""

import pytest
import torch

from kernels import dispatch, past_n
from kernels.configs import INTERPRETER_CONFIG
from kernels.modes import MODES
from tests.kernels.test_decide import AMPERE, TMA, TMA_TILED, _decide


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


SMALL = (512, 512)   # M, N below FP8_SPLIT_TILE_MIN: a forced split is the pick's own


def _tile(variant: str = "tma", split: int = 1, block_k: int = 64):
    from kernels.tile import TileConfig

    return TileConfig(128, 256, block_k, 8, 4, 8, variant, split)


@pytest.mark.parametrize("k,split", [(28673, 2), (32768, 2), (32769, 3), (65536, 4)])
def test_an_fp8_pick_summing_past_the_unsplit_range_is_split_to_ranges_within_it(k, split):
    got = dispatch.fast_ranges(_tile(), "fp8", *SMALL, k, TMA)
    assert got == _tile("tma_split", split) and -(-k // got.split_k) <= dispatch.FP8_MAX_RANGE
    # a split pick whose ranges are too long is split further; the tiled kernel's its way
    longer = dispatch.fast_ranges(_tile("tma_split", 2), "fp8", *SMALL, 2 * k, TMA)
    assert longer.variant == "tma_split" and -(-2 * k // longer.split_k) <= \
        dispatch.FP8_MAX_RANGE < -(-2 * k // (longer.split_k - 1))   # the fewest ranges
    assert dispatch.fast_ranges(_tile("tiled"), "fp8", *SMALL, k, TMA) == _tile("tiled", split)


@pytest.mark.parametrize("m,n", [SMALL, (5120, 5120)])
def test_an_fp8_hybrid_pick_is_split_by_its_unsplit_head_not_its_tails_split(m, n):
    """A hybrid tile's head runs `tma` over all of K; its split_k is the tail's. 132 of 486
    fp8 shapes of K >= 30,720 looked up in the H100 table were hybrid picks whose
    head summed all of K (65,536: past fp8's band) in the fast accumulator; fast_ranges
    took K / split_k and left them so (a review)."""
    from kernels.tile import TileConfig

    hybrid = TileConfig(128, 256, 128, 8, 3, 8, "tma_hybrid", 6)
    variants = TMA   # (hybrid among them)
    for sms in (132, 0):
        got = dispatch.fast_ranges(hybrid, "fp8", m, n, 65536, variants, 232448, sms)
        assert got.variant == "tma_split"
        assert dispatch.longest_range(got, 65536) <= dispatch.FP8_MAX_RANGE
    assert dispatch.longest_range(hybrid, 65536) == 65536
    assert dispatch.fast_ranges(hybrid, "fp8", m, n, dispatch.FP8_UNSPLIT_MAX, variants,
                                232448, 132) is hybrid


def test_picks_within_the_unsplit_range_or_of_other_modes_or_forms_stay_as_they_are():
    from kernels.tile import TileConfig

    short = _tile()
    assert dispatch.FP8_MAX_RANGE < dispatch.FP8_UNSPLIT_MAX
    # ranges past FP8_MAX_RANGE but within FP8_UNSPLIT_MAX: the fast sum passes with margin
    assert dispatch.fast_ranges(short, "fp8", *SMALL, dispatch.FP8_UNSPLIT_MAX, TMA) is short
    split2 = _tile("tma_split", 2)
    assert dispatch.fast_ranges(split2, "fp8", *SMALL, 2 * dispatch.FP8_UNSPLIT_MAX, TMA) is split2
    assert dispatch.fast_ranges(short, "16bit", *SMALL, 65536, TMA) is short     # fp32 sums
    wide = TileConfig(128, 384, 64, 8, 3, 8, "tma_wide")
    assert dispatch.fast_ranges(wide, "fp8", *SMALL, 65536, TMA) is wide          # no split form
    assert dispatch.fast_ranges(short, "fp8", *SMALL, 65536, ("tma", "tiled")) is short   # none
    ws = TileConfig(128, 192, 64, 8, 3, 8, "tma_ws")    # BLOCK_N of three 64-wide parts
    assert dispatch.fast_ranges(ws, "fp8", *SMALL, 65536, TMA) is ws
    ws256 = TileConfig(128, 256, 64, 8, 4, 8, "tma_ws")
    assert dispatch.fast_ranges(ws256, "fp8", *SMALL, 65536, TMA) == _tile("tma_split", 4)


@pytest.mark.parametrize("m,n", [SMALL, (2048, 2048)])
def test_an_fp8_pick_past_max_tma_split_ranges_is_split_as_far_as_a_split_goes(m, n):
    """K past MAX_TMA_SPLIT ranges of FP8_MAX_RANGE: the pick split MAX_TMA_SPLIT ways
    (ranges within FP8_UNSPLIT_MAX up to 64 x 28,672), not left unsplit: fast_ranges
    returned the pick there, and 2048 x 2048 x 1,052,672 summed all of K in the fast
    accumulator where 1,048,576 ran 64 ranges of 16,384 (a review)."""
    from kernels.tile import MAX_TMA_SPLIT, TileConfig

    too_long = (MAX_TMA_SPLIT + 1) * dispatch.FP8_MAX_RANGE   # more ranges than a split has
    for k in (too_long, MAX_TMA_SPLIT * dispatch.FP8_UNSPLIT_MAX):
        for smem, sms in ((0, 0), (232448, 132)):
            got = dispatch.fast_ranges(_tile(), "fp8", m, n, k, TMA, smem, sms)
            assert got.variant == "tma_split" and got.split_k == MAX_TMA_SPLIT
            assert dispatch.longest_range(got, k) <= dispatch.FP8_UNSPLIT_MAX
    # a pick with no split form stays where the chip holds no split tile; other modes'
    # picks are not split
    wide = TileConfig(128, 384, 64, 8, 3, 8, "tma_wide")
    assert dispatch.fast_ranges(wide, "fp8", m, n, too_long, TMA) is wide
    assert dispatch.fast_ranges(_tile(), "16bit", m, n, too_long, TMA) == _tile()


def test_a_forced_fp8_split_of_a_large_output_runs_the_split_tile_where_the_chip_holds_it():
    """FP8_SPLIT_TILE (measured faster than the pick's own split on outputs of 1024 x 1024
    and more, session 63) at the rule's split; a smaller output, a chip without its shared
    memory or a call without `tma_split` keeps the pick's own split."""
    from kernels.tile import TileConfig, replace

    pick = TileConfig(128, 128, 128, 8, 4, 8, "tma")
    h200 = 232448
    got = dispatch.fast_ranges(pick, "fp8", 2048, 2048, 65536, TMA, h200)
    assert got == replace(dispatch.FP8_SPLIT_TILE, split_k=4)
    assert dispatch.fast_ranges(pick, "fp8", 1024, 4096, 32768, TMA, h200).split_k == 2
    own = replace(pick, variant="tma_split", split_k=4)
    assert dispatch.fast_ranges(pick, "fp8", 512, 4096, 65536, TMA, h200) == own
    assert dispatch.fast_ranges(pick, "fp8", 2048, 2048, 65536, TMA, 0) == own
    assert dispatch.fast_ranges(pick, "fp8", 2048, 2048, 65536, TMA, 99 * 1024) == own
    assert dispatch.fast_ranges(pick, "fp8", 2048, 2048, 28672, TMA, h200) is pick


def test_a_forced_fp8_split_of_a_large_output_runs_the_half_width_tile_where_its_waves_cost_less():
    """Outputs of 1024 x 1024 or more: FP8_SPLIT_ONE_WAVE where its waves are fewer than
    FP8_SPLIT_TILE's times FP8_SPLIT_PROGRAM_COST (1024 x 1024 x 32768: one against one;
    1536 x 1536 x 32768: three against two), else FP8_SPLIT_TILE (no SM count known: it).
    Smaller outputs: FP8_SPLIT_ONE_WAVE where its waves load less than the pick's own
    split's (sessions 63-64's measured orders)."""
    from kernels.tile import TileConfig, replace, usable

    pick, h200 = TileConfig(128, 128, 128, 8, 4, 8, "tma"), 232448
    one_wave = dispatch.FP8_SPLIT_ONE_WAVE
    assert usable(one_wave, "fp8", h200)
    got = dispatch.fast_ranges(pick, "fp8", 1024, 1024, 32768, TMA, h200, 132)
    assert got == replace(one_wave, split_k=2) and dispatch._programs(got, 1024, 1024) == 128
    assert dispatch.fast_ranges(pick, "fp8", 1536, 1536, 32768, TMA, h200, 132) == got
    tile2 = replace(dispatch.FP8_SPLIT_TILE, split_k=2)
    assert dispatch.fast_ranges(pick, "fp8", 1024, 1024, 32768, TMA, h200, 127) == tile2
    assert dispatch.fast_ranges(pick, "fp8", 1024, 1024, 32768, TMA, h200) == tile2
    for m, n in ((1024, 1280), (1280, 1280), (1024, 2048), (2048, 2048), (4096, 4096)):
        assert dispatch.fast_ranges(pick, "fp8", m, n, 32768, TMA, h200, 132) == tile2
    tile3 = replace(dispatch.FP8_SPLIT_TILE, split_k=3)     # 2 waves against 1 x 1.6
    assert dispatch.fast_ranges(pick, "fp8", 1024, 1024, 49152, TMA, h200, 132) == tile3
    # below FP8_SPLIT_TILE_MIN: the half-width tile where its waves load fewer rows and
    # columns than the pick's own split's, the pick's own split on a tie
    wide = TileConfig(64, 128, 256, 8, 4, 4, "tma")
    assert dispatch.fast_ranges(wide, "fp8", 640, 640, 65536, TMA, h200, 132) == \
        replace(one_wave, split_k=4)                  # one wave of 256 against two of 192
    small = TileConfig(64, 64, 256, 8, 5, 4, "tma")
    own3 = replace(small, variant="tma_split", split_k=3)
    assert dispatch.fast_ranges(small, "fp8", 5216, 47, 34665, TMA, h200, 132) == own3
    own2 = replace(small, variant="tma_split", split_k=2)   # one of 128 against one of 256
    assert dispatch.fast_ranges(small, "fp8", 512, 512, 32768, TMA, h200, 132) == own2
    assert dispatch.fast_ranges(wide, "fp8", 640, 640, 65536, TMA, h200) == \
        replace(wide, variant="tma_split", split_k=4)      # no SM count: the pick's own


def test_a_pick_without_a_split_form_runs_the_half_width_split_whatever_the_sm_count():
    """A wide or three-part ws pick has no split form of its own: its fp8 ranges come
    from FP8_SPLIT_ONE_WAVE where the chip holds it, SM count known or not; where ranges of
    FP8_MAX_RANGE would pass MAX_TMA_SPLIT, that tile split MAX_TMA_SPLIT ways (it was the
    pick as it is, all of K in the fast accumulator: a review)."""
    from kernels.tile import MAX_TMA_SPLIT, TileConfig, replace

    h200 = 232448
    one4 = replace(dispatch.FP8_SPLIT_ONE_WAVE, split_k=4)
    for pick in (TileConfig(128, 384, 64, 8, 3, 8, "tma_wide"),
                 TileConfig(128, 192, 64, 8, 3, 8, "tma_ws")):
        for sms in (0, 132):
            assert dispatch.fast_ranges(pick, "fp8", 512, 512, 65536, TMA, h200, sms) == one4
        assert dispatch.fast_ranges(pick, "fp8", 512, 512, 65536, TMA, 0, 132) is pick
        too_long = (MAX_TMA_SPLIT + 1) * dispatch.FP8_MAX_RANGE
        assert dispatch.fast_ranges(pick, "fp8", 512, 512, too_long, TMA, h200, 132) == \
            replace(dispatch.FP8_SPLIT_ONE_WAVE, split_k=MAX_TMA_SPLIT)
    # a large output whose ranges of FP8_MAX_RANGE would pass MAX_TMA_SPLIT: a split tile
    # of MAX_TMA_SPLIT ranges, never an unsplit FP8_SPLIT_TILE nor the pick unsplit
    tma = TileConfig(128, 128, 128, 8, 4, 8, "tma")
    got = dispatch.fast_ranges(tma, "fp8", 2048, 2048, too_long, TMA, h200, 132)
    assert got.variant == "tma_split" and got.split_k == MAX_TMA_SPLIT


def test_split_ranges_takes_any_limit_and_leaves_a_pick_no_split_can_bring_within_it():
    """accum.py's `--max-range` asks it for other limits. A range shorter than two BLOCK_K
    blocks is no split's (`ranges_fit`): where no split of MAX_TMA_SPLIT at most keeps two
    blocks a range within the limit, the pick is left as it is."""
    assert dispatch.split_ranges(_tile(), 4096, TMA, 1024) == _tile("tma_split", 4)
    assert dispatch.split_ranges(_tile(), 4096, TMA, 1000) == _tile("tma_split", 5)
    pick = _tile()
    assert dispatch.split_ranges(pick, 4096, TMA, 64) is pick     # 64 ranges of one block
    assert dispatch.split_ranges(pick, 1024, TMA, 1) is pick


def test_a_split_is_cut_to_what_its_workspace_can_address():
    """fp32 16384 x 8192 x 32768 borrowed 8192^3's 4-way split (the regime caps output
    tiles) and fp8 32768^3 was forced to 2 ranges: launch raised "split less" (a review).
    The plan splits no more ways than split x M x N < 2**31; unsplit where 2 is too many."""
    from kernels.dispatch import WORKSPACE_MAX, within_workspace
    from kernels.tile import TileConfig

    split4 = TileConfig(64, 64, 32, 8, 4, 4, "tma_split", split_k=4)
    runs = ("tma", "tiled", "tma_split")
    got = within_workspace(split4, 16384, 32768, runs)    # 4 x 2**29 = 2**31: 3 ways fit
    assert (got.variant, got.split_k) == ("tma_split", 3) and 3 * 2**29 < WORKSPACE_MAX
    flat = within_workspace(split4, 32768, 32768, runs)   # 2 x 2**30: not even 2
    assert (flat.variant, flat.split_k) == ("tma", 1)
    assert flat.block_m == 64 and flat.block_k == 32 and flat.num_stages == 4
    assert within_workspace(split4, 8192, 16384, runs) is split4   # fits as it is
    tiled = TileConfig(128, 128, 32, 8, 4, 8, "tiled", split_k=8)
    assert within_workspace(tiled, 32768, 32768, runs).split_k == 1
    assert within_workspace(split4, 32768, 32768, ("tiled", "tma_split")) is split4
