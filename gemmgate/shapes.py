"""Shape sets by name (gemmgate/shape_sets.py) and user shape files, and the device-memory
check of a case.

A case (gemmgate/case.py) is M, N, K plus a layout: `rr` means A and B row-major; `c` in
the first or second place makes A or B column-major (a transposed view); `pad` > 0 adds
that many elements to each leading dimension (a sliced view of a wider buffer), so lda != K.

User shape files are read strictly (an unknown column or key is an error naming the file
and line, not silently dropped), and `check_fits` rejects a case too large for the device
before any measuring starts.
"""

from __future__ import annotations

import csv
import io
import operator
import re
from pathlib import Path

from gemmgate.case import LAYOUTS, Case
from gemmgate.files import InputError, may_exist, read_text
from gemmgate.shape_sets import SETS

__all__ = ["LAYOUTS", "SETS", "Case", "case_bytes", "check_fits", "load_shape_file",
           "parse_inline", "resolve"]


COLUMNS = ("m", "n", "k", "layout", "pad")  # of a CSV header, or keys of a YAML case
_ALLOWED = ", ".join(COLUMNS)


def load_shape_file(path: str | Path) -> tuple[Case, ...]:
    """Read a user's shape file: CSV with a header m,n,k[,layout,pad], or YAML with a
    top-level list of {m, n, k, layout?, pad?} mappings (or under a `cases:` key).

    Strict on purpose: an unknown column or key (a typo such as `lyout`, a `dtype` column
    the harness does not read) is an InputError naming the file and line, never ignored."""
    p = Path(path)
    text = read_text(p, "shape file")
    if p.suffix.lower() in (".yaml", ".yml"):
        rows = _yaml_rows(text, p)
    elif p.suffix.lower() == ".csv":
        rows = _csv_rows(text, p)
    else:
        raise InputError(f"shape file {p} must end in .csv, .yaml or .yml")
    if not rows:
        raise InputError(f"shape file {p} holds no cases")
    return tuple(_row_case(r, f"{p}:{line}" if line else str(p), i)
                 for i, (r, line) in enumerate(rows, start=1))


def _blank(fields: list[str]) -> bool:
    """An empty row, or a comment (its first field starts with #): skipped. A comment was
    read as a case, "case 1 lacks 'n'" (a review)."""
    return not any(f.strip() for f in fields) or fields[0].lstrip().startswith("#")


def _csv_rows(text: str, p: Path) -> list[tuple[dict, int]]:
    """(row, line) per case; blank lines, all-empty rows (`,,,` from a spreadsheet) and
    comment lines (# first) are skipped, and so are empty trailing fields."""
    # comment lines blanked before the CSV reader sees them (line numbers kept): a `,"` in
    # a comment opened a quoted field that swallowed the cases after it
    text = "\n".join("" if ln.lstrip().startswith("#") else ln for ln in text.split("\n"))
    reader = csv.reader(io.StringIO(text))
    try:
        return _csv_read(reader, p)
    except csv.Error as e:   # a stray quote runs to the field limit (131,072 characters)
        raise InputError(f"{p}:{reader.line_num}: not a CSV the reader can parse ({e}); "
                         "look for an unclosed quote") from None


def _csv_read(reader, p: Path) -> list[tuple[dict, int]]:
    header = next((f for f in reader if not _blank(f)), None)
    if header is None:
        return []
    where = f"{p}:{reader.line_num}"
    names = [h.strip().lower() for h in header]
    for j, name in enumerate(names):
        if name.isdigit():
            raise InputError(f"{where}: the first line is not a header; start the file with "
                             f"a line naming its columns, e.g. m,n,k (allowed: {_ALLOWED})")
        if name and name not in COLUMNS:
            hint = "; separate columns with commas" if any(c in name for c in ";\t ") else ""
            raise InputError(f"{where}: unknown column {header[j].strip()!r} (column {j + 1});"
                             f" allowed columns: {_ALLOWED}{hint}")
        if name and name in names[:j]:
            raise InputError(f"{where}: column {name!r} appears twice (columns "
                             f"{names.index(name) + 1} and {j + 1}); keep one")
    rows: list[tuple[dict, int]] = []
    for fields in reader:
        if _blank(fields):
            continue
        line = reader.line_num
        for j, v in enumerate(fields):
            if v.strip() and (j >= len(names) or not names[j]):
                raise InputError(
                    f"{p}:{line}: case {len(rows) + 1} has a value {v.strip()!r} in column "
                    f"{j + 1}, which the header names no column for; remove it "
                    f"(allowed columns: {_ALLOWED})")
        rows.append(({n: v for n, v in zip(names, fields) if n}, line))
    return rows


def _yaml_rows(text: str, p: Path) -> list[tuple[object, int | None]]:
    """(case, line) per list entry; node marks give the lines that safe_load drops."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        raise InputError(f"shape file {p} is not valid YAML: {e}") from None
    except RecursionError:
        raise InputError(f"shape file {p} nests deeper than the YAML reader can follow; a "
                         "shape file is a list of cases") from None
    finally:
        loader.dispose()
    if isinstance(data, dict):
        keys = [str(k.value) for k, _ in node.value]
        if keys.count("cases") > 1:
            raise InputError(f"shape file {p}: `cases:` appears {keys.count('cases')} times; "
                             "give one list (two files concatenated?)")
        other = [str(k) for k in data if k != "cases"]
        if other:
            raise InputError(f"shape file {p}: unknown top-level key(s) "
                             f"{', '.join(map(repr, other))}; the file is a list of cases "
                             "or a mapping with one key, `cases:`")
        data = data.get("cases")
        node = next((v for k, v in node.value if k.value == "cases"), None)
    if not isinstance(data, list):
        raise InputError(f"shape file {p} must hold a list of cases (or a `cases:` list)")
    items = node.value if isinstance(node, yaml.SequenceNode) else []
    rows: list[tuple[object, int | None]] = []
    for i, entry in enumerate(data, start=1):
        item = items[i - 1] if i <= len(items) else None
        if isinstance(entry, dict) and isinstance(item, yaml.MappingNode):
            _check_yaml_keys(item, p, i)
            entry = _as_written(entry, item, p, i)
        rows.append((entry, item.start_mark.line + 1 if item is not None else None))
    return rows


def _as_written(entry: dict, item, p: Path, i: int) -> dict:
    """A YAML case's dimensions as their text (then read as the CSV's, ASCII digits
    only): YAML 1.1 read `016` as octal 14 and `1:00` as 60, and the wrong shape was
    measured (a review); a layout that YAML typed (`0`, `false`) is refused, not `rr`."""
    import yaml

    out = dict(entry)
    for key, value in item.value:
        name = str(key.value).strip().lower()
        if key.value not in out or out[key.value] is None:
            continue
        if name in ("m", "n", "k", "pad") and isinstance(value, yaml.ScalarNode):
            out[key.value] = value.value
        elif name == "layout" and not isinstance(out[key.value], str):
            raise InputError(f"{p}:{key.start_mark.line + 1}: case {i}: layout must be text "
                             f"such as rr or cr, got {out[key.value]!r}")
    return out


def _check_yaml_keys(item, p: Path, i: int) -> None:
    seen: set[str] = set()
    for key, _ in item.value:
        name = str(key.value).strip().lower()
        where = f"{p}:{key.start_mark.line + 1}"
        if name not in COLUMNS:
            raise InputError(f"{where}: case {i} has unknown key {key.value!r}; "
                             f"allowed keys: {_ALLOWED}")
        if name in seen:
            raise InputError(f"{where}: case {i} gives {name!r} twice; keep one")
        seen.add(name)


def _row_case(row, where: str, i: int) -> Case:
    """`where` is the file, or file:line where the line is known."""
    if not isinstance(row, dict):
        raise InputError(f"{where}: case {i} must be a mapping with m, n, k")
    row = {str(k).strip().lower(): v for k, v in row.items()}
    for d in ("m", "n", "k"):
        if d not in row:
            raise InputError(f"{where}: case {i} lacks {d!r}")
    dims = [_whole(row, d, where, i) for d in ("m", "n", "k")]
    layout = (str(row.get("layout") or "").strip() or "rr").lower()   # as inline shapes
    # take it; a blank of spaces is an empty one (it was "unknown layout ''": a review)
    pad = _whole(row, "pad", where, i) if _given(row.get("pad")) else 0
    try:
        return Case(*dims, layout, pad)
    except ValueError as e:
        raise InputError(f"{where}: case {i}: {e}") from None


def _given(v) -> bool:
    return v is not None and str(v).strip() != ""


def _whole(row: dict, key: str, where: str, i: int) -> int:
    v = row[key]
    if not _given(v):
        raise InputError(f"{where}: case {i} has no value for {key!r}")
    try:
        if isinstance(v, bool) or not isinstance(v, (int, str)) or (
                isinstance(v, str) and not re.fullmatch(r"-?[0-9]+", v.strip())):
            raise ValueError   # ASCII digits only: int() takes '1_000' and Arabic-Indic ones
        return int(str(v).strip())
    except ValueError:
        raise InputError(f"{where}: case {i}: {key} must be a whole number, got {v!r}") from None


def resolve(spec: str) -> tuple[str, tuple[Case, ...]]:
    """A set name, a path to a shape file or an inline list (`parse_inline`) -> (label,
    cases)."""
    if spec in SETS:
        return spec, SETS[spec]
    if Path(spec).suffix.lower() in (".csv", ".yaml", ".yml"):
        return spec, load_shape_file(spec)
    # shapes before a path of that name: a folder `48x40x24/` in the current directory
    # (`--shapes 48x40x24 --json 48x40x24/run.json`) made the shapes "a shape file that is
    # a directory", exit 2 (a review); a path that is not a .csv/.yaml one is never read
    try:
        inline, bad = parse_inline(spec), None
    except InputError as e:
        inline, bad = None, e
    if inline is not None:
        return spec, inline
    if may_exist(spec):
        return spec, load_shape_file(spec)
    if bad is not None:
        raise bad
    raise InputError(f"unknown shape set {spec!r}; known sets: {', '.join(SETS)}, "
                     "a .csv/.yaml shape file, or shapes such as 4096x4096x4096,1000x1000x1000-rc")


# M x N x K as a shape is written on the command line (`parse_inline`, gemmgate/sweep.py's
# --shape): x, × or * between the dimensions
SHAPE_TEXT = r"([0-9]+)\s*[x×*]\s*([0-9]+)\s*[x×*]\s*([0-9]+)"   # ASCII digits
_INLINE_CASE = re.compile(SHAPE_TEXT + r"(?:-([a-z]{2}))?(?:\+p([0-9]+))?", re.I)
# an item written as a shape, if a wrong one (`8x8x-8`, `-8x8x8`: "unknown shape set")
_LIKE_A_CASE = re.compile(r"[-+]?[0-9]+\s*[x×*]\s*[-+]?[0-9]", re.I)


def parse_inline(spec: str) -> tuple[Case, ...] | None:
    """The cases of an inline list, `MxNxK[-LAYOUT][+pPAD]` comma-separated (the form
    scripts/device/tiles.py prints: 4096x4096x4096,1000x1000x1000-rc,64x64x64+p8), or None
    where no item is one (a set name, a path). InputError naming the item where one is
    not a case."""
    items = [item.strip() for item in spec.split(",")]
    if len(items) > 1 and not items[-1]:   # a trailing comma, as --modes takes one
        items.pop()
    # any item: `16x16,32x32x32` was an "unknown shape set", its bad item unnamed (a review)
    if not any(_INLINE_CASE.match(item) or _LIKE_A_CASE.match(item) for item in items):
        return None
    cases = []
    for item in items:
        got = _INLINE_CASE.fullmatch(item)
        if got is None:
            raise InputError(f"--shapes {spec!r}: {item!r} is not a case; write "
                             "MxNxK[-LAYOUT][+pPAD], e.g. 1000x1000x1000-rc+p8")
        m, n, k, layout, pad = got.groups()
        try:
            cases.append(Case(int(m), int(n), int(k), (layout or "rr").lower(),
                              int(pad or 0)))
        except ValueError as e:
            raise InputError(f"--shapes {spec!r}: {item!r}: {e}") from None
    return tuple(cases)


# --- device memory ------------------------------------------------------------------------
# Checked before measuring starts, so an impossible case is a clear error, not a CUDA
# out-of-memory traceback (or minutes of host-side randn) halfway through a run.

def _buffer_elems(rows: int, cols: int, col_major: bool, pad: int) -> int:
    """Elements of an operand's storage, as gemmgate/inputs.py allocates it."""
    return cols * (rows + pad) if col_major else rows * (cols + pad)


def case_bytes(case: Case, input_bytes: int, output_bytes: int) -> int:
    """Upper estimate of the device memory one case needs, in bytes (exact int math).

    Per operand buffer (pad included): the float32 randn, its copy at `input_bytes` and a
    float64 copy for the reference; per M x N: one output at `output_bytes` for each of the
    two providers and the float64 reference product."""
    m, n, k, pad = (operator.index(x) for x in (case.m, case.n, case.k, case.pad))
    operands = (_buffer_elems(m, k, case.layout[0] == "c", pad)
                + _buffer_elems(k, n, case.layout[1] == "c", pad))
    return operands * (4 + input_bytes + 8) + m * n * (2 * output_bytes + 8)


_HUGE = 2**30 * 10**12  # past this, sizes print as "over 10^12 GiB"


def _size(nbytes: int) -> str:
    """Readable size; GiB in int math, so absurd dimensions format (no OverflowError)."""
    if nbytes < 2**30:
        return f"{nbytes / 2**20:.1f} MiB"
    tenths = (min(nbytes, _HUGE) * 10 + 2**29) // 2**30
    return f"{tenths // 10:,}.{tenths % 10} GiB"


def check_fits(cases, input_bytes: int, output_bytes: int, limit_bytes: int,
               where: str) -> None:
    """InputError for the first case whose case_bytes exceeds `limit_bytes`. `where` ends
    the sentence about the limit, e.g. "free on cuda:0" or "set by --max-mem"."""
    for case in cases:
        need = case_bytes(case, input_bytes, output_bytes)
        if need > limit_bytes:
            about = "over 10^12 GiB" if need > _HUGE else f"about {_size(need)}"
            raise InputError(f"case {case.id} needs {about} of device memory, more than the "
                             f"{_size(limit_bytes)} {where}; use smaller M/N/K"
                             + (" or pad" if case.pad else ""))
