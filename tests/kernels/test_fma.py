"""kernels/fma.py: which Tritons read B first in the TMA kernels' FMA loop, and that either
order computes the same product (interpreter; the registers it saves are compiled
figures: docs/PERF.md session 54, scripts/call_audit.py)."""

import pytest
import torch

from kernels import fma, matmul_tma, matmul_tma_split
from kernels.tile import TileConfig
from tests.kernels.tma_helpers import interpreter, run_recipe


@pytest.mark.parametrize(("precision", "is_fp32", "version", "first"), [
    ("ieee", True, "3.6.0", False),    # the table's Triton: A first, as timed
    ("ieee", True, "3.7.1", True),     # 3.7.1, 3.8.0, 3.9.0: a barrier between the reads
    ("ieee", True, "3.9.0", True),
    ("ieee", True, "4.0.0+git1234", True),
    ("ieee", True, "3.10.0rc1", True),
    ("ieee", True, "unknown", False),   # no major.minor: the order timed on 3.6
    ("tf32", True, "3.9.0", False),    # wgmma reads its operands from shared memory
    ("tf32x3", True, "3.9.0", False),
    ("ieee", False, "3.9.0", False),   # bf16, fp16, fp8: "ieee" too, on wgmma
])
def test_b_is_read_first_for_an_fma_dot_on_triton_3_7_and_later(precision, is_fp32, version,
                                                                 first):
    assert fma.b_first(precision, is_fp32, version) is first


def test_the_running_triton_decides_by_default(monkeypatch):
    monkeypatch.setattr(fma.triton, "__version__", "3.6.0")
    assert not fma.b_first("ieee", True)
    monkeypatch.setattr(fma.triton, "__version__", "3.8.0")
    assert fma.b_first("ieee", True)


@interpreter
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize(("module", "tile"), [
    (matmul_tma, TileConfig(32, 32, 32, 8, 2, 4, "tma")),
    (matmul_tma_split, TileConfig(32, 32, 32, 8, 2, 4, "tma_split", 2)),
])
@pytest.mark.parametrize("b_layout", ["r", "c"])
def test_either_read_order_computes_the_product(monkeypatch, module, tile, first, b_layout):
    monkeypatch.setattr(module, "b_first", lambda precision, is_fp32: first)
    module._launch.cache_clear()
    try:
        g = torch.Generator().manual_seed(5)
        a = torch.randn(80, 96, generator=g)
        b = torch.randn(96, 72, generator=g) if b_layout == "r" else \
            torch.randn(72, 96, generator=g).t()
        r, err = run_recipe(module, tile, a, b, torch.empty(80, 72))
        assert err < 1e-6
        assert (r.run if module is matmul_tma else r.main).kw["B_FIRST"] is first
    finally:
        module._launch.cache_clear()
