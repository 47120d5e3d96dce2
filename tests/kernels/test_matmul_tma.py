"""kernels/matmul_tma.py: the persistent grid's programs per SM (IEEE fp32 more than one,
as the SM's shared memory holds), and the kernel walking several tiles a program."""

import pytest
import torch

from kernels import matmul_tma
from kernels.tile import TileConfig

H200_SM_SMEM = 233472   # 228 KiB


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
    matmul_tma.launch(tile, a, b, out, a, a, input_precision="ieee", is_fp32=True,
                      has_scale=False)
    ref = a.double() @ b.double()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-6
