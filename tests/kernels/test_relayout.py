"""kernels/relayout.py: the operand copy cache (cache_copies=True) reuses a copy only
while its source tensor is the same and unchanged, and frees it with the source; the
unstaging copy writes every element of a contiguous C from its staged rows."""

import gc

import pytest
import torch

from kernels.relayout import LINE, CopyCache, aligned_copy, aligned_empty, unstage_launch


def _counting():
    made = []

    def make(x):
        made.append(tuple(x.shape))   # not x itself: the cache must see it freed
        return x.clone()
    return made, make


@pytest.fixture(params=[None, "memo"])
def memo(request):
    """No memo, or a caller's (a resolved matmul call's, `get`'s `memo`): the same
    answers either way."""
    return None if request.param is None else {}


def test_a_copy_is_made_once_per_unchanged_tensor(memo):
    cache, (made, make) = CopyCache(), _counting()
    w = torch.randn(8, 4)
    first = cache.get(w, "b", make, memo)
    assert cache.get(w, "b", make, memo) is first and len(made) == 1
    assert (cache.hits, cache.misses) == (1, 1)
    assert cache.get(w, "a", make, memo) is not first and len(made) == 2   # another kind


def test_a_fresh_view_of_the_same_weight_hits(memo):
    cache, (made, make) = CopyCache(), _counting()
    w = torch.randn(8, 4)
    first = cache.get(w.t(), "b-kmajor", make, memo)
    assert cache.get(w.t(), "b-kmajor", make, memo) is first and len(made) == 1


def test_an_in_place_change_makes_a_new_copy(memo):
    cache, (made, make) = CopyCache(), _counting()
    w = torch.randn(8, 4)
    cache.get(w, "b", make, memo)
    w.add_(1.0)
    assert torch.equal(cache.get(w, "b", make, memo), w) and len(made) == 2
    w[0].zero_()                     # through a view: the version counter is shared
    assert torch.equal(cache.get(w, "b", make, memo), w) and len(made) == 3


def test_a_storage_swapped_under_the_same_tensor_misses(memo):
    """`w.data = new` keeps the tensor object and its version (0), and the allocator
    hands the freed address back: address, shape and version matched, and the copy of
    the old values was used (187 of 200 swaps in the review)."""
    cache, (_, make) = CopyCache(), _counting()
    w = torch.nn.Parameter(torch.randn(16, 40), requires_grad=False)
    stale = 0
    for _ in range(200):
        w.data = torch.randn(16, 40)
        stale += not torch.equal(cache.get(w, "b", make, memo), w)
    assert w._version == 0 and stale == 0


def test_another_tensor_at_the_same_address_misses(memo):
    cache, (made, make) = CopyCache(), _counting()
    base = torch.randn(16)
    cache.get(base[:8].view(2, 4), "a", make, memo)
    other = torch.randn(16)
    assert cache.get(other[:8].view(2, 4), "a", make, memo) is not None and len(made) == 2


def test_the_copy_is_freed_with_its_source_and_the_oldest_goes_first(memo):
    cache, (made, make) = CopyCache(entries=2), _counting()
    w = torch.randn(4, 4)
    cache.get(w, "b", make, memo)
    assert len(cache) == 1
    del w
    gc.collect()
    assert len(cache) == 0
    ws = [torch.randn(4, 4) for _ in range(3)]
    for x in ws:
        cache.get(x, "b", make, memo)
    assert len(cache) == 2
    cache.get(ws[0], "b", make, memo)      # evicted: made again
    assert len(made) == 5
    with pytest.raises(ValueError, match="entries"):
        CopyCache(entries=0)


def test_a_memo_checks_the_address_and_the_storage_not_only_the_source():
    """Through a memo: another view of the same base at another address, and a storage
    swapped away and back to the memo's address (two swaps between calls, so the
    allocator hands the first address back), each get a copy of their own values."""
    cache, memo, mk = CopyCache(), {}, (lambda x: x.clone())
    buf = torch.randn(16, 4)
    cache.get(buf[:8], "a", mk, memo)
    assert torch.equal(cache.get(buf[8:], "a", mk, memo), buf[8:])
    w, stale = torch.randn(16, 40), 0
    for _ in range(50):
        cache.get(w, "b", mk, memo)
        w.data = torch.randn(16, 40)
        w.data = torch.randn(16, 40)
        stale += not torch.equal(cache.get(w, "b", mk, memo), w)
    assert stale == 0


def test_an_entry_replaced_lets_its_copy_go_even_one_stored_while_make_ran():
    """A stale entry (its source changed) is replaced and its copy let go; so is one that
    another caller stored under the same key while `make` ran (two threads first using
    one weight, here a `make` that re-enters): no memo keeps an entry off the store
    holding memory, and a later memo hit on it misses instead of failing."""
    cache, (_, make) = CopyCache(entries=2), _counting()
    w, first, second = torch.randn(8, 4), {}, {}
    cache.get(w, "b", make, first)
    w.add_(1.0)
    cache.get(w, "b", make, second)
    assert first["b"].copy is None and second["b"].copy is not None

    v, m1, m2 = torch.randn(8, 4), {}, {}
    reentered = []

    def racing(x):
        if not reentered:
            reentered.append(cache.get(x, "b", make, m2))   # the other caller, meanwhile
        return x.clone()

    got = cache.get(v, "b", racing, m1)
    assert m2["b"].copy is None and m1["b"].copy is got
    assert m2["b"].key not in cache._store or cache._store[m2["b"].key] is m1["b"]
    for other in (torch.randn(8, 4), torch.randn(8, 4)):   # v's entry evicted
        cache.get(other, "b", make)
    assert torch.equal(cache.get(v, "b", make, m2), v)       # a miss, not a KeyError


def test_inference_tensors_are_not_cached(memo):
    cache, (made, make) = CopyCache(), _counting()
    with torch.inference_mode():
        w = torch.randn(4, 4)
    cache.get(w, "b", make, memo)
    cache.get(w, "b", make, memo)
    assert len(made) == 2 and len(cache) == 0


def test_a_memo_hit_keeps_the_oldest_first_order_and_never_holds_an_evicted_copy():
    """A hit through the caller's memo counts and moves its entry to the newest place,
    as a keyed hit does (the entry used last is evicted last); an evicted or dropped
    entry's copy is let go, so a memo that still holds the entry holds no memory and
    misses."""
    cache, (made, make) = CopyCache(entries=2), _counting()
    w0, w1, w2 = (torch.randn(4, 4) for _ in range(3))
    m0, m1 = {}, {}
    first = cache.get(w0, "b", make, m0)
    cache.get(w1, "b", make, m1)
    assert cache.get(w0, "b", make, m0) is first and cache.hits == 1
    cache.get(w2, "b", make)              # evicts w1's entry, used before w0's hit
    assert m1["b"].copy is None and m0["b"].copy is first
    assert cache.get(w1, "b", make, m1) is not None and len(made) == 4
    entry = m0["b"]
    del w0, first
    gc.collect()
    assert entry.copy is None             # dropped with its source


def test_a_memo_of_another_tensor_misses_and_follows_the_call():
    cache, (made, make) = CopyCache(), _counting()
    memo, w, v = {}, torch.randn(4, 4), torch.randn(4, 4)
    cache.get(w, "b", make, memo)
    got = cache.get(v, "b", make, memo)   # same shape, another tensor: its own copy
    assert torch.equal(got, v) and len(made) == 2 and memo["b"].copy is got
    assert torch.equal(cache.get(w, "b", make, memo), w) and len(made) == 2   # keyed hit


def test_aligned_copy_pads_the_pitch_to_16_bytes(device):
    x = torch.arange(15, dtype=torch.float32, device=device).reshape(3, 5)
    y = aligned_copy(x.t())                    # (5, 3) from a column-major view
    assert torch.equal(y, x.t()) and y.stride() == (4, 1)


def test_pitched_copy_keeps_the_layout_and_pads_the_pitch_to_whole_lines(device):
    from kernels.relayout import pitched_copy

    x = torch.randn(6, 50, device=device).half()
    for view, stride in ((x, (64, 1)), (x.t(), (1, 64)), (x[:, 3:20], (64, 1))):
        y = pitched_copy(view)
        assert torch.equal(y, view) and y.stride() == stride   # 50 or 17 halves: 128 bytes
    f = torch.randn(3, 33, device=device)
    assert pitched_copy(f).stride() == (64, 1)                  # 132 bytes -> 256


def test_a_padded_copy_holds_zeros_past_its_rows_and_columns(device):
    from kernels.relayout import pitched_copy

    x = torch.randn(5, 40, device=device).half()
    y = aligned_copy(x, 16, None, (4, 32))            # rows to 8, columns to 64
    assert torch.equal(y, x) and y.shape == (5, 40)
    whole = y.as_strided((8, 64), y.stride())
    assert torch.count_nonzero(whole[:, 40:]) == 0 and torch.count_nonzero(whole[5:]) == 0
    # B row-major: zeros past its columns; B column-major (K-major): past its rows of x.T
    rm = pitched_copy(x, None, 64)
    assert torch.equal(rm, x) and torch.count_nonzero(
        rm.as_strided((5, 64), rm.stride())[:, 40:]) == 0
    cm = pitched_copy(x.t(), None, 64)                 # (40, 5) column-major: N = 5
    assert torch.equal(cm, x.t()) and cm.stride() == (1, 64)
    assert torch.count_nonzero(cm.t().as_strided((64, 40), (64, 1))[5:]) == 0


def test_a_copy_writes_its_zeros_over_its_buffers_old_contents(device, monkeypatch):
    """A copy per call goes into a buffer kept for its role (kernels/scratch.py), dirty
    from the call before: the copy kernel writes the zeros past x itself (the zeros of a B
    read past N, past_n.pads_b, for a call without kept copies too)."""
    from kernels import relayout

    empty = relayout.aligned_empty
    monkeypatch.setattr(relayout, "aligned_empty",
                        lambda *a, **k: empty(*a, **k).fill_(float("nan")))
    cases = [(torch.float16, None), (torch.float8_e4m3fn, None), (torch.float32, None),
             (torch.float8_e4m3fn, 0)]   # the last through torch's copy (`torch_copies`)
    for dtype, torch_from in cases:     # the copy kernel's copied as bits
        if torch_from is not None:
            monkeypatch.setattr(relayout, "TORCH_COPY_BYTES", torch_from)
        x = torch.randn(6, 40, device=device).to(dtype)
        y = relayout.aligned_copy(x, 16, "b", (8, 64))     # rows to 8, columns to 64
        assert y.dtype == dtype and torch.equal(y.view(torch.uint8), x.view(torch.uint8))
        whole = y.as_strided((8, 64), y.stride()).view(torch.uint8)
        assert torch.count_nonzero(whole[:, 40 * x.element_size():]) == 0
        assert torch.count_nonzero(whole[6:]) == 0


def test_only_big_byte_copies_row_to_row_take_torchs_copy():
    from kernels.relayout import TORCH_COPY_BYTES, torch_copies

    big = torch.empty(TORCH_COPY_BYTES // 4840 + 1, 4840, dtype=torch.float8_e4m3fn)
    assert torch_copies(big)
    assert not torch_copies(big[:4])                       # small: the copy kernel's launch
    assert not torch_copies(big.t())                       # transposing: the copy kernel
    assert not torch_copies(big.view(torch.int16))         # two-byte elements


@pytest.mark.parametrize("rows,cols,block", [
    (5, 37, 64),     # rows shorter than a block: several row ends per block
    (7, 150, 64),    # a block crosses one row end at most, last block partial
    (3, 128, 64),    # blocks end exactly on row ends
    (1, 3, 64),      # one short row
    (33, 17, 0),     # the launch's own block for a small C
    (3, 3000, 0),    # its full block: one row end a block at most
    (6, 300, 0),     # a block of 256 within a row, a warp's worth of programs
])
def test_unstage_copies_staged_rows_into_a_contiguous_matrix(device, rows, cols, block):
    x = aligned_empty(rows, cols, torch.float16, device, LINE)
    x.copy_(torch.randn(rows, cols, device=device))
    y = torch.full((rows, cols), float("nan"), dtype=torch.float16, device=device)
    unstage_launch(rows, cols, x.stride(0), block).fast(x, y)
    assert x.stride(0) % 64 == 0 and torch.equal(y, x)


def test_unstage_into_a_second_buffer_at_another_address(device):
    """The launch is bound by address: a second out gets its own elements."""
    x = aligned_empty(4, 100, torch.float32, device, LINE)
    x.copy_(torch.randn(4, 100, device=device))
    launch = unstage_launch(4, 100, x.stride(0), 64)
    for _ in range(2):
        y = torch.zeros(4, 100, device=device)
        launch.fast(x, y)
        assert torch.equal(y, x)


def test_a_copy_whose_offsets_pass_int32_forms_them_in_64_bits():
    """The copy kernel formed r * sxr in int32: a (3 x 16) view whose rows lie 2**30 + 8
    apart read its third row 4 GiB before it, and a copy into such an out wrote there (a
    review; in the interpreter the old kernel ended the process, the new one copied the
    rows right: a 2 GiB buffer, run by hand, session 67). 64-bit offsets where
    `wide_offsets` says so; the launch of every other copy is as it was."""
    from kernels.relayout import copy_launch

    assert copy_launch(3, 16, 2**30 + 8, 1, 16).kw.get("I64") is True      # x's rows
    assert copy_launch(3, 16, 1, 3, 2**30 + 8).kw.get("I64") is True       # y's rows
    assert "I64" not in copy_launch(64, 64, 64, 1, 64).kw
