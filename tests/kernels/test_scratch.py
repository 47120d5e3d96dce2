"""kernels/scratch.py: which calls share a kept buffer, on a meta device standing in for
CUDA (the stream and the capture state answered by the test)."""

from __future__ import annotations

import threading

import pytest
import torch

from kernels.scratch import Scratch

META = torch.device("meta")


class _Fake(Scratch):
    kept_on = ("meta",)
    stream = 7
    capturing = False

    def _capturing(self) -> bool:
        return self.capturing

    def _stream(self, device: torch.device) -> int:
        return self.stream


def test_the_next_call_of_a_key_gets_the_same_buffer_and_other_keys_their_own():
    s = _Fake()
    first = s.empty((4, 8), torch.bfloat16, META, "a")
    assert s.empty((4, 8), torch.bfloat16, META, "a") is first
    others = [s.empty((4, 8), torch.bfloat16, META, "b"),     # another role
              s.empty((4, 16), torch.bfloat16, META, "a"),    # another shape
              s.empty((4, 8), torch.float16, META, "a")]      # another dtype
    assert all(o is not first for o in others) and len(s) == 4
    s.stream = 8                                               # another stream
    assert s.empty((4, 8), torch.bfloat16, META, "a") is not first


def test_a_kept_view_of_its_first_columns_is_the_same_view_next_call():
    """`cols`: the buffer's first columns, the last such view kept with it (no slice made
    per call), its rows at the buffer's pitch; another column count of the same pitch
    views the same buffer; an evicted buffer's view goes with it; where nothing is kept
    (the CPU) a fresh buffer's view."""
    s = _Fake()
    view = s.empty((4, 16), torch.bfloat16, META, "c", 13)
    assert view.shape == (4, 13) and view.stride() == (16, 1)
    assert s.empty((4, 16), torch.bfloat16, META, "c", 13) is view
    whole = s.empty((4, 16), torch.bfloat16, META, "c")
    other = s.empty((4, 16), torch.bfloat16, META, "c", 12)   # one pitch: one buffer
    assert other.shape == (4, 12) and other._base is whole is view._base and len(s) == 1
    s.entries = 1
    s.empty((4, 16), torch.bfloat16, META, "d", 13)           # evicts "c" and its view
    assert s.empty((4, 16), torch.bfloat16, META, "c", 12)._base is not whole
    cpu = Scratch().empty((4, 16), torch.float32, torch.device("cpu"), "c", 13)
    assert cpu.shape == (4, 13) and cpu.stride() == (16, 1)


def test_each_thread_gets_its_own_buffer():
    s = _Fake()
    mine = s.empty((4, 8), torch.float32, META, "ws")
    got = []
    t = threading.Thread(target=lambda: got.append(s.empty((4, 8), torch.float32, META, "ws")))
    t.start()
    t.join()
    assert got[0] is not mine and s.empty((4, 8), torch.float32, META, "ws") is mine


def test_nothing_is_kept_under_capture_above_the_size_cap_or_on_the_cpu():
    s = _Fake(max_bytes=64)
    s.capturing = True
    assert s.empty((2, 2), torch.float32, META, "a") is not s.empty((2, 2), torch.float32,
                                                                    META, "a")
    s.capturing = False
    assert s.empty((4, 5), torch.float32, META, "a") is not s.empty((4, 5), torch.float32,
                                                                    META, "a")   # 80 B
    cpu = torch.device("cpu")
    assert s.empty((2, 2), torch.float32, cpu, "a") is not s.empty((2, 2), torch.float32,
                                                                   cpu, "a")
    assert len(s) == 0


def test_past_its_entries_the_least_recently_used_buffer_is_dropped():
    s = _Fake(entries=2)
    a = s.empty((1,), torch.float32, META, "a")
    b = s.empty((1,), torch.float32, META, "b")
    assert s.empty((1,), torch.float32, META, "a") is a        # a is now the newest
    s.empty((1,), torch.float32, META, "c")                    # drops b
    assert len(s) == 2 and s.empty((1,), torch.float32, META, "a") is a
    assert s.empty((1,), torch.float32, META, "b") is not b
    with pytest.raises(ValueError, match="entries must be >= 1"):
        Scratch(entries=0)


class _OnCpu(_Fake):
    kept_on = ("cpu",)


def test_zeros_are_zeroed_when_made_then_kept_as_their_user_leaves_them():
    """stream-K's locks: zeroed once, when the buffer is made; the kernel sets them back
    to 0, so a later call gets the same buffer untouched. Where nothing is kept (a CUDA
    graph capture), fresh zeros every call."""
    s = _OnCpu()
    s.empty((4,), torch.int32, torch.device("cpu"), "locks").fill_(7)   # stale memory
    s.clear()
    locks = s.zeros((4,), torch.int32, torch.device("cpu"), "locks")
    assert locks.eq(0).all()
    locks[1] = 5
    assert s.zeros((4,), torch.int32, torch.device("cpu"), "locks") is locks
    assert locks[1] == 5                       # kept, not zeroed again
    s.capturing = True
    fresh = s.zeros((4,), torch.int32, torch.device("cpu"), "locks")
    assert fresh is not locks and fresh.eq(0).all()


def test_a_buffer_made_inside_inference_mode_is_written_outside_it():
    """Kept past the call that made it: made an inference tensor inside inference_mode,
    the torch copies into it (a re-pitched fp8 operand of 2 MiB or more) raised outside
    ("Inplace update to inference tensor outside InferenceMode"; a review)."""
    s = _Fake()
    with torch.inference_mode():
        made = s.empty((4, 8), torch.bfloat16, META, "a")
    assert not made.is_inference()
    again = s.empty((4, 8), torch.bfloat16, META, "a")
    assert again is made
    again[:2, :4].copy_(torch.ones(2, 4, dtype=torch.bfloat16, device=META))
    again.zero_()
