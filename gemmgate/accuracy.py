"""Accuracy verdicts: relative Frobenius error against float64, bound and downgrade band.

error = ||C - C_ref||_F / ||C_ref||_F. NaN/Inf anywhere fails. An error under the 1e-2
bound but above the mode's `max_error` is "downgraded": the numbers look like a lower
precision than the mode promises (see gemmgate/precision.py for the bands).
`classify` is pure; `relative_error` is the only torch code here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemmgate.precision import PrecisionMode

PASS, FAIL, DOWNGRADED = "pass", "fail", "downgraded"


@dataclass(frozen=True)
class Accuracy:
    error: float
    status: str          # pass | fail | downgraded
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == PASS


def classify(error: float, mode: PrecisionMode) -> Accuracy:
    if not math.isfinite(error):
        return Accuracy(error, FAIL, "NaN/Inf in the output")
    if error > mode.bound:
        return Accuracy(error, FAIL, f"error {error:.2e} > bound {mode.bound:.0e}")
    if error > mode.max_error:
        return Accuracy(error, DOWNGRADED,
                        f"precision downgraded: error {error:.2e} > {mode.max_error:.0e} "
                        f"expected of {mode.name}; looks like {mode.downgrade_hint}")
    return Accuracy(error, PASS)


def relative_error(out, ref) -> float:
    """||out - ref||_F / ||ref||_F in float64; inf for NaN/Inf; 0/0 (empty or K=0) is 0."""
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"output shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    out = out.double()
    if not bool(torch.isfinite(out).all()):
        return math.inf
    ref_norm = float(torch.linalg.vector_norm(ref))
    diff = float(torch.linalg.vector_norm(out - ref))
    if ref_norm == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / ref_norm
