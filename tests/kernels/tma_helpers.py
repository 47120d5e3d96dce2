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


def run_over_padded_b(module, tile, m, n, k, b_layout, seed):
    """`run_recipe` over a kept copy of B with zeros past N (dispatch.prepare, `pad_b`),
    the recipe told of them (`b_room`), on random fp32 A and B (row- or column-major: `b_layout`
    "r" or "c"): (the recipe, its relative error)."""
    from kernels import dispatch
    from kernels.configs import INTERPRETER_CONFIG

    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g)
    b = torch.randn(k, n, generator=g) if b_layout == "r" else \
        torch.randn(n, k, generator=g).t()
    p = dispatch.Plan("fp32", "k", "", "pitch", ("tma",), INTERPRETER_CONFIG, "t",
                      pad_b=True)
    try:
        _, b2 = dispatch.prepare(p, a, b, cache=True)
    finally:
        dispatch.COPIES.clear()
    r = module.recipe(tile, a, b2, torch.empty(m, n), input_precision="ieee",
                      is_fp32=True, has_scale=False, b_room=dispatch.b_room(p, n))
    out = torch.full((m, n), float("nan"))
    r.launch(a, b2, out, a, a)
    ref = a.double() @ b.double()
    return r, ((out.double() - ref).norm() / ref.norm()).item()


def gpu_operands(shape, dtype, seed=2):
    """Random A (M x K), B (K x N) and an empty C of `dtype` on the GPU."""
    m, n, k = shape
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).cuda().to(dtype)
    b = torch.randn(k, n, generator=g).cuda().to(dtype)
    return a, b, torch.empty(m, n, device="cuda", dtype=dtype)
