"""Autotuning within a budget, config pruning by chip limits, and the tuning cache.

Why not triton.autotune alone: it benchmarks every config again in each fresh process
(unless that machine's TRITON_CACHE_DIR survived), and configs within a few percent of
each other win by noise. Two processes can then measure two different kernels, a
process-to-process "noise" that no number of repeats inside one process removes. So a
choice is made once per key (kernel family, M, N, K, operand strides) and kept:

1. pins: the config each case of a baseline was measured with (`tuning` in
   baselines/<chip>.json), for `run --pin-tiles`. Since the kernel's dispatch became
   deterministic (the committed tuning table, session 5), check, baseline and bisect pin
   nothing: a table change must show in them;
2. the local cache, $GEMMGATE_TUNING_DIR/<chip>.json (default ~/.cache/gemmgate/tuning),
   written atomically after every new choice, one entry per key, candidate list and
   kernel source;
3. otherwise the kernel's own choice: a kernel puts the tile its dispatcher picks (its
   committed tuning table, kernels/tuned/<chip>.json, or its heuristic) first among the
   candidates, and that is what runs. No tuning on the measured path: `gemmgate check`,
   `run` and `baseline` measure what a library user's call runs.

Only with `search` (`--retune`, and `gemmgate tune`, which writes the kernel's table)
are keys without a pin tuned: a key not in the local cache has every candidate
benchmarked with triton.testing.do_bench, fastest wins; once `budget_s` is spent the
remaining candidates are skipped (at least one is measured that ran). `retune`, which
both set, reads no cache: it tunes every key afresh and only writes the cache (a
calibration's later runs search its first run's).
`force` overrides fields of the kernel's own choice (`gemmgate sweep`: one parameter
across values); it wins over pins.

A cache entry whose config is no longer a candidate (configs.py changed) is ignored and
the key is tuned again; a pin's tile runs all the same (made in the kernel's tile class;
where that class refuses it, the pin is ignored so; `run --pin-tiles` refuses such a
file before any work, naming the case). Entries record the kernel source hash they were
tuned with; a pin tuned for another kernel version is still used, and reported stale.

The kernel knows nothing of this module: it takes a `choose(key, candidates, bench)`
hook. `Tuner.chooser(kernel_hash)` makes one per provider and case; it remembers the
choice it returned, which is how the harness learns the tile a kernel ran. A Tuner
lives in a run's Runner (gemmgate/run.py), never in a module global.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from gemmgate.files import check_writable, read_text, write_json_atomic

TileConfig = Any  # a kernel's frozen dataclass of tile fields; matched by value (asdict)

SCHEMA, VERSION = "gemmgate.tuning", 1
PINNED, CACHED, TUNED, KERNEL, FORCED = "pinned", "cache", "tuned", "kernel", "forced"
KEEP_MARGIN = 0.03   # a retune replaces an incumbent tile only when this much faster
MAX_TIMED = 30   # configs a search times per key at most (issue 11)

@dataclass(frozen=True)
class TuningSetup:
    """What a process tunes against; picklable, so parallel workers get the same."""
    chip_id: str = "default"
    pins_from: str | None = None   # a baseline file whose cases' configs are pinned
    retune: bool = False           # ignore pins and the cache; tune every key afresh
    budget_s: float = 20.0         # per key
    search: bool = False           # tune keys without a pin (else: the kernel's choice)
    force: tuple[tuple[str, object], ...] = ()   # field overrides of the kernel's choice
    cache_dir: str | None = None   # default: $GEMMGATE_TUNING_DIR or ~/.cache/gemmgate/tuning
    # (key prefix, config fields): a search whose key starts with the prefix times that
    # config first (`gemmgate tune --stale`: a stale entry's own tile, on the new source)
    first: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.budget_s <= 0:
            raise ValueError("tuning budget_s must be positive")

    @property
    def searching(self) -> bool:
        """Keys without a pin are tuned (`--retune` implies it)."""
        return self.search or self.retune

    @property
    def cache_path(self) -> Path:
        root = self.cache_dir or os.environ.get("GEMMGATE_TUNING_DIR") or \
            Path.home() / ".cache" / "gemmgate" / "tuning"
        return Path(root) / f"{self.chip_id}.json"


@dataclass(frozen=True)
class Choice:
    key: str
    config: TileConfig
    source: str                    # pinned | cache | tuned
    kernel: str = ""               # source hash of the kernel it was tuned with
    timings_ms: dict[str, float] = field(default_factory=dict)
    stale: bool = False            # pinned for another kernel version
    offered: int = 0               # candidates the search had (tuned); 0: not recorded

    @property
    def name(self) -> str:
        return config_name(self.config)

    def to_json(self) -> dict:
        return {"key": self.key, "config": tile_dict(self.config), "source": self.source,
                "kernel": self.kernel, "timings_ms": self.timings_ms, "stale": self.stale,
                "offered": self.offered}


class TuningError(ValueError):
    """A tuning cache or pin file that cannot be used."""


def load_pins(path: str | Path) -> dict[str, dict]:
    """key -> entry, from the `tuning` record of each case of a baseline file."""
    if not Path(path).exists():
        return {}
    try:
        data = json.loads(read_text(path, "tuning pins file"))
    except (ValueError, OSError, RecursionError) as e:
        raise TuningError(f"cannot read tuning pins from {path}: {e}") from None
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, dict):
        raise TuningError(f"{path} has no cases to take tuning pins from")
    return {t["key"]: t for c in cases.values()
            if isinstance(c, dict) and isinstance(t := c.get("tuning"), dict) and "key" in t}


def load_cache(path: Path, chip_id: str) -> dict[str, dict]:
    """The local cache's entries; a missing file is empty, a corrupt one is an error
    that names the file (delete it to start afresh)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(read_text(path, "tuning cache"))
    except (OSError, ValueError, RecursionError) as e:   # (read_text: not UTF-8; not JSON)
        raise TuningError(f"tuning cache {path} is unreadable ({e}); delete it to retune") \
            from None
    ok = isinstance(data, dict) and data.get("schema") == SCHEMA and \
        data.get("version") == VERSION and isinstance(data.get("entries"), dict)
    if not ok:
        raise TuningError(f"tuning cache {path} is not a {SCHEMA} v{VERSION} file; "
                          "delete it to retune")
    if data.get("chip") != chip_id:
        raise TuningError(f"tuning cache {path} is for chip {data.get('chip')!r}, "
                          f"not {chip_id!r}")
    return data["entries"]


def save_cache(path: Path, chip_id: str, entries: dict[str, dict]) -> None:
    """Merge into the file as it is now, under a lock (workers of --devices save at once:
    unlocked, two processes saving 150 keys each kept 153 of 300), atomically. An
    unusable cache is TuningError, the file left as it is (its entries are not lost)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock", timeout=600):
            merged = {**load_cache(path, chip_id), **entries}
            write_json_atomic(path, {"schema": SCHEMA, "version": VERSION, "chip": chip_id,
                                     "entries": merged})
    except OSError as e:   # (a full disk; a lock held past 10 minutes: filelock.Timeout)
        raise TuningError(f"cannot save the tuning cache {path}: {e}") from None


def tune(candidates: Sequence[TileConfig], bench: Callable[[TileConfig], float],
         budget_s: float, clock: Callable[[], float] = time.perf_counter):
    """Benchmark candidates in order until the budget is spent; (best, timings by name)."""
    if not candidates:
        raise ValueError("no candidate configs to tune")
    started, timings = clock(), {}
    best, best_ms = None, math.inf
    # the budget stops the search once a tile ran: a first tile that failed (a held tile
    # that no longer compiles) ended it with none (a review)
    for cfg in candidates:
        if best is not None and clock() - started > budget_s:
            break
        ms = bench(cfg)  # inf: the config failed to compile or launch
        timings[config_name(cfg)] = ms if math.isfinite(ms) else None
        if ms < best_ms:
            best, best_ms = cfg, ms
    if best is None:
        raise RuntimeError(f"no candidate config ran ({len(timings)} tried)")
    return best, timings


def _cache_key(key: str, candidates: Sequence[TileConfig], kernel: str = "") -> str:
    """Cache entries are per candidate list and kernel source: `key` plus a digest of
    both. Without the kernel, an A/B reference kernel of other source but the same
    candidates shared the current's entry: each saved over the other's, so every later
    calibration run tuned both again while measuring (a review)."""
    digest = hashlib.sha1((repr(tuple(candidates)) + (f" {kernel}" if kernel else ""))
                          .encode()).hexdigest()[:8]
    return f"{key} #{digest}"


# Tile fields added after tables and baselines were written, with the value every tile
# had before: left out of a tile's JSON at that value, so a stored tile compares equal
# (a baseline's tile, a pin, the tuning cache) and reads back as the same TileConfig.
LATER_FIELDS = {"occupancy": 1}


def tile_dict(c) -> dict:
    """A tile as JSON stores it: its fields, but a later one at its old value
    (`LATER_FIELDS`); a dict is taken as a tile's fields."""
    d = dict(c) if isinstance(c, dict) else asdict(c)
    for name, old in LATER_FIELDS.items():
        if d.get(name, old) == old:
            d.pop(name, None)
    return d


def config_name(c) -> str:
    """'128x256x64 g8 s3 w8' (a variant other than the tiled kernel first, e.g. 'tma
    128x256x64 g8 s3 w8', ' k4' for split-K, ' o2' for two programs per SM) for a tile
    given as a dict (JSON) or a kernel's TileConfig."""
    d = tile_dict(c)
    try:
        name = (f"{d['block_m']}x{d['block_n']}x{d['block_k']} g{d['group_m']} "
                f"s{d['num_stages']} w{d['num_warps']}")
    except KeyError:
        return repr(d)
    variant, split = d.get("variant", "tiled"), d.get("split_k", 1)
    return (f"{variant} " if variant != "tiled" else "") + name + \
        (f" k{split}" if split != 1 else "") + \
        (f" o{d['occupancy']}" if "occupancy" in d else "")


# config_name's words: a variant other than the tiled kernel (tma, tma_split, gemv...), the
# block, group, stages and warps, then split and programs per SM where not 1
_NAME = re.compile(r"(?:\b(tma\w*|gemv) )?\b(\d+)x(\d+)x(\d+) g(\d+) s(\d+) w(\d+)"
                   r"((?: [ko]\d+)*)")


def parse_config_name(text: str) -> dict | None:
    """The fields of the first tile named in `text` as `config_name` writes it (a source
    before it or operand copies after it, as scripts/lookup_diff.py writes its picks, are
    passed over), every field given (`split_k`, `occupancy` 1 where not written); None
    where `text` names none. TileConfig(**it) is the tile."""
    got = _NAME.search(text)
    if got is None:
        return None
    variant, *dims, rest = got.groups()
    extra = {p[0]: int(p[1:]) for p in rest.split()}
    fields = ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")
    return {**dict(zip(fields, map(int, dims))), "variant": variant or "tiled",
            "split_k": extra.get("k", 1), "occupancy": extra.get("o", 1)}


def config_spec(c) -> str:
    """'tma:128x256x64:s3:w8' (':k4' for split-K, ':g4' for a GROUP_M other than 8, ':o2'
    for two programs per SM): a tile as scripts/device/tiles.py takes it on its command
    line, for a tile given as a dict (JSON) or a kernel's TileConfig. Every field that
    tells two tiles apart is in it: tiles.py keys its providers by it."""
    d = tile_dict(c)
    split, group = d.get("split_k", 1), d.get("group_m", 8)
    return (f"{d.get('variant', 'tiled')}:{d['block_m']}x{d['block_n']}x{d['block_k']}:"
            f"s{d['num_stages']}:w{d['num_warps']}" + (f":k{split}" if split > 1 else "")
            + (f":g{group}" if group != 8 else "")
            + (f":o{d['occupancy']}" if "occupancy" in d else ""))


def _candidate(stored, candidates: Sequence[TileConfig]) -> TileConfig | None:
    """The candidate whose fields equal a stored config, matched by value: the A/B
    reference kernel's TileConfig is its own commit's class, never equal to ours."""
    return next((c for c in candidates
                 if isinstance(stored, dict) and tile_dict(c) == tile_dict(stored)), None)


class Tuner:
    """One run's tuning state: pins, the local cache, and the choices made so far."""

    def __init__(self, setup: TuningSetup) -> None:
        self.setup = setup
        self.pins = {} if setup.retune or not setup.pins_from else load_pins(setup.pins_from)
        # read when searching, --retune too: an unusable cache is an error here, not at
        # the first tuned key's save (whose entries are kept: retune ignores them)
        cached = {}
        if setup.searching:
            cached = load_cache(setup.cache_path, setup.chip_id)
            # each search ends in a save: unwritable, said before any search is run
            check_writable(setup.cache_path, "the tuning cache (GEMMGATE_TUNING_DIR, "
                           "TuningSetup.cache_dir)")
        self.cache = {} if setup.retune else cached
        self.memo: dict[tuple, Choice] = {}

    def choose(self, key: str, candidates: Sequence[TileConfig],
               bench: Callable[[TileConfig], float], kernel: str = "") -> TileConfig:
        return self.choice(key, candidates, bench, kernel).config

    def choice(self, key: str, candidates: Sequence[TileConfig],
               bench: Callable[[TileConfig], float], kernel: str = "") -> Choice:
        """The pinned, cached or freshly tuned tile for `key`, with where it came from."""
        # Memo and cache are per candidate list too: the A/B reference kernel may come
        # from a commit with other configs, and must not overwrite the current's choice.
        memo_key = (key, tuple(candidates))
        choice = self.memo.get(memo_key)
        if choice is None and self.setup.force:
            choice = Choice(key, forced(candidates[0], self.setup.force), FORCED, kernel)
        choice = choice or self._lookup(key, candidates, kernel)
        if choice is None and not (self.setup.searching and len(candidates) > 1):
            # the kernel's own choice: nothing to time
            choice = Choice(key, candidates[0], KERNEL, kernel)
        if choice is None:
            held = incumbent(key, candidates, self.setup.first)
            # the held tile first, at most MAX_TIMED in all (a tile the kernel's 30 lack,
            # a stale or lent entry's, made 31; a review)
            ordered = candidates if held is None else \
                (held, *(c for c in candidates if c != held))[:MAX_TIMED]
            best, timings = tune(ordered, bench, self.setup.budget_s)
            if held is not None:
                best = kept_incumbent(held, best, timings)
            choice = Choice(key, best, TUNED, kernel, timings, offered=len(ordered))
            entry = {_cache_key(key, candidates, kernel): choice.to_json()}
            self.cache.update(entry)
            save_cache(self.setup.cache_path, self.setup.chip_id, entry)
        self.memo[memo_key] = choice
        return choice

    def chooser(self, kernel: str = "") -> Chooser:
        """A `choose` hook for one kernel (source hash `kernel`) that records its choice."""
        return Chooser(self, kernel)

    def _lookup(self, key: str, candidates: Sequence[TileConfig], kernel: str):
        lookups = ((PINNED, self.pins, key),
                   (CACHED, self.cache, _cache_key(key, candidates, kernel)))
        for source, table, k in lookups:
            entry = table.get(k)
            if not isinstance(entry, dict):
                continue
            cfg = _candidate(entry.get("config"), candidates)
            if cfg is None and source == PINNED:   # the pinned tile all the same, made in
                cfg = _made(entry.get("config"), candidates)   # the candidates' class: the
                # kernel's own pick ran in its place, said nowhere (a review)
            if cfg is None:
                continue  # configs.py changed since: tune again
            tuned_for = entry.get("kernel", "")
            if source == CACHED and kernel and tuned_for != kernel:
                continue  # a tile tuned on other kernel source: tune again
            offered = entry.get("offered", 0)
            return Choice(key, cfg, source, tuned_for, dict(entry.get("timings_ms", {})),
                          stale=source == PINNED and bool(kernel) and tuned_for != kernel,
                          offered=offered if isinstance(offered, int) else 0)
        return None


def _made(fields, candidates: Sequence[TileConfig]) -> TileConfig | None:
    """A stored tile (its JSON fields) as the candidates' class makes it, or None where
    that class refuses it (a field it lacks, a value it rejects)."""
    if not isinstance(fields, dict) or not candidates:
        return None
    try:
        return type(candidates[0])(**fields)
    except (TypeError, ValueError):
        return None


def incumbent(key: str, candidates: Sequence[TileConfig],
              first: Sequence[tuple[str, tuple]]) -> TileConfig | None:
    """The tile `first` names for this key (its prefix starts the key), if any: a search
    times it first, so the budget cannot skip it (`kept_incumbent`). One the kernel's
    candidates lack (an older search space, a heuristic's tile: 6 of session 28's 72
    stale entries) is made in the candidates' class; None if that class refuses it."""
    for prefix, fields in first:
        if key.startswith(prefix):
            hit = _candidate(dict(fields), candidates) or _made(dict(fields), candidates)
            if hit is None and candidates:
                continue
            return hit
    return None


def kept_incumbent(incumbent: TileConfig, best: TileConfig,
                   timings: dict[str, float | None]) -> TileConfig:
    """The incumbent unless `best` measured more than KEEP_MARGIN faster: a retune does
    not trade a table's tile for one within the search's own noise."""
    mine, theirs = timings.get(config_name(incumbent)), timings.get(config_name(best))
    if mine is None or theirs is None or theirs < mine * (1 - KEEP_MARGIN):
        return best
    return incumbent


def forced(config: TileConfig, overrides) -> TileConfig:
    """`config` with some fields replaced (validated by the kernel's own dataclass)."""
    fields = asdict(config)
    unknown = [k for k, _ in overrides if k not in fields]
    if unknown:
        raise TuningError(f"unknown tile field(s) {', '.join(unknown)}; "
                          f"known: {', '.join(fields)}")
    return type(config)(**{**fields, **dict(overrides)})


class Chooser:
    """The hook a kernel calls: `choose(key, candidates, bench) -> tile`. `last` is the
    choice of its latest call (None until called): the tile the kernel ran."""

    def __init__(self, tuner: Tuner, kernel: str) -> None:
        self.tuner, self.kernel = tuner, kernel
        self.last: Choice | None = None

    def __call__(self, key: str, candidates: Sequence[TileConfig],
                 bench: Callable[[TileConfig], float]) -> TileConfig:
        self.last = self.tuner.choice(key, candidates, bench, self.kernel)
        return self.last.config
