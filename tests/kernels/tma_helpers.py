"""What the TMA variants' tests share (imported as tests.kernels.tma_helpers): a recipe's
run and its relative error against float64, and the markers that send a test to the
interpreter (CPU tensors) or to a GPU."""

import pytest
import torch

interpreter = pytest.mark.skipif(torch.cuda.is_available(),
                                 reason="the interpreter's run (CPU tensors); the GPU's "
                                        "is test_gpu_*")
gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


def run_recipe(module, tile, a, b, out, precision="ieee", is_fp32=True):
    """(the variant module's recipe for these tensors, its relative error): `out` is
    NaN-filled first, so a part of C no program stored shows."""
    r = module.recipe(tile, a, b, out, input_precision=precision, is_fp32=is_fp32,
                      has_scale=False)
    out.fill_(float("nan"))
    r.launch(a, b, out, a, a)
    ref = a.double() @ b.double()
    return r, ((out.double() - ref).norm() / ref.norm()).item()


def gpu_operands(shape, dtype, seed=2):
    """Random A (M x K), B (K x N) and an empty C of `dtype` on the GPU."""
    m, n, k = shape
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).cuda().to(dtype)
    b = torch.randn(k, n, generator=g).cuda().to(dtype)
    return a, b, torch.empty(m, n, device="cuda", dtype=dtype)
