"""A case: M, N, K, the operands' layout and padding, and its id (a history key).

A case is M, N, K plus a layout: `rr` means A and B row-major; `c` in the first or second
place makes A or B column-major (a transposed view); `pad` > 0 adds that many elements
to each leading dimension (a sliced view of a wider buffer), so lda != K.
"""

from __future__ import annotations

from dataclasses import dataclass

LAYOUTS = ("rr", "cr", "rc", "cc")


MAX_DIM = 2**40   # past any GEMM a chip holds: an empty 0 x 0 x 10**20 passed the memory
# check (no bytes) and failed inside torch, exit 3, its --json replaced (a review); a
# dimension of 10**400 overflowed the plots


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int
    layout: str = "rr"
    pad: int = 0

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k) < 0:
            raise ValueError(f"negative dimension in {self.m}x{self.n}x{self.k}")
        if max(self.m, self.n, self.k, self.pad) >= MAX_DIM:
            raise ValueError(f"{self.m}x{self.n}x{self.k}+p{self.pad}: a dimension of 2**40 "
                             "or more, past any GEMM a chip holds")
        if self.layout not in LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}; use one of {', '.join(LAYOUTS)}")
        if self.pad < 0:
            raise ValueError(f"pad must be >= 0, got {self.pad}")

    @property
    def layout_id(self) -> str:
        return self.layout + (f"+p{self.pad}" if self.pad else "")

    @property
    def id(self) -> str:
        """Readable id, e.g. m4096-n4096-k4096 (row-major) or m64-n64-k64-cr+p3."""
        base = f"m{self.m}-n{self.n}-k{self.k}"
        return base if self.layout_id == "rr" else f"{base}-{self.layout_id}"

    def key(self, mode: str) -> str:
        """The case's id in `mode`: a run's, a baseline's and a check's case key
        (fp32-m64-n64-k64)."""
        return f"{mode}-{self.id}"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k
