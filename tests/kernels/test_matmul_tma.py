"""kernels/matmul_tma.py: the persistent grid's programs per SM (IEEE fp32 more than one,
as the SM's shared memory holds; the wgmma modes the tile's occupancy), and the kernel
walking several tiles a program."""

import pytest
import torch

from kernels import matmul_tma
from kernels.tile import TileConfig
from tests.kernels.tma_helpers import run_over_padded_b

H200_SM_SMEM = 233472   # 228 KiB


def _error(tile: TileConfig, a, b, out, is_fp32: bool) -> float:
    """The TMA kernel's relative error on a x b into `out` (NaN-filled: a tile no program
    walked stays NaN) with this tile."""
    matmul_tma.launch(tile, a, b, out, a, a, input_precision="ieee", is_fp32=is_fp32,
                      has_scale=False)
    ref = a.double() @ b.double()
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.fixture
def h200(monkeypatch):
    monkeypatch.setattr(matmul_tma, "_sm_smem", lambda index: H200_SM_SMEM)
    return torch.device("cuda", 0)   # a device object only: nothing runs on it


@pytest.mark.parametrize(("tile", "programs"), [
    (TileConfig(64, 64, 32, 8, 4, 4, "tma"), 2),     # 80 KiB each (16 KiB a stage + C)
    (TileConfig(64, 64, 32, 8, 3, 4, "tma"), 3),     # 64 KiB each
    (TileConfig(64, 32, 32, 8, 3, 4, "tma"), 3),     # room for four: capped at three
    (TileConfig(128, 128, 32, 8, 3, 8, "tma"), 1),   # 160 KiB
])
def test_ieee_fp32_gets_the_programs_shared_memory_holds(h200, tile, programs):
    assert matmul_tma.programs_per_sm(tile, "ieee", True, h200) == programs


@pytest.mark.parametrize(("precision", "is_fp32"), [
    ("tf32", True), ("tf32x3", True),
    ("ieee", False),   # bf16, fp16, fp8: their modes' input_precision is "ieee" too
])
def test_wgmma_modes_keep_one_program_per_sm(h200, precision, is_fp32):
    tile = TileConfig(64, 64, 32, 8, 3, 4, "tma")
    assert matmul_tma.programs_per_sm(tile, precision, is_fp32, h200) == 1


def test_the_cpu_keeps_one_program_per_sm():
    tile = TileConfig(64, 64, 32, 8, 3, 4, "tma")
    assert matmul_tma.programs_per_sm(tile, "ieee", True, torch.device("cpu")) == 1


@pytest.mark.parametrize(("precision", "is_fp32"), [("tf32", True), ("ieee", False)])
def test_wgmma_modes_take_the_tiles_occupancy(h200, precision, is_fp32):
    tile = TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2)
    assert matmul_tma.programs_per_sm(tile, precision, is_fp32, h200) == 2
    # IEEE fp32 counts its programs by shared memory whatever the tile says
    assert matmul_tma.programs_per_sm(tile, "ieee", True, h200) == 1


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="the interpreter's run (CPU tensors); the GPU's is test_gpu_occupancy_*")
@pytest.mark.parametrize(("m", "n", "k"), [(80, 96, 64), (200, 72, 40)])
def test_two_programs_per_sm_walk_every_tile_once(m, n, k):
    """occupancy 2 doubles the persistent grid (8 programs on the CPU's 4 'SMs'): with
    32x32 tiles 80 x 96 has 9 tiles (some programs walk two), 200 x 72 has 21 (three)."""
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = torch.full((m, n), float("nan"))
    assert _error(TileConfig(32, 32, 32, 8, 1, 4, "tma", occupancy=2), a, b, out, True) < 1e-6


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize(("shape", "tile"), [
    ((1152, 1856, 1920), TileConfig(128, 64, 64, 8, 4, 4, "tma", occupancy=2)),  # 261 tiles
    ((2048, 2048, 256), TileConfig(64, 128, 64, 8, 4, 4, "tma", occupancy=2)),   # 512: 2 each
    ((1000, 1000, 1000), TileConfig(64, 64, 128, 8, 3, 4, "tma", occupancy=2)),
])
def test_gpu_occupancy_two_walks_every_tile_once(shape, tile):
    m, n, k = shape
    g = torch.Generator().manual_seed(2)
    a = torch.randn(m, k, generator=g).cuda().bfloat16()
    b = torch.randn(k, n, generator=g).cuda().bfloat16()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert _error(tile, a, b, out, False) < 1e-2


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("shape", [(2048, 2048, 96), (1000, 1000, 300)])
def test_gpu_ieee_fp32_programs_walk_every_tile_once(shape):
    """1024 tiles of 64x64 over 3 x SMs programs: each walks several; 256 tiles: one."""
    m, n, k = shape
    g = torch.Generator().manual_seed(1)
    a = torch.randn(m, k, generator=g).cuda()
    b = torch.randn(k, n, generator=g).cuda()
    out = torch.full((m, n), float("nan"), device="cuda")
    tile = TileConfig(64, 64, 32, 8, 3, 4, "tma")
    assert matmul_tma.programs_per_sm(tile, "ieee", True, a.device) > 1
    assert _error(tile, a, b, out, True) < 1e-6


@pytest.mark.parametrize(("dtype", "precision", "is_fp32", "n", "how"), [
    (torch.float32, "ieee", True, 1001, "pointer"),    # IEEE fp32, rows not 16-B aligned
    (torch.float32, "ieee", True, 1000, "descriptor"),
    (torch.float32, "tf32", True, 1001, "staged"),     # wgmma modes keep the staged C
    (torch.bfloat16, "ieee", False, 1001, "staged"),
    (torch.bfloat16, "ieee", False, 1024, "descriptor"),
])
def test_a_c_the_descriptor_cannot_take_is_staged_except_ieee_fp32s(dtype, precision, is_fp32,
                                                                     n, how):
    """A C whose rows a descriptor cannot take: staged and copied into `out` (the wgmma
    modes, session 9), or for IEEE fp32 stored by masked pointers straight into `out`
    (C_TMA=False), the kernel's C descriptor argument then standing on A's memory."""
    a = torch.zeros(96, 64, dtype=dtype)
    b = torch.zeros(64, 1024, dtype=dtype)[:, :n]   # B on aligned rows, as dispatch copies it
    out = torch.zeros(96, n, dtype=dtype)
    r = matmul_tma.recipe(TileConfig(64, 64, 32, 8, 3, 4, "tma"), a, b, out,
                          input_precision=precision, is_fp32=is_fp32, has_scale=False)
    assert (r.c_tma, r.staged) == {"pointer": (False, False), "descriptor": (True, False),
                                   "staged": (True, True)}[how]
    assert r.run.kw["C_TMA"] is r.c_tma
    assert (r.unstage is not None) is r.staged
    c_desc = r._args(a, b, out, a, a)[2]
    if how != "staged":   # (the staged C's descriptor is on its staging buffer)
        assert c_desc.base is (out if how == "descriptor" else a)
    assert c_desc.block_shape == [64, 64]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("shape", [(2630, 587, 136), (231, 1001, 240), (26, 523, 732)])
@pytest.mark.parametrize("out_layout", ["row", "col"])
def test_gpu_ieee_fp32_stores_an_unaligned_c_by_pointer(shape, out_layout):
    """IEEE fp32 into a C whose rows a descriptor cannot take (N not a multiple of 4, or
    column-major): masked pointer stores write every element, and nothing past it. (K
    keeps A's rows on 16 bytes, as the dispatcher's copies do.)"""
    m, n, k = shape
    g = torch.Generator().manual_seed(2)
    a = torch.randn(m, k, generator=g).cuda()
    b = torch.zeros(k, 1024, device="cuda")[:, :n]
    b.copy_(torch.randn(k, n, generator=g))
    big = torch.full((n + 8, m + 8) if out_layout == "col" else (m + 8, n + 8), float("nan"),
                     device="cuda")
    out = big[:n, :m].t() if out_layout == "col" else big[:m, :n]
    tile = TileConfig(64, 64, 32, 8, 3, 4, "tma")
    r = matmul_tma.recipe(tile, a, b, out, input_precision="ieee", is_fp32=True,
                          has_scale=False)
    assert (r.c_tma, r.staged) == (False, False)
    matmul_tma.launch(tile, a, b, out, a, a, input_precision="ieee", is_fp32=True,
                      has_scale=False)
    ref = a.double() @ b.double()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-6
    assert big.isnan().sum().item() == big.numel() - m * n   # nothing written outside C


def test_tma_operands_names_each_operands_form_and_the_shape():
    a = torch.empty(48, 64, dtype=torch.bfloat16)            # row-major
    b = torch.empty(32, 64, dtype=torch.bfloat16).t()        # K x N = 64 x 32, column-major
    assert matmul_tma.tma_operands(a, b) == (False, True, 48, 32, 64)


def test_tma_operands_is_none_where_either_base_is_off_16_bytes():
    ok = torch.empty(64, 64, dtype=torch.bfloat16)
    off = torch.empty(64 * 64 + 1, dtype=torch.bfloat16)[1:].view(64, 64)   # 2 bytes off
    assert matmul_tma.tma_operands(off, ok) is None
    assert matmul_tma.tma_operands(ok, off) is None
    assert matmul_tma.tma_operands(ok, ok) == (False, False, 64, 64, 64)


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="the interpreter's run (CPU tensors); the GPU's is test_gpu_b_*")
@pytest.mark.parametrize("b_layout", ["r", "c"])
def test_b_read_past_n_over_its_copys_zeros_gives_c(b_layout):
    """A kept copy of B with zeros past N (dispatch.prepare, `pad_b`), described to whole
    tiles (`b_extent`): 40 columns in tiles of 32 read 64, C the same."""
    r, err = run_over_padded_b(matmul_tma, TileConfig(32, 32, 32, 8, 1, 4, "tma"), 72, 40, 48,
                               b_layout, seed=5)
    assert r.b_cols == 64 and err < 1e-6
