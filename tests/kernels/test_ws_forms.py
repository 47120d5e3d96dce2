"""kernels/ws_forms.py: which picks the warp-specialized kernel takes over, and with what
stages; the dispatcher gives a 16-bit row-major TMA pick that form (kernels/dispatch.py)."""

from dataclasses import replace

import pytest

from kernels import dispatch
from kernels import ws_forms as wf
from kernels.tile import TileConfig as T


@pytest.mark.parametrize(("pick", "form"), [
    (T(128, 128, 64, 8, 5, 4, "tma"), T(128, 128, 64, 8, 5, 8, "tma_ws")),      # any warps
    (T(128, 144, 64, 4, 5, 8, "tma_wide"), T(128, 144, 64, 4, 5, 8, "tma_ws")),  # GROUP_M kept
    (T(128, 160, 64, 8, 5, 8, "tma_wide"), T(128, 160, 64, 8, 5, 8, "tma_ws")),
    (T(128, 192, 64, 8, 3, 8, "tma_wide"), T(128, 192, 64, 8, 4, 8, "tma_ws")),  # its stages
    (T(128, 256, 64, 8, 3, 8, "tma"), None),                  # 256 wide: not measured faster
    (T(128, 128, 64, 8, 4, 8, "tma", occupancy=2), None),     # two programs an SM
    (T(128, 128, 128, 8, 3, 8, "tma"), None),                 # BLOCK_K 128
    (T(64, 128, 64, 8, 4, 4, "tma"), None),                   # 64 rows
    (T(128, 96, 64, 8, 4, 8, "tma_wide"), None),              # 64 + 32
    (T(128, 320, 64, 8, 3, 8, "tma_wide"), None),             # 256 + 64
    (T(128, 128, 64, 8, 4, 8, "tma_split", split_k=2), None),
    (T(128, 128, 64, 8, 4, 8, "tma_hybrid", split_k=2), None),
    (T(128, 128, 64, 8, 4, 8, "tiled"), None),
])
def test_form_takes_128_row_tiles_of_128_plus_at_most_64_columns(pick, form):
    assert wf.form(pick) == form


@pytest.mark.parametrize(("pick", "form"), [
    # fp8: 128 bytes deep, the stages of 1-byte operands beside a 16-bit C
    (T(128, 192, 128, 8, 3, 8, "tma_wide"), T(128, 192, 128, 8, 4, 8, "tma_ws")),
    (T(128, 144, 128, 8, 3, 8, "tma_wide"), T(128, 144, 128, 8, 5, 8, "tma_ws")),
    (T(128, 160, 128, 4, 5, 8, "tma_wide"), T(128, 160, 128, 4, 5, 8, "tma_ws")),
    (T(128, 128, 128, 8, 4, 4, "tma"), None),   # as fast as the 4-warp picks (session 51)
    (T(128, 128, 64, 8, 4, 4, "tma"), None),                  # 64 bytes deep
    (T(128, 128, 256, 8, 3, 8, "tma"), None),                 # 256 bytes deep
    (T(128, 256, 128, 8, 3, 8, "tma"), None),                 # 256 wide: not measured
    (T(64, 128, 128, 8, 4, 4, "tma"), None),
])
def test_an_fp8_form_is_128_bytes_deep(pick, form):
    assert wf.form(pick, wf.FP8) == form
    assert form is None or wf.fits(form, 1)


def test_stages_fit_beside_c_and_the_tile_checks():
    for bn, bn1 in ((64, 0), (128, 0), (256, 0), (128, 16), (128, 64)):
        s = wf.stages_for(bn, block_n1=bn1)
        cols = bn + bn1
        used = s * (wf.BLOCK_M * wf.BLOCK_K + wf.BLOCK_K * cols) * 2 + wf.BLOCK_M * cols * 2
        assert 2 <= s <= 6 and used <= wf.SMEM - 4096
    assert (wf.stages_for(128), wf.stages_for(128, block_n1=64), wf.stages_for(256)) == (5, 4, 3)
    # fp8 operands (1 byte), C in bf16: 128x128x128 holds 5 stages where 16-bit holds 2
    assert (wf.stages_for(128, block_k=128, elem=1), wf.stages_for(128, block_k=128)) == (5, 2)
    assert wf.parts(T(128, 144, 64, 8, 5, 8, "tma_ws")) == (128, 16)
    assert wf.parts(T(128, 128, 64, 8, 5, 8, "tma_ws")) == (128, 0)
    assert wf.fits(T(128, 192, 64, 8, 4, 8, "tma_ws"))
    assert not wf.fits(T(128, 192, 64, 8, 4, 4, "tma_ws"))   # 4 warps: not this kernel's
    assert wf.fits(T(64, 64, 128, 8, 3, 4, "tma_ws", occupancy=2))   # a warpgroup, twice
    assert wf.fits(T(128, 128, 128, 8, 2, 8, "tma_ws"))
    assert wf.fits(T(128, 256, 64, 8, 3, 8, "tma_ws"))       # one 256-wide box (matmul_ws)
    # fp8 128x256x128: 3 stages of 1-byte operands, one of 16-bit ones
    assert wf.fits(T(128, 256, 128, 8, 3, 8, "tma_ws"), 1)
    assert not wf.fits(T(128, 256, 128, 8, 3, 8, "tma_ws"))
    assert wf.stages(T(128, 256, 128, 8, 6, 8, "tma_ws"), 1) == 3
    assert wf.parts(T(128, 256, 64, 8, 3, 8, "tma_ws")) == (256, 0)
    assert not wf.fits(T(64, 64, 128, 8, 3, 8, "tma_ws"))     # 64 rows: one warpgroup
    assert not wf.fits(T(128, 128, 64, 8, 3, 8, "tma_ws", occupancy=2))   # registers
    assert not wf.fits(T(64, 128, 128, 8, 3, 4, "tma_ws", occupancy=2))   # shared memory
    assert not wf.fits(T(64, 144, 64, 8, 3, 4, "tma_ws"))     # wide only at 128 + rest
    assert (wf.max_regs(128), wf.max_regs(64), wf.max_regs(64, 2)) == (168, 240, 128)


def test_a_ws_tile_is_128_or_a_power_of_two_and_a_smaller_one_wide():
    T(128, 144, 64, 8, 5, 8, "tma_ws")
    with pytest.raises(ValueError, match="power of two"):
        T(128, 136, 64, 8, 5, 8, "tma_ws")


@pytest.mark.parametrize(("bucket", "ws"), [
    ("16bit bf16 rr tma ld128", True),
    ("16bit fp16 rr tma ld16", True),
    ("16bit bf16 rc tma ld128", True),     # B column-major (x @ W.T): session 50 run 6
    ("16bit bf16 cr tma ld128", False),    # A column-major: the kernel reads A K-major
    ("16bit bf16 rr ptr ld128", False),
    ("fp8 fp8 rc tma ld128", True),        # B K-major, as fp8's bucket copies it
    ("fp8 fp8 rr tma ld128", False),       # the kernel reads fp8's B K-major only
    ("fp8 fp8 rc ptr ld128", False),
])
def test_the_dispatcher_gives_16_bit_row_major_tma_picks_their_form(bucket, ws):
    fp8 = bucket.startswith("fp8")
    pick = T(128, 144, 128, 8, 5, 8, "tma_wide") if fp8 else T(128, 128, 64, 8, 5, 4, "tma")
    got = dispatch._ws(pick, bucket)
    assert (got.variant == "tma_ws") is ws and (got is pick) is not ws


def test_a_tile_the_kernel_cannot_take_runs_its_tma_form():
    from kernels.matmul_ws import fallback
    assert fallback(T(64, 64, 128, 8, 3, 4, "tma_ws", occupancy=2)) == \
        T(64, 64, 128, 8, 3, 4, "tma", occupancy=2)
    assert fallback(T(128, 144, 64, 8, 5, 8, "tma_ws")) == T(128, 144, 64, 8, 5, 8, "tma_wide")


def test_a_lookup_prices_a_16_bit_row_major_tile_at_its_forms_speed():
    """Table entries are tuned on plain tiles; a 16-bit rr TMA pick runs warp-specialized,
    faster by its form's measured GAIN (128x192 more than 128x128), so the lookup
    divides each option's price by it (session 50: 7160 x 1296 x 6272 bf16 priced
    128x192 172 us against 128x128's 185, ran them 158 and 181 warp-specialized)."""
    from kernels import pricing, table

    rr, rc = wf.GAIN["rr"], wf.GAIN["rc"]
    assert wf.gain(T(128, 128, 64, 8, 4, 4, "tma")) == rr[128] > 1
    assert wf.gain(T(128, 192, 64, 8, 3, 8, "tma_wide")) == rr[192] > rr[128]
    assert wf.gain(T(128, 192, 64, 8, 3, 8, "tma_wide"), "rc") == rc[192] > 1
    assert wf.gain(T(128, 160, 64, 8, 4, 8, "tma_wide")) == rr[160] > 1
    assert wf.gain(T(128, 160, 64, 8, 4, 8, "tma_wide"), "rc") == rc[160] == 1.0   # its form,
    # uncredited: credited x1.099, rc 128x144 picks moved to it ran x0.992 (session 51)
    assert wf.form(T(128, 160, 64, 8, 4, 8, "tma_wide"), "rc").variant == "tma_ws"
    for plain, layout in ((T(128, 128, 64, 8, 4, 4, "tma"), "cr"),        # no form there
                          (T(128, 256, 64, 8, 3, 8, "tma_split", split_k=2), "rr"),
                          (T(64, 256, 64, 8, 3, 4, "tma"), "rr"),         # 64 rows
                          (T(64, 128, 128, 8, 4, 4, "tma"), "rr"),
                          (T(128, 128, 64, 8, 4, 8, "tma_hybrid", split_k=2), "rr")):
        assert wf.gain(plain, layout) == 1.0
    # a plain 128x256 tile and its hybrid: the 128x128 form's credit, so the two compare
    # as the table measured them (moves between them ran x0.97, session 50 runs 3-4)
    assert wf.gain(T(128, 256, 64, 8, 3, 8, "tma")) == rr[128]
    assert wf.gain(T(128, 256, 64, 8, 3, 8, "tma_hybrid", split_k=3), "rc") == rc[128]
    # fp8: its own gains, on tiles 128 bytes deep (a 16-bit form's tile is not fp8's)
    fp8 = wf.GAIN[wf.FP8]
    assert wf.gain(T(128, 192, 128, 8, 3, 8, "tma_wide"), wf.FP8) == fp8[192] > fp8[144] > 1
    for plain in (T(128, 256, 128, 8, 3, 8, "tma"),    # its peer, 128x128, has no form
                  T(128, 128, 128, 8, 3, 8, "tma"), T(128, 192, 64, 8, 3, 8, "tma_wide")):
        assert wf.gain(plain, wf.FP8) == 1.0
    assert wf.gain(T(128, 128, 128, 8, 3, 8, "tma")) == 1.0   # 16-bit: 128 deep, no form
    chip = pricing.chip_for(132, wf.SMEM, "16bit", "16bit bf16 rr tma ld128")
    assert chip.ws == "rr"
    assert pricing.chip_for(132, wf.SMEM, "16bit", "16bit fp16 rc tma ld16").ws == "rc"
    assert pricing.chip_for(132, wf.SMEM, "fp8", "fp8 fp8 rc tma ld128").ws == wf.FP8
    for bucket in ("16bit bf16 cr tma ld128", "16bit bf16 rr ptr ld128", "fp8 fp8 rr tma ld16"):
        assert not pricing.chip_for(132, wf.SMEM, bucket.split()[0], bucket).ws
    tile = T(128, 128, 64, 8, 4, 4, "tma")
    row = table._Row(tile, (2880, 2880, 4096), table.regime(2880, 2880, 4096), False, 0.1217)
    args = ([row], 7160, 1296, 6272, ("tma", "tma_wide"))
    ws = {c: ms for ms, c, _ in pricing.priced(*args, chip)}
    plain = {c: ms for ms, c, _ in pricing.priced(*args, replace(chip, ws=""))}
    assert ws.keys() == plain.keys() and tile in ws
    for c in ws:
        assert ws[c] == pytest.approx(plain[c] / wf.gain(c))


@pytest.mark.parametrize("kind", wf.KINDS)
def test_a_pick_runs_its_form_only_where_gain_lists_its_width(kind):
    """The form where it was measured: GAIN's widths for the kind, each a gain over 1."""
    deep = wf.block_k_of(wf.elem_of(kind))
    for width in (128, 144, 160, 192):
        pick = T(128, width, deep, 8, 4, 8, "tma" if width == 128 else "tma_wide")
        got = wf.form(pick, kind)
        assert (got is not None) is (width in wf.GAIN[kind])
        assert wf.gain(pick, kind) == wf.GAIN[kind].get(width, 1.0) >= 1.0


@pytest.mark.parametrize("elem", [2, 1])
def test_a_tune_searches_every_width_the_kernel_takes_at_the_stages_that_fit(elem):
    tiles = wf.search_tiles(elem)
    tall = [c for c in tiles if c.block_m == 128]
    assert [c.block_n for c in tall] == [128, 144, 160, 192, 256]
    assert all(c.block_k * elem == 128 and c.num_warps == 8 for c in tall)
    assert all(wf.fits(c, elem) and 2 <= c.num_stages <= 5 for c in tiles)
    assert all(c.num_stages == min(5, wf._most_stages(c, elem)) for c in tiles)
    short = [c for c in tiles if c.block_m == 64]   # 16-bit only: session 49 ran them
    assert len(short) == (2 if elem == 2 else 0)
    assert all(c.block_m == 64 for c in wf.search_tiles(elem, rows=64))
    # a tuned `tma_ws` entry is priced as it ran: no credit on top
    assert all(wf.gain(c, kind) == 1.0 for c in tiles for kind in wf.KINDS)


@pytest.mark.parametrize(("m", "n", "k", "sms", "kind", "plain"), [
    (2264, 616, 136, 132, "rr", True),     # 90 tiles at K = 136: plain at 4 warps
    (1784, 968, 512, 132, "rr", True),     # K = SHORT_K
    (1784, 968, 520, 132, "rr", False),    # past it: the form
    (1896, 1432, 344, 132, "rr", False),   # 180 tiles: two a program, the form
    (1896, 1432, 344, 200, "rr", True),    # ...where SMs outnumber them
    (2264, 616, 136, 132, "rc", True),     # B column-major too (session 55, call 4)
    (2264, 616, 136, 0, "rr", False),      # no shape given: the form, as before
])
def test_a_128x128_pick_one_a_program_over_a_short_k_runs_plain_at_4_warps(
        m, n, k, sms, kind, plain):
    pick = T(128, 128, 64, 8, 5, 8, "tma")
    got = wf.form(pick, kind, m, n, k, sms)
    assert got == (T(128, 128, 64, 8, 4, 4, "tma") if plain else wf.form(pick, kind))
    assert got.variant == ("tma" if plain else "tma_ws")
    # the pick at those warps and stages already: no form, it runs as it is
    assert wf.form(T(128, 128, 64, 8, 4, 4, "tma"), kind, m, n, k, sms) is None or not plain
    # wide tiles keep their form: only 128x128 was measured plain
    wide = T(128, 192, 64, 8, 4, 8, "tma_wide")
    assert wf.form(wide, kind, m, n, k, sms).variant == "tma_ws"


def test_the_dispatcher_runs_a_short_k_one_wave_pick_plain():
    pick, bucket = T(128, 128, 64, 8, 5, 8, "tma"), "16bit bf16 rr tma ld128"
    assert dispatch._ws(pick, bucket, 1016, 1384, 296, 132) == T(128, 128, 64, 8, 4, 4, "tma")
    assert dispatch._ws(pick, bucket, 1016, 1384, 2960, 132).variant == "tma_ws"
    assert dispatch._ws(pick, "fp8 fp8 rc tma ld128", 1016, 1384, 296, 132) is pick
