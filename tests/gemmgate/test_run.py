"""The run loop's accuracy verdicts, including a silently downgraded vendor."""

import math

import torch

from gemmgate import providers
from gemmgate.chips import CHIPS
from gemmgate.precision import MODES
from gemmgate.run import run_case, summary_by_mode
from gemmgate.shapes import Case
from gemmgate.timing import cpu_policy


def test_downgraded_vendor_is_caught(monkeypatch):
    # A vendor that quietly rounds fp32 inputs to bf16 (as a tf32/bf16 fast path would):
    # error ~3e-3 is under the 1e-2 bound, so only the downgrade band can catch it.
    def sloppy(inp, mode):
        a, b = inp.a.to(torch.bfloat16), inp.b.to(torch.bfloat16)
        return lambda: (a @ b).float()

    monkeypatch.setitem(providers.PROVIDERS, "vendor", sloppy)
    r = run_case(CHIPS["cpu"], MODES["fp32"], Case(64, 64, 256), cpu_policy(), "cpu")
    v = r.providers["vendor"]
    assert v.accuracy == "downgraded" and 1e-3 < v.error < 1e-2
    assert "precision downgraded" in v.message
    assert r.providers["triton"].accuracy == "pass"
    assert not r.passed


def test_unwritten_output_fails(monkeypatch):
    # A provider that leaves part of its output unwritten: the NaN poison must show.
    def lazy(inp, mode):
        out = torch.empty(inp.a.shape[0], inp.b.shape[1])

        def call():
            out[:-1] = inp.a[:-1] @ inp.b
            return out
        return call

    monkeypatch.setitem(providers.PROVIDERS, "vendor", lazy)
    r = run_case(CHIPS["cpu"], MODES["fp32"], Case(16, 16, 16), cpu_policy(), "cpu")
    assert r.providers["vendor"].accuracy == "fail"
    assert math.isinf(r.providers["vendor"].error)


def test_ratio_and_summary():
    r = run_case(CHIPS["cpu"], MODES["fp16"], Case(32, 32, 32), cpu_policy(), "cpu")
    assert r.passed and r.ratio > 0
    assert len(r.ratio_samples) == len(r.providers["triton"].samples_ms)
    s = summary_by_mode([r])
    assert s["fp16"]["cases"] == 1 and math.isclose(s["fp16"]["geomean_ratio"], r.ratio)


def test_provider_error_fails_the_case_not_the_run(monkeypatch):
    # A provider that cannot even launch (compile error, CUDA error...) is a failed case
    # with the error named; the other provider is still checked and timed.
    def broken(inp, mode):
        raise RuntimeError("triton compile failed: out of registers")

    monkeypatch.setitem(providers.PROVIDERS, "triton", broken)
    r = run_case(CHIPS["cpu"], MODES["fp32"], Case(16, 16, 16), cpu_policy(), "cpu")
    t = r.providers["triton"]
    assert t.accuracy == "fail" and "out of registers" in t.message and not t.samples_ms
    assert r.providers["vendor"].accuracy == "pass" and r.providers["vendor"].samples_ms
    assert not r.passed and r.ratio is None
