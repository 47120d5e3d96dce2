"""The tuning table files, kernels/tuned/<chip>.json: read, checked, and their stale entries.

`gemmgate tune` writes a table per chip; each entry records the source hash of its
variant's kernel (`variant_hash`). An entry whose hash differs from the current source is
stale: never used by kernels/table.py's lookup, listed by `stale_entries` (and `gemmgate
tune --stale` retunes them). A table file names the device names it serves (`match`:
lower-case substrings of torch.cuda.get_device_name), so the kernel needs no knowledge of
the harness's chips, and may name devices it lends itself to (`borrowed_by`, optional:
the H200's table serves an H100, session 64: same sm_90, 132 SMs on the SXM part and
shared memory a block; on an H100 its picks ran x1.01-1.11 a mode over the heuristic's on
`pr`, x1.12-1.18 on holdout6; the lookup prices tiles on the running
device's SM count, so a 114-SM H100 PCIe reads it too). A device's own table, once tuned,
comes first, entry by entry: its fresh entries answer their bucket and shape, and the
lent table's entries fill in every bucket and shape the own one lacks a fresh entry for
(session 65; a stale own entry, never used, hides nothing), so a chip
can tune the keys where the lent tiles lose and keep the rest (`gemmgate tune` keeps a
lent tile unless another measures faster). Files are read once per directory (`reload`
forgets them).

Each entry also records the Triton it was tuned on: where that differs from the running
one (major.minor), the tiles were timed on code another compiler made, and the first read
of the table warns (`warn_triton`). Session 53's audit found IEEE fp32's TMA tiles at 96
registers on 3.6 and spilling at 255 on 3.9, until the kernels read B first there
(kernels/fma.py). Such entries are still used.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import re
import warnings
from pathlib import Path
from typing import NamedTuple

import triton

from kernels import (
    matmul_gemv,
    matmul_tiled,
    matmul_tma,
    matmul_tma_hybrid,
    matmul_tma_split,
    matmul_tma_streamk,
    matmul_tma_wide,
    matmul_ws,
)
from kernels.modes import MODES
from kernels.tile import TileConfig

SCHEMA, VERSION = "kernels.tuning-table", 1
_LAYOUTS = ("rr", "rc", "cr", "cc")
DEFAULT_DIR = Path(__file__).parent / "tuned"
_SOURCES = {"tiled": matmul_tiled.KERNELS, "tma": matmul_tma.KERNELS,
            "tma_split": matmul_tma_split.KERNELS, "tma_streamk": matmul_tma_streamk.KERNELS,
            "tma_wide": matmul_tma_wide.KERNELS, "tma_tall": matmul_tma_wide.KERNELS,
            "tma_hybrid": matmul_tma_hybrid.KERNELS,
            "gemv": matmul_gemv.KERNELS, "tma_ws": matmul_ws.KERNELS}
# the modules whose COMPILED_IN a variant's launches go through
_HOSTS = {"tiled": (matmul_tiled,), "tma": (matmul_tma,), "tma_split": (matmul_tma_split,),
          "tma_streamk": (matmul_tma_streamk,), "tma_hybrid": (matmul_tma, matmul_tma_split),
          "tma_wide": (matmul_tma_wide,), "tma_tall": (matmul_tma_wide,), "tma_ws": (matmul_ws,),
          "gemv": (matmul_gemv,)}


@functools.cache
def variant_hash(variant: str) -> str:
    """Hash of a variant's kernel source: an entry tuned on other code is stale. The
    source is its `KERNELS`' text, each with the values of the module constants it reads
    (`_LOAD_REGS`: a gl.constexpr), then its modules' `COMPILED_IN`: the host parts that
    decide a constexpr the entry's tile does not hold (`b_first`, `masked_loop`: a
    function's text and the constants it reads; `MAX_PARTS`: a value). An edit to any of
    those left the entries fresh (a review; session 76)."""
    src = "".join(inspect.getsource(k.fn) + _constants(k.fn) for k in _SOURCES[variant])
    for module in _HOSTS.get(variant, ()):
        for name in module.COMPILED_IN:
            part = getattr(module, name)
            src += f"\n# {module.__name__}.{name}: " + (
                inspect.getsource(part) + _constants(part) if callable(part) else repr(part))
    return hashlib.sha1(src.encode()).hexdigest()[:12]


def _constants(fn) -> str:
    """The values of the module constants `fn`'s code reads by name (a number, string,
    tuple or constexpr: what Triton compiles in), as text; "" where it reads none, so a
    source hash is the text's alone there."""
    got = []
    for name in dict.fromkeys(fn.__code__.co_names):
        value = fn.__globals__.get(name, fn)   # (`fn`: not a global; builtins, attributes)
        if type(value).__name__ == "constexpr":   # tl's, or gluon's (its own class in
            value = value.value                     # some Triton releases)
        if isinstance(value, (bool, int, float, str, tuple)):
            got.append(f"\n# {name} = {value!r}")
    return "".join(got)


class TableError(ValueError):
    """A tuning table that cannot be used (names the file)."""


def read_table(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as e:   # (not UTF-8, not JSON, too deep)
        raise TableError(f"tuning table {path} is unreadable: {e}") from None
    return check_table(data, str(path))


def _names(data: dict, field: str) -> bool:
    """A table's list of device-name substrings (`match`, `borrowed_by`), absent or a
    list of strings, none empty (an empty one would name every device)."""
    names = data.get(field, [])
    return isinstance(names, list) and all(isinstance(m, str) and m for m in names)


def check_table(data, where: str) -> dict:
    """`data` as a table file holds it, checked (TableError naming `where` otherwise): what
    `read_table` reads, and what a writer checks before it replaces a file."""
    ok = isinstance(data, dict) and data.get("schema") == SCHEMA and \
        data.get("version") == VERSION and isinstance(data.get("entries"), list) and \
        "match" in data and _names(data, "match") and _names(data, "borrowed_by")
    if not ok:
        raise TableError(f"tuning table {where} is not a {SCHEMA} v{VERSION} file")
    for i, e in enumerate(data["entries"]):
        try:
            _check_entry(e)
            if isinstance(e, dict) and e.get("chip", data.get("chip")) != data.get("chip"):
                raise ValueError(f"chip is {e['chip']!r}, the table's {data.get('chip')!r}")
        except (KeyError, TypeError, ValueError) as err:
            raise TableError(f"tuning table {where}: entry {i} is invalid ({err})") from None
    return data


def _bucket_mode(e: dict) -> str | None:
    """The mode an entry's bucket names: its second word (buckets are "<family> <mode>
    <layouts> <path> <ld class>": kernels/dispatch.py)."""
    words = str(e.get("bucket", "")).split()
    return words[1] if len(words) > 1 else None


def entry_mode(e: dict) -> str | None:
    """An entry's precision mode: its `mode`, else its bucket's."""
    return e.get("mode", _bucket_mode(e))


def _check_entry(e) -> None:
    """An entry's fields the lookup and `gemmgate tune --stale` read (KeyError, TypeError
    or ValueError naming the first that is wrong)."""
    # whole numbers first: TileConfig's bounds pass NaN and 2.5 (a split of NaN ran as
    # 31, one of 2.5 raised inside torch at the call; a review)
    if not isinstance(e["config"], dict):
        raise TypeError(f"config is {e['config']!r}: not an object of tile fields")
    for f, x in e["config"].items():
        if f != "variant" and type(x) is not int:
            raise ValueError(f"config.{f} is {x!r}: not a whole number")
    tile = TileConfig(**e["config"])
    for f in ("m", "n", "k", "pad"):
        if f not in e and f != "pad":   # (the lookup reads them: a KeyError per call)
            raise ValueError(f"{f} is missing")
        x = e.get(f, 0)
        if type(x) is not int or x < 0:
            raise ValueError(f"{f} is {x!r}: not a whole number >= 0")
    if str(e.get("bucket", "")).split()[:1] == ["fp8"] and tile.block_k < 32:
        # (fp8's dot takes K >= 32: every call of the shape raised a CompilationError on
        # a device; a review)
        raise ValueError(f"config.block_k is {tile.block_k}: fp8's dot takes 32 or more")
    ms = e.get("tuned_ms")   # the lookup prices by it (None: an entry it cannot price)
    if ms is not None and (type(ms) not in (int, float) or not 0 <= ms < math.inf):
        raise ValueError(f"tuned_ms is {ms!r}: not a number of milliseconds >= 0, nor null")
    for f in ("bucket", "kernel"):
        if not isinstance(e[f], str):
            raise TypeError(f"{f} is {e[f]!r}: not a string")
    mode = entry_mode(e)
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if "mode" in e and e["mode"] != _bucket_mode(e):
        raise ValueError(f"mode {e['mode']!r} is not its bucket's ({e['bucket']!r})")
    if e.get("layout", "rr") not in _LAYOUTS:
        raise ValueError(f"layout {e['layout']!r} is not one of {', '.join(_LAYOUTS)}")


@functools.cache
def _tables(directory: str) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...],
                                          tuple[dict, ...]], ...]:
    """(path, match substrings, borrowed_by substrings, entries) of every table in
    `directory`, read once."""
    root = Path(directory)
    out = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else ():
        try:
            data = read_table(path)
        except TableError as e:   # one stray or half-edited file made every device's
            # lookups raise, even where no device reads it (a review): warned, skipped
            warnings.warn(f"{e}; skipped (no device reads it until it is mended)",
                          stacklevel=2)
            continue
        repeated = repeats(data["entries"])
        if repeated:   # (a hand merge of two tunes' files: silently the first, a review)
            (i, j), more = repeated[0], len(repeated) - 1
            bucket, m, n, k = where(data["entries"][i])
            warnings.warn(f"tuning table {path}: entry {i} repeats entry {j}'s bucket and "
                          f"shape ({bucket}, {m} x {n} x {k})"
                          + (f", and {more} more entries repeat earlier ones" if more else "")
                          + ": a lookup takes the first fresh one and weighs each as a "
                          "neighbour; keep one (`gemmgate tune` writes one entry a bucket "
                          "and shape)", stacklevel=2)
        out.append((str(path), tuple(m.lower() for m in data["match"]),
                    tuple(m.lower() for m in data.get("borrowed_by", ())),
                    tuple(data["entries"])))
    return tuple(out)


def entries_for(device_name: str, directory: Path = DEFAULT_DIR) -> tuple[str, tuple[dict, ...]]:
    """(table path, entries) this device reads: `table_for_device`'s first two."""
    return table_for_device(device_name, directory)[:2]


class DeviceTable(NamedTuple):
    """What one device reads from a table folder."""

    path: str                    # its own table (`match`), else the lent one; '' where none
    entries: tuple[dict, ...]    # its own, then the lent ones it has no fresh entry for
    lent: str                    # the lent table (`borrowed_by`) where it reads any; ''
    own: int = 0                 # how many of `entries` are its own table's (they lead)

    @property
    def name(self) -> str:
        """The file(s) read, as warnings name them: 'own.json over lent.json (lent)'."""
        if not self.lent or self.lent == self.path:
            return self.path
        return f"{self.path} over {self.lent} (lent)"


def where(e: dict) -> tuple[str, int, int, int]:
    """An entry's bucket and shape: one entry per such key in a table (`gemmgate tune`
    replaces it), and a device's own entry hides a lent one's."""
    return e["bucket"], int(e["m"]), int(e["n"]), int(e["k"])


def repeats(entries: tuple[dict, ...] | list[dict]) -> list[tuple[int, int]]:
    """(i, j) for each entry i whose bucket and shape (`where`) entry j, the first of
    them, already has: a table holds one entry a key (`gemmgate tune` replaces it)."""
    first: dict[tuple, int] = {}
    out = []
    for i, e in enumerate(entries):
        j = first.setdefault(where(e), i)
        if j != i:
            out.append((i, j))
    return out


def table_for_device(device_name: str, directory: Path = DEFAULT_DIR) -> DeviceTable:
    """The table whose `match` names this device, layered over the one whose `borrowed_by`
    does: the lent entries whose bucket and shape the own table lacks follow the own ones.
    TableError where two tables claim the device either way (file-name order chose one
    silently: a `nvidia-h200-candidate.json` beside `nvidia-h200.json` took the H200's
    lookups, and `gemmgate tune` went on writing the file no lookup read; a review)."""
    low = device_name.lower()
    tables = _tables(str(directory))
    own = _one(tables, low, 1, "match")
    lent = _one(tables, low, 2, "borrowed_by", skip=own)
    if own is None and lent is None:
        return DeviceTable("", (), "")
    if lent is None:
        return DeviceTable(tables[own][0], tables[own][3], "", len(tables[own][3]))
    if own is None:
        return DeviceTable(tables[lent][0], tables[lent][3], tables[lent][0], 0)
    return _layered(str(directory), own, lent)


def _one(tables, low: str, field: int, what: str, skip: int | None = None) -> int | None:
    """The index of the table whose `what` (field `field`) names the device `low`."""
    found = [i for i, t in enumerate(tables) if i != skip and any(_word(m, low) for m in t[field])]
    if len(found) > 1:
        raise TableError(f"tuning tables {' and '.join(tables[i][0] for i in found)} both "
                         f"name {low!r} in their {what}: keep one (a device reads one "
                         "table of its own and one lent)")
    return found[0] if found else None


def _word(match: str, low: str) -> bool:
    """`match` is a word of the device name `low` ("h200" is not one of "gh200", nor
    "a100" of "rtx a1000"), as gemmgate's chip profiles match it."""
    return re.search(rf"(?<![a-z0-9]){re.escape(match)}(?![0-9])", low) is not None


@functools.cache
def _layered(directory: str, own: int, lent: int) -> DeviceTable:
    """Table `own` of the folder over table `lent`, made once per folder as read."""
    tables = _tables(directory)
    mine = {where(e) for e in tables[own][3] if not is_stale(e)}
    fill = tuple(e for e in tables[lent][3] if where(e) not in mine)
    return DeviceTable(tables[own][0], tables[own][3] + fill, tables[lent][0] if fill else "",
                       len(tables[own][3]))


def is_stale(entry: dict) -> bool:
    """Tuned on another version of its variant's kernel source."""
    return entry["kernel"] != variant_hash(entry["config"].get("variant", "tiled"))


def stale_entries(device_name: str, directory: Path = DEFAULT_DIR) -> list[dict]:
    """The entries of this device's table that are stale."""
    return [e for e in entries_for(device_name, directory)[1] if is_stale(e)]


@functools.cache
def warn_stale(path: str, count: int) -> None:
    """Warn once per table and count that a lookup's bucket passed stale entries over.
    `gemmgate tune --stale` retunes a table's own stale entries on the chip it runs on: a
    lent table's (`path` "own over lent (lent)", or the lent file alone) are its chip's
    to retune; this warning sent a device reading them to a tune that found none of its
    own and said "nothing to retune" (a review)."""
    warnings.warn(f"{path}: {count} tuning entries of a bucket looked up were tuned on "
                  "other kernel source and are not used; `gemmgate tune --stale` retunes "
                  "a table's stale entries on the chip the table is for (a table lent to "
                  "this device: on its own chip; `gemmgate tune --shapes SET` tunes this "
                  "chip's own keys here)", stacklevel=4)


def triton_minor(version: str) -> str:
    """A Triton version's major.minor ('3.6.0' -> '3.6'; scripts/restamp.py's too)."""
    return ".".join(str(version).split(".")[:2])


def other_triton(entries: tuple[dict, ...], running: str) -> dict[str, int]:
    """{version: entries} of the entries tuned on a Triton whose major.minor is not the
    running one's; entries that record none are left out."""
    out: dict[str, int] = {}
    for e in entries:
        tuned = e.get("triton")
        if tuned and triton_minor(tuned) != triton_minor(running):
            out[str(tuned)] = out.get(str(tuned), 0) + 1
    return out


def warn_triton(path: str, entries: tuple[dict, ...], running: str = "") -> None:
    """Warn, where entries were tuned on another Triton than this process runs, that
    their times are another compiler's code (called once per table read)."""
    running = running or triton.__version__
    other = other_triton(entries, running)
    if other:
        count = sum(other.values())
        tuned = ", ".join(f"{v} ({n})" for v, n in sorted(other.items())) \
            if len(other) > 1 else next(iter(other))
        warnings.warn(f"{path}: {count} of its {len(entries)} tuning entries were tuned on "
                      f"triton {tuned}, and this process runs triton {running}, which "
                      "compiles their tiles to other code; they are used as they are "
                      "(`gemmgate tune --shapes SET` retunes a set on this version)",
                      stacklevel=2)


def reload() -> None:
    """Forget the files read so far."""
    _tables.cache_clear()
    _layered.cache_clear()
