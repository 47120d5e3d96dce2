"""kernels/matmul_tma_wide.py: tiles a power of two plus a smaller one wide, as two parts
side by side; every part of C stored once, at its own columns."""

import pytest
import torch

from kernels import matmul_tma_wide as tw
from kernels.tile import TileConfig, c_by_pointer, usable, wide_parts
from tests.kernels.tma_helpers import (
    gpu,
    gpu_operands,
    interpreter,
    run_over_padded_b,
    run_recipe,
)

CPU_TILE = TileConfig(16, 48, 32, 8, 1, 4, "tma_wide")


@pytest.mark.parametrize(("block_n", "parts"), [
    (48, (32, 16)), (96, (64, 32)), (192, (128, 64)), (384, (256, 128)),
    (80, (64, 16)), (144, (128, 16)), (160, (128, 32)), (288, (256, 32))])
def test_a_wide_tile_is_a_power_of_two_and_a_smaller_one(block_n, parts):
    assert wide_parts(block_n) == parts


@pytest.mark.parametrize("block_n", [128, 24, 0, 176, 136, 40, 272 + 64])
def test_a_width_not_two_powers_of_two_is_refused(block_n):
    with pytest.raises(ValueError, match="a power of two plus a smaller power of two"):
        wide_parts(block_n)
    with pytest.raises(ValueError, match="tma_wide"):
        TileConfig(64, block_n, 64, 8, 3, 4, "tma_wide")


def test_a_wide_tile_counts_its_shared_memory_and_registers():
    t = TileConfig(128, 192, 64, 8, 4, 8, "tma_wide")
    assert t.smem_bytes(2) == 4 * (128 + 192) * 64 * 2 + 128 * 192 * 2
    assert t.acc_regs() == 96


@interpreter
@pytest.mark.parametrize(("m", "n", "k"), [
    (48, 96, 64),     # 3 x 2 whole tiles on 4 'SMs': two tiles for two programs
    (40, 100, 72),    # ragged: the last tile's second part past N, K's last block short
    (16, 40, 32),     # one tile whose second part lies wholly past N
    (64, 192, 32),    # 4 x 4 tiles: four each
])
def test_every_part_of_c_is_stored_once(m, n, k):
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    _, err = run_recipe(tw, CPU_TILE, a, b, torch.empty(m, n))
    assert err < 1e-6


@interpreter
@pytest.mark.parametrize(("m", "n", "k"), [
    (32, 160, 32),    # two whole tiles of 64 + 16 columns
    (40, 144, 40),    # ragged rows; the second tile's narrow part wholly past N
])
def test_a_narrow_part_a_quarter_of_the_wide_one(m, n, k):
    g = torch.Generator().manual_seed(9)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    tile = TileConfig(16, 80, 32, 8, 1, 4, "tma_wide")
    _, err = run_recipe(tw, tile, a, b, torch.empty(m, n))
    assert err < 1e-6


@interpreter
def test_column_major_operands_and_a_staged_c():
    """A and B column-major (described transposed, B's two boxes too); C of 35 fp32
    columns (140-byte rows) staged and copied into `out`."""
    g = torch.Generator().manual_seed(8)
    a = torch.randn(64, 80, generator=g).t()     # 80 x 64
    b = torch.randn(36, 64, generator=g).t()[:, :35]
    r, err = run_recipe(tw, CPU_TILE, a, b, torch.empty(80, 35))
    assert err < 1e-6
    assert r.a_t and r.b_t and r.staged


@interpreter
@pytest.mark.parametrize("b_layout", ["r", "c"])
def test_a_wide_tile_reads_b_past_n_over_its_copys_zeros(b_layout):
    """B's kept copy with zeros past N (dispatch.prepare, `pad_b`): both of a wide tile's
    B boxes are described to whole tiles (`b_extent`: 40 columns in tiles of 48 read 48,
    the second part wholly past N), C the same."""
    r, err = run_over_padded_b(tw, CPU_TILE, 40, 40, 48, b_layout, seed=6)
    assert r.b_cols == 48 and err < 1e-6


def test_a_tall_tile_reads_no_room():
    """A tall tile's N is A's M: B's room is not its to read."""
    a, b = torch.randn(160, 32), torch.randn(32, 40)
    r = tw.recipe(TALL, a, b, torch.empty(160, 40), input_precision="ieee", is_fp32=True,
                  has_scale=False, b_room=216)
    assert r is not None and r.b_cols == 0


TALL = TileConfig(80, 16, 32, 8, 1, 4, "tma_tall")   # 64 + 16 rows, 16 columns


@interpreter
@pytest.mark.parametrize(("m", "n", "k"), [
    (160, 32, 32),    # two whole tiles of 64 + 16 rows, two column tiles
    (150, 40, 40),    # ragged rows: the second tile's 16-row part wholly past M
])
def test_a_tall_tile_stores_c_transposed_from_b_t_times_a_t(m, n, k):
    g = torch.Generator().manual_seed(10)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    r, err = run_recipe(tw, TALL, a, b, torch.empty(m, n))
    assert err < 1e-6
    assert r.tall and r.a_t and r.b_t   # B.T and A.T of row-major operands: column-major


@interpreter
def test_a_tall_tile_on_column_major_operands_and_a_staged_c():
    g = torch.Generator().manual_seed(11)
    a = torch.randn(64, 100, generator=g).t()    # 100 x 64, column-major
    b = torch.randn(36, 64, generator=g).t()[:, :35]
    r, err = run_recipe(tw, TALL, a, b, torch.empty(100, 35))
    assert err < 1e-6
    assert r.tall and not r.a_t and not r.b_t and r.staged


def test_a_tall_tile_counts_rows_as_a_wide_one_columns():
    t = TileConfig(144, 128, 64, 8, 5, 8, "tma_tall")
    assert t.smem_bytes(2) == TileConfig(128, 144, 64, 8, 5, 8, "tma_wide").smem_bytes(2)
    with pytest.raises(ValueError, match="block_m=136"):
        TileConfig(136, 128, 64, 8, 4, 8, "tma_tall")
    with pytest.raises(ValueError, match="block_n=144"):
        TileConfig(144, 144, 64, 8, 4, 8, "tma_tall")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("shape", "tile"), [
    ((7904, 384, 3744), TileConfig(128, 192, 64, 8, 4, 8, "tma_wide")),   # 124 tiles
    ((1536, 1536, 3072), TileConfig(128, 192, 64, 8, 4, 8, "tma_wide")),
    ((1000, 1000, 1000), TileConfig(64, 96, 64, 8, 4, 4, "tma_wide")),    # ragged
    ((1152, 1856, 1920), TileConfig(128, 96, 64, 8, 4, 4, "tma_wide", occupancy=2)),
    ((4600, 472, 3552), TileConfig(128, 160, 64, 8, 4, 8, "tma_wide")),   # 128 + 32
    ((920, 4504, 1000), TileConfig(128, 144, 64, 8, 4, 8, "tma_wide")),   # 128 + 16
    ((920, 4504, 2000), TileConfig(128, 320, 64, 8, 3, 8, "tma_wide")),   # C by pointer
    ((1000, 1000, 1000), TileConfig(128, 288, 32, 8, 4, 8, "tma_wide")),  # ragged, so
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_wide_matches_the_reference(shape, tile, dtype):
    a, b, out = gpu_operands(shape, dtype)
    assert run_recipe(tw, tile, a, b, out, is_fp32=False)[1] < 1e-2


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("shape", "tile"), [
    ((472, 4600, 3552), TileConfig(160, 128, 64, 8, 5, 8, "tma_tall")),   # 128 + 32 rows
    ((280, 8136, 2000), TileConfig(144, 128, 64, 8, 5, 8, "tma_tall")),   # 128 + 16
    ((1000, 1000, 1024), TileConfig(192, 128, 64, 8, 4, 8, "tma_tall")),  # ragged M, N
    ((1000, 760, 1024), TileConfig(320, 128, 64, 8, 3, 8, "tma_tall")),   # C by pointer
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_gpu_tall_matches_the_reference(shape, tile, dtype):
    """16-bit with B row-major; fp8 with B K-major, as the dispatcher copies it (wgmma
    reads fp8 K-major only: B.T is then the kernel's row-major A), C in bf16."""
    a, b, out = gpu_operands(shape, torch.bfloat16)
    if dtype != torch.bfloat16:
        a, b = a.to(dtype), b.t().contiguous().to(dtype).t()
        tile = TileConfig(tile.block_m, tile.block_n, 128, 8, tile.num_stages, 8, "tma_tall")
    assert run_recipe(tw, tile, a, b, out, is_fp32=False)[1] < 1e-2


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("shape", "tile"), [
    ((488, 2192, 2192), TileConfig(64, 144, 256, 8, 4, 4, "tma_wide")),   # 128 + 16 columns
    ((2480, 456, 2000), TileConfig(64, 160, 256, 8, 3, 4, "tma_wide")),
    ((3152, 376, 1968), TileConfig(64, 192, 256, 8, 3, 4, "tma_wide")),   # ragged N
])
def test_gpu_fp8_64_row_wide_matches_the_reference(shape, tile):
    """fp8's 64x128 tiles widened (session 39: the lookup offers them), B K-major as the
    dispatcher copies it, C in bf16."""
    a, b, out = gpu_operands(shape, torch.bfloat16)
    a, b = a.to(torch.float8_e4m3fn), b.t().contiguous().to(torch.float8_e4m3fn).t()
    assert run_recipe(tw, tile, a, b, out, is_fp32=False)[1] < 1e-2


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("layout", ["rc", "cc"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_tall_over_a_column_major_b(layout, dtype):
    """The 16-bit tall form where the lookup offers it (session 38): B column-major, so
    B.T, the kernel's A, is K-major; A row-major (rc) or column-major (cc)."""
    a, b, out = gpu_operands((280, 8136, 2000), dtype)
    b = b.t().contiguous().t()
    if layout == "cc":
        a = a.t().contiguous().t()
    tile = TileConfig(144, 128, 64, 8, 5, 8, "tma_tall")
    r, err = run_recipe(tw, tile, a, b, out, is_fp32=False)
    assert err < 1e-2 and r.tall and not r.a_t


@pytest.mark.gpu
@gpu
def test_gpu_wide_tf32_in_a_cuda_graph():
    """tf32 with B K-major (as the dispatcher copies it), replayed in a graph."""
    m, n, k = 1600, 1700, 1800
    g = torch.Generator().manual_seed(3)
    a = torch.randn(m, k, generator=g).cuda()
    b = torch.randn(n, k, generator=g).cuda().t()
    out = torch.empty(m, n, device="cuda")
    tile = TileConfig(128, 96, 32, 8, 4, 4, "tma_wide")   # 192 KiB of shared memory
    run = tw.launcher(tile, a, b, out, a, a, input_precision="tf32", is_fp32=True,
                      has_scale=False)
    run()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    ref = a.double() @ b.double()
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


POINTER_WIDE = TileConfig(16, 288, 32, 8, 1, 4, "tma_wide")   # 256 + 32: C by pointer
POINTER_TALL = TileConfig(288, 16, 32, 8, 1, 4, "tma_tall")


def test_only_tiles_past_the_c_box_store_c_by_pointer():
    """Wider than 256 (taller, for a tall tile): C from registers, and no C box counted in
    shared memory."""
    assert c_by_pointer(POINTER_WIDE) and c_by_pointer(POINTER_TALL)
    assert not c_by_pointer(TileConfig(128, 192, 64, 8, 4, 8, "tma_wide"))
    assert not c_by_pointer(TileConfig(128, 256, 64, 8, 3, 8, "tma"))
    t = TileConfig(128, 320, 64, 8, 3, 8, "tma_wide")
    assert t.smem_bytes(2) == 3 * (128 + 320) * 64 * 2


@interpreter
@pytest.mark.parametrize(("tile", "m", "n", "k"), [
    (POINTER_WIDE, 40, 300, 40),    # ragged: the second tile's narrow part past N
    (POINTER_WIDE, 32, 288, 64),    # whole tiles
    (POINTER_TALL, 300, 40, 40),    # C stored transposed, by pointer
])
def test_c_by_pointer_stores_every_part_once(tile, m, n, k):
    g = torch.Generator().manual_seed(12)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = torch.full((m, n), float("nan"))
    _, err = run_recipe(tw, tile, a, b, out)
    assert err < 1e-6


@interpreter
def test_c_by_pointer_into_a_staged_c():
    """C of 35 fp32 columns (not describable): staged, stored by pointer, copied."""
    g = torch.Generator().manual_seed(13)
    a = torch.randn(24, 40, generator=g)
    b = torch.randn(40, 36, generator=g)[:, :35]
    r, err = run_recipe(tw, POINTER_TALL, a, b, torch.empty(24, 35))
    assert err < 1e-6 and r.staged


def test_a_pointer_c_tile_holds_160_accumulator_registers():
    """128x320 on 8 warps (160 a thread) is usable where it stores C by pointer; 128x384
    (192) is not, nor is a 128x256x64 `tma` tile on 4 warps (256)."""
    assert usable(TileConfig(128, 320, 64, 8, 3, 8, "tma_wide"), "16bit", 232448)
    assert not usable(TileConfig(128, 384, 64, 8, 3, 8, "tma_wide"), "16bit", 232448)
    assert not usable(TileConfig(128, 256, 64, 8, 3, 4, "tma"), "16bit", 232448)
    assert usable(TileConfig(128, 320, 64, 8, 4, 8, "tma_wide"), "16bit", 232448)  # 224 KiB
    assert not usable(TileConfig(128, 320, 64, 8, 5, 8, "tma_wide"), "16bit", 232448)


@pytest.mark.parametrize(("n", "pitch", "vec"), [
    (4512, 4512, 16), (4504, 4512, 8), (4504, 4504, 8), (35, 64, 1), (4100, 4104, 4)])
def test_the_pointer_epilogue_is_told_the_vector_both_columns_and_pitch_allow(n, pitch, vec):
    assert tw._c_vec(n, pitch) == vec


def test_a_shape_s_launch_is_made_once():
    """Every eager call makes the recipe: its launch comes from `_launch`'s cache."""
    a, b, out = torch.zeros(40, 72), torch.zeros(72, 300), torch.zeros(40, 300)
    first, again = (tw.recipe(POINTER_WIDE, a, b, out, input_precision="ieee", is_fp32=True,
                              has_scale=False) for _ in range(2))
    assert first.run is again.run


@pytest.mark.parametrize(("tile", "shape", "vec"), [
    (CPU_TILE, (40, 72, 300), 1), (CPU_TILE, (40, 72, 304), 1),   # a C box: one kernel
    (POINTER_WIDE, (40, 72, 300), 4), (POINTER_WIDE, (40, 72, 304), 16),
    (POINTER_TALL, (300, 72, 40), 8),     # C's columns: the tall kernel's M
])
def test_only_a_pointer_c_tile_is_told_c_s_vector(tile, shape, vec):
    m, k, n = shape
    a, b, out = torch.zeros(m, k), torch.zeros(k, n), torch.zeros(m, n)
    r = tw.recipe(tile, a, b, out, input_precision="ieee", is_fp32=True, has_scale=False)
    assert r.run.kw["C_VEC"] == vec
