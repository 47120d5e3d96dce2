"""gemmgate/autotune_pick.py: inductor's autotuning choice, read through torch's feedback
hook (the installed torch's real hook list; the choices are stand-ins)."""

import math
from dataclasses import dataclass

import pytest
import torch

from gemmgate import autotune_pick, providers
from gemmgate.autotune_pick import Picks, describe, recording
from gemmgate.inputs import make_inputs
from gemmgate.precision import MODES
from gemmgate.shapes import Case

_TEMPLATE = ("ACC_TYPE='tl.float32', ALLOW_TF32=False, BLOCK_K=128, BLOCK_M=64, BLOCK_N=32, "
             "EVEN_K=True, GROUP_M=8, USE_FAST_ACCUM=False, num_stages=5, num_warps=4")


def test_a_template_choice_reads_as_its_tile():
    assert describe("triton_mm_12", _TEMPLATE) == "triton_mm 64x32x128 g8 s5 w4"
    assert describe("triton_mm_persistent_tma_3", _TEMPLATE.replace("64", "128")) \
        == "triton_mm_persistent_tma 128x32x128 g8 s5 w4"


def test_a_choice_without_a_tile_keeps_its_description_cut():
    assert describe("mm", "") == "mm"
    long = "x" * 300
    assert describe("bmm_7", f"ALLOW_TF32=True, {long}").startswith("bmm ALLOW_TF32=True, x")
    assert len(describe("bmm_7", long)) == 160


def _hooks():
    pytest.importorskip("torch._inductor.select_algorithm")
    from torch._inductor import select_algorithm as sa
    if not hasattr(sa, "get_algorithm_selector_cache"):
        pytest.skip("this torch has no algorithm selector cache")
    return sa.get_algorithm_selector_cache().feedback_saver_fns


def _autotune(timings: dict) -> None:
    """What inductor does after it times a GEMM's choices: call every feedback hook."""
    for fn in list(_hooks()):
        fn(timings, "mm", [], list(timings), lambda: {}, {})


@dataclass(frozen=True)
class _Choice:   # a ChoiceCaller's two fields read here (hashable: timings are keyed by it)
    name: str
    description: str


def _choice(name: str, description: str = _TEMPLATE) -> _Choice:
    return _Choice(name, description)


def test_recording_keeps_the_fastest_finite_choice_and_unhooks_after():
    before = list(_hooks())
    picks = Picks()
    slow, fast, broken = _choice("triton_mm_1"), _choice("triton_mm_2", _TEMPLATE.replace(
        "num_stages=5", "num_stages=3")), _choice("triton_mm_3")
    with recording(picks):
        _autotune({slow: 0.02, fast: 0.01, broken: math.inf})
        _autotune({})   # an autotuning with nothing timed leaves the pick as it was
    assert picks.last.name == "triton_mm 64x32x128 g8 s3 w4"
    assert [p.name for p in picks.seen] == ["triton_mm 64x32x128 g8 s3 w4"]
    assert list(_hooks()) == before   # unhooked: a later compile records nothing here
    _autotune({slow: 0.02})
    assert len(picks.seen) == 1


def test_recording_unhooks_when_the_compile_raises():
    before = list(_hooks())
    with pytest.raises(RuntimeError), recording(Picks()):
        raise RuntimeError("compile failed")
    assert list(_hooks()) == before


def test_a_torch_without_the_hook_records_nothing(monkeypatch):
    def missing(name):
        raise ImportError(name)

    monkeypatch.setattr(autotune_pick.importlib, "import_module", missing)
    picks = Picks()
    with recording(picks):
        pass
    assert picks.last is None


def test_the_inductor_provider_records_its_compiles_pick(monkeypatch):
    # torch.compile replaced: the "compiled" function autotunes (calls the hooks) on its
    # first call, as inductor does when the builder runs it once
    def compile_(fn, **kw):
        def compiled(*args):
            _autotune({_choice("triton_mm_4"): 0.005})
            return fn(*args)
        return compiled

    monkeypatch.setattr(torch, "compile", compile_)
    picks = Picks()
    inp = make_inputs(Case(16, 24, 32), MODES["fp32"], "cpu", seed=1)
    call = providers._compiled(inp, MODES["fp32"], picks)
    assert picks.last.name == "triton_mm 64x32x128 g8 s5 w4"
    call()   # a timed call autotunes nothing more into the record
    assert len(picks.seen) == 1


@pytest.mark.gpu
def test_gpu_a_case_compiled_again_records_its_pick_again():
    """A second compile of a case (another run on the host, the same inductor caches) hit
    inductor's FX graph cache, which skips autotuning, and recorded no pick (session 76:
    `inductor_config` missing from every case of a second run). Its own autotune cache
    answers or it autotunes again, through the hook either way: the pick may differ
    (session 77, an H100: 32x32x128 where the first compile picked 64x128x32), it is
    recorded."""
    inp = make_inputs(Case(256, 256, 256), MODES["bf16"], "cuda", seed=3)
    first, again = Picks(), Picks()
    providers.inductor_provider(inp, MODES["bf16"], first)
    providers.inductor_provider(inp, MODES["bf16"], again)
    assert first.last is not None and again.last is not None
    assert again.last.name.startswith("triton_mm ")
