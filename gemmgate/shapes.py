"""Named shape sets (append-only: ids are history keys) and user shape files.

A case is M, N, K plus a layout: `rr` means A and B row-major; `c` in the first or second
place makes A or B column-major (a transposed view); `pad` > 0 adds that many elements
to each leading dimension (a sliced view of a wider buffer), so lda != K.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

LAYOUTS = ("rr", "cr", "rc", "cc")


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

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


def _cases(rows) -> tuple[Case, ...]:
    return tuple(Case(*r) for r in rows)


_NIGHTLY_GRID = [(m, n, k) for m in (256, 1024, 4096) for n in (256, 1024, 4096)
                 for k in (128, 512, 2048)]

SETS: dict[str, tuple[Case, ...]] = {
    # Interpreter-sized: each case runs in well under a second on the CPU.
    "smoke": _cases([(64, 64, 64), (48, 80, 72), (64, 32, 96, "cr"), (32, 64, 48, "rc", 5)]),
    # Correctness corners: odd sizes, K not a multiple of BLOCK_K, every layout, padded
    # leading dimensions, zero-size dims.
    "tail": _cases([
        (1, 1, 1), (7, 13, 5), (33, 17, 65), (50, 31, 100, "cc"), (37, 41, 29, "cr"),
        (29, 37, 41, "rc"), (40, 24, 56, "rr", 3), (24, 40, 33, "cc", 7),
        (0, 8, 8), (8, 0, 8), (8, 8, 0),
    ]),
    # PR check: a few minutes on the H200 for all five modes.
    "pr": _cases([
        (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
        (4096, 4096, 4096, "cr"), (4096, 4096, 4096, "rc"),
        (4096, 11008, 4096), (4096, 4096, 11008),      # LLaMA-7B MLP up / down
        (16, 4096, 4096), (128, 8192, 8192),           # decode-like skinny M
        (1000, 1000, 1000), (4096, 4096, 253),         # unaligned sizes
        (2048, 2048, 2048, "rr", 8),                   # padded leading dimension
    ]),
    "nightly": _cases([
        *_NIGHTLY_GRID,
        (4096, 4096, 4096), (8192, 8192, 8192),
        (4096, 11008, 4096), (4096, 4096, 11008), (4096, 14336, 4096), (4096, 4096, 14336),
        (8192, 28672, 8192), (8192, 8192, 28672),     # LLaMA-70B MLP
        (1, 4096, 4096), (16, 4096, 4096), (64, 11008, 4096), (128, 8192, 8192),
        (1000, 1000, 1000), (4096, 4096, 253), (4095, 4097, 4093),
        (4096, 4096, 4096, "cr"), (4096, 4096, 4096, "rc"), (4096, 4096, 4096, "cc"),
        (4096, 4096, 4096, "rr", 8), (2048, 2048, 2048, "rr", 1),
    ]),
    # LLM layer shapes only (prefill M=4096 and decode-ish M=16), LLaMA-7B/13B/70B.
    "llm": _cases([
        (m, n, k) for m in (16, 4096) for (n, k) in
        ((4096, 4096), (11008, 4096), (4096, 11008), (5120, 5120), (13824, 5120),
         (5120, 13824), (8192, 8192), (28672, 8192), (8192, 28672))
    ]),
}


def load_shape_file(path: str | Path) -> tuple[Case, ...]:
    """Read a user's shape file: CSV with a header m,n,k[,layout,pad], or YAML with a
    top-level list of {m, n, k, layout?, pad?} mappings (or under a `cases:` key)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ValueError(f"cannot read shape file {p}: {e.strerror or e}") from None
    if p.suffix.lower() in (".yaml", ".yml"):
        rows = _yaml_rows(text, p)
    elif p.suffix.lower() == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
    else:
        raise ValueError(f"shape file {p} must end in .csv, .yaml or .yml")
    if not rows:
        raise ValueError(f"shape file {p} holds no cases")
    return tuple(_row_case(r, p, i) for i, r in enumerate(rows, start=1))


def _yaml_rows(text: str, p: Path) -> list:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"shape file {p} is not valid YAML: {e}") from None
    if isinstance(data, dict):
        data = data.get("cases")
    if not isinstance(data, list):
        raise ValueError(f"shape file {p} must hold a list of cases (or a `cases:` list)")
    return data


def _row_case(row, p: Path, i: int) -> Case:
    if not isinstance(row, dict):
        raise ValueError(f"{p}: case {i} must be a mapping with m, n, k")
    row = {str(k).strip().lower(): v for k, v in row.items() if k is not None}
    try:
        dims = [int(str(row[d]).strip()) for d in ("m", "n", "k")]
        layout = str(row.get("layout") or "rr").strip()
        pad = int(str(row.get("pad") or 0).strip())
        return Case(*dims, layout, pad)
    except KeyError as e:
        raise ValueError(f"{p}: case {i} lacks {e.args[0]!r}") from None
    except ValueError as e:
        raise ValueError(f"{p}: case {i}: {e}") from None


def resolve(spec: str) -> tuple[str, tuple[Case, ...]]:
    """A set name or a path to a shape file -> (label, cases)."""
    if spec in SETS:
        return spec, SETS[spec]
    if Path(spec).suffix.lower() in (".csv", ".yaml", ".yml") or Path(spec).exists():
        return spec, load_shape_file(spec)
    raise ValueError(f"unknown shape set {spec!r}; known sets: {', '.join(SETS)}, "
                     "or a .csv/.yaml shape file")
