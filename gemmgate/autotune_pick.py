"""Which template config inductor's autotuning chose for a case, as a short name.

The `inductor` provider compiles with max-autotune: inductor times its Triton GEMM
templates and keeps the fastest. Which one it kept is what a kernel team wants beside the
ratio (the tile that beat theirs), and it is otherwise only on stderr. Inductor calls its
feedback hooks (`torch._inductor.select_algorithm.add_feedback_saver`) with every
autotuning's timings, a cached autotuning included; `recording` registers one for the
length of a compile. A torch without the hook records nothing (`Picks.last` stays None).
An FX graph cache hit skips the autotuning (and the hook) altogether: the provider
compiles with that cache off (gemmgate/providers.py).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_FIELD = re.compile(r"\b(BLOCK_M|BLOCK_N|BLOCK_K|GROUP_M|num_stages|num_warps)=(\d+)")
_NAMED = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")


@dataclass(frozen=True)
class Pick:
    name: str   # e.g. "triton_mm 64x64x128 g8 s5 w4"


@dataclass
class Picks:
    """A case's picks, one per autotuning, in order (a run's Runner makes one per case,
    as a kernel's Chooser); `last` is the one a run records."""
    seen: list[Pick] = field(default_factory=list)

    @property
    def last(self) -> Pick | None:
        return self.seen[-1] if self.seen else None


def describe(name: str, description: str) -> str:
    """A choice as `template BMxBNxBK gG sS wW` (the template: its choice name less the
    index, `triton_mm_12` -> `triton_mm`); a choice without those fields (an extern
    kernel, another template's parameters) keeps its description, cut to 160 characters."""
    template = re.sub(r"_\d+$", "", name)
    got = dict(_FIELD.findall(description or ""))
    if all(f in got for f in _NAMED):
        return (f"{template} {got['BLOCK_M']}x{got['BLOCK_N']}x{got['BLOCK_K']} "
                f"g{got['GROUP_M']} s{got['num_stages']} w{got['num_warps']}")
    return f"{template} {description}".strip()[:160]


@contextlib.contextmanager
def recording(picks: Picks) -> Iterator[None]:
    """While the body compiles, each of inductor's autotunings appends its fastest choice
    to `picks.seen`."""
    try:
        sa = importlib.import_module("torch._inductor.select_algorithm")
        cache = sa.get_algorithm_selector_cache()
        hooks = cache.feedback_saver_fns
    except (ImportError, AttributeError):   # a torch without the hook: nothing recorded
        yield
        return

    def saver(timings, *_rest) -> None:
        finite = {c: t for c, t in (timings or {}).items() if math.isfinite(t)}
        if finite:
            best = min(finite, key=finite.__getitem__)
            picks.seen.append(Pick(describe(getattr(best, "name", type(best).__name__),
                                            getattr(best, "description", ""))))

    hooks.append(saver)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            hooks.remove(saver)
