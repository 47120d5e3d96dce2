"""Vendors that go wrong after their checked calls, which the verdict tests share
(imported as tests.gemmgate.late_vendors): test_judging.py's judgments after timing and
test_run.py's inputs written while timed; `with_graph`, a vendor whose timed calls ran a
stand-in graph, both use too."""

import math

import torch


def turns_after_two_calls(wrong):
    """A vendor right on its first two calls (those `judging.check` judges) and `wrong(inp, out)`
    on every later one, into the buffer it returns each time."""
    def vendor(inp, mode):
        out = torch.empty_like(inp.a @ inp.b)
        calls = []

        def call():
            calls.append(1)
            torch.matmul(inp.a, inp.b, out=out)
            if len(calls) > 2:
                wrong(inp, out)
            return out
        return call
    return vendor


def garbage(inp, out):
    out.mul_(1.5)


def bf16_sum(inp, out):
    out.copy_(inp.a.bfloat16() @ inp.b.bfloat16())


def one_row_left(inp, out):
    out[-1].fill_(math.nan)   # as a row the later calls stop writing shows, poisoned


def acts_once_timed(monkeypatch, act):
    """A vendor that calls `act(inp)` before each call once the timing is over (the
    harness's `_measured` returned), right before it."""
    from gemmgate import run as run_mod

    timed = []
    real = run_mod._measured
    monkeypatch.setattr(run_mod, "_measured", lambda *a: (real(*a), timed.append(1))[0])

    def vendor(inp, mode):
        def call():
            if timed:
                act(inp)
            return inp.a @ inp.b
        return call
    return vendor


def writes_a(inp, out):
    inp.a.mul_(2.0)


def with_graph(graph):
    """A vendor right in every call, whose timed calls `measure` hands back as
    `graph(inp, out)` (returning what it returns): a stand-in for the CUDA graph its timed
    calls replayed, which on a GPU can compute otherwise than the eager calls."""
    def vendor(inp, mode):
        out = torch.empty_like(inp.a @ inp.b)

        def call():
            return torch.matmul(inp.a, inp.b, out=out)
        call.graph = lambda: graph(inp, out)
        return call
    return vendor
