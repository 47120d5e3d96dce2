"""kernels/table_file.py: the committed tuning table files, read and checked."""

import json
import warnings
from dataclasses import asdict
from pathlib import Path

import pytest

from kernels import table_file
from kernels.tile import TileConfig


def test_no_committed_entry_is_a_holdout_shape():
    """The holdout sets measure how the table carries to shapes it was not tuned on."""
    from gemmgate.shapes import SETS

    held = {(c.m, c.n, c.k) for name in SETS if name.startswith("holdout")
            for c in SETS[name]}
    for path in table_file.DEFAULT_DIR.glob("*.json"):
        tuned = {(e["m"], e["n"], e["k"]) for e in table_file.read_table(path)["entries"]}
        assert not tuned & held, f"{path} tunes holdout shapes {sorted(tuned & held)}"


@pytest.mark.parametrize("bad,match", [
    ("not json", "unreadable"),
    (json.dumps({"schema": "x"}), "not a kernels.tuning-table"),
    (json.dumps({"schema": table_file.SCHEMA, "version": 1, "match": [], "entries": [
        {"bucket": "b", "m": 1, "n": 1, "k": 1, "kernel": "k",
         "config": {"block_m": 24}}]}), "entry 0 is invalid"),
])
def test_a_bad_table_names_the_file(tmp_path, bad, match):
    p = tmp_path / "t.json"
    p.write_text(bad)
    with pytest.raises(table_file.TableError, match=match):
        table_file.read_table(p)


GOOD = {"bucket": "16bit bf16 rc tma ld8", "m": 64, "n": 64, "k": 64, "kernel": "k", "mode": "bf16",
        "layout": "rc", "pad": 8, "config": asdict(TileConfig(64, 64, 32, 8, 2, 4, "tma"))}


@pytest.mark.parametrize("change,match", [
    ({}, None),
    ({"mode": None}, None),                          # the bucket's: --stale reads it
    ({"mode": None, "bucket": "16bit"}, "mode None is not one of"),
    ({"mode": None, "bucket": "16bit bf17 rr tma"}, "mode 'bf17' is not one of"),
    ({"mode": "bf17"}, "mode 'bf17'"),
    ({"mode": "fp16"}, "mode 'fp16' is not its bucket's"),
    ({"m": "64"}, "m is '64'"),
    ({"k": 64.5}, "k is 64.5"),
    ({"n": -1}, "n is -1"),
    ({"pad": True}, "pad is True"),
    ({"layout": "rx"}, "layout 'rx'"),
    ({"bucket": 3, "mode": None}, "bucket is 3"),
    ({"k": None}, "k is missing"),               # (the lookup's KeyError, a review)
    ({"pad": None}, None),                       # 0
    ({"tuned_ms": 0.012}, None),
    ({"tuned_ms": 0}, None),
    ({"tuned_ms": "fast"}, "tuned_ms is 'fast'"),
    ({"tuned_ms": [1.0]}, r"tuned_ms is \[1.0\]"),
    ({"tuned_ms": float("nan")}, "tuned_ms is nan"),
    ({"tuned_ms": -1.0}, "tuned_ms is -1.0"),
    ({"tuned_ms": True}, "tuned_ms is True"),
    ({"config": {**GOOD["config"], "split_k": float("nan")}}, "config.split_k is nan"),
    ({"config": {**GOOD["config"], "split_k": 2.5}}, "config.split_k is 2.5"),
    ({"config": {**GOOD["config"], "num_stages": 3.0}}, "config.num_stages is 3.0"),
    ({"config": {**GOOD["config"], "group_m": True}}, "config.group_m is True"),
    ({"config": "64x64"}, "config is '64x64'"),   # (an AttributeError past every except)
    ({"config": [64, 64]}, r"config is \[64, 64\]"),
])
def test_an_entry_the_lookup_or_a_retune_could_not_read_is_refused(tmp_path, change, match):
    e = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    data = {"schema": table_file.SCHEMA, "version": 1, "match": ["h200"], "entries": [e]}
    if match is None:
        assert table_file.check_table(data, "t") == data
    else:
        with pytest.raises(table_file.TableError, match=f"entry 0 is invalid.*{match}"):
            table_file.check_table(data, "t")


def test_an_infinite_size_and_a_match_not_of_strings_are_refused(tmp_path):
    """JSON's Infinity loads as a float (int() of it is OverflowError); the lookup lowers
    each match string."""
    p = tmp_path / "t.json"
    text = json.dumps({"schema": table_file.SCHEMA, "version": 1, "match": ["h200"],
                       "entries": [GOOD]})
    p.write_text(text.replace('"m": 64', '"m": Infinity'))
    with pytest.raises(table_file.TableError, match="m is inf"):
        table_file.read_table(p)
    p.write_text(json.dumps({"schema": table_file.SCHEMA, "version": 1, "match": ["h200", 200],
                             "entries": []}))
    with pytest.raises(table_file.TableError, match="not a kernels.tuning-table"):
        table_file.read_table(p)


def test_variant_hash_follows_the_source():
    assert table_file.variant_hash("tiled") != table_file.variant_hash("tma")
    assert len(table_file.variant_hash("tiled")) == 12


@pytest.mark.parametrize("variant", sorted(table_file._SOURCES))
def test_a_variants_hashed_source_holds_every_jit_function_its_kernels_call(variant):
    """`variant_hash` hashes the functions a variant's `KERNELS` lists, so that list must
    hold every `@triton.jit` piece its kernels call, helpers of helpers too (kernels/
    jit_parts.py): an edit to a piece left out would keep entries tuned on other code."""
    import inspect
    import re

    listed = {id(k.fn) for k in table_file._SOURCES[variant]}
    for k in table_file._SOURCES[variant]:
        for name in re.findall(r"\b([A-Za-z_]\w*)\s*\(", inspect.getsource(k.fn)):
            fn = getattr(k.fn.__globals__.get(name), "fn", None)   # a JIT (or interpreted)
            if inspect.isfunction(fn) and fn.__module__.startswith("kernels."):   # function
                assert id(fn) in listed, \
                    f"{variant}: {k.fn.__name__} calls {name}, which KERNELS does not list"


def test_the_committed_tables_load_and_name_real_buckets():
    """kernels/tuned/*.json: readable by the kernel, each entry's tile valid and its
    bucket one the dispatcher can produce (family, mode, layouts, path, ld class)."""
    from kernels.modes import MODES

    tables = sorted(table_file.DEFAULT_DIR.glob("*.json"))
    assert tables, "no committed tuning table"
    for path in tables:
        data = table_file.read_table(path)
        assert data["match"] and data["entries"]
        for e in data["entries"]:
            fam, mode, layouts, path_kind, ld = e["bucket"].split()
            assert fam in ("16bit", "fp32", "fp8") and mode in MODES
            assert len(layouts) == 2 and set(layouts) <= {"r", "c", "s"}
            assert path_kind in ("tma", "ptr") and ld.startswith("ld")
            variant = TileConfig(**e["config"]).variant
            assert variant == "tiled" or path_kind == "tma"   # TMA variants on TMA buckets


def test_entries_tuned_on_another_triton_minor_are_counted_by_version():
    entries = ({"triton": "3.6.0"}, {"triton": "3.6.1"}, {"triton": "3.9.0"}, {},
               {"triton": "3.7.1"})
    assert table_file.other_triton(entries, "3.6.0") == {"3.9.0": 1, "3.7.1": 1}
    assert table_file.other_triton(entries, "3.9.0") == {"3.6.0": 1, "3.6.1": 1, "3.7.1": 1}
    assert table_file.other_triton(({}, {"triton": "3.6.0"}), "3.6.2") == {}


def test_a_table_tuned_on_another_triton_warns_and_is_still_used():
    entries = ({"triton": "3.6.0"},) * 3 + ({"triton": "3.9.0"},)
    with pytest.warns(UserWarning, match=r"t\.json: 3 of its 4 tuning entries were tuned on "
                      r"triton 3\.6\.0, and this process runs triton 3\.9\.1"):
        table_file.warn_triton("t.json", entries, "3.9.1")
    with pytest.warns(UserWarning, match=r"3\.6\.0 \(3\), 3\.9\.0 \(1\)"):
        table_file.warn_triton("t.json", entries, "3.8.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table_file.warn_triton("t.json", entries[:3], "3.6.4")   # the same minor: silent


def test_the_first_lookup_of_a_table_warns_once_where_it_was_tuned_on_another_triton(
        tmp_path, monkeypatch):
    from kernels import table

    config = TileConfig(128, 128, 64, 8, 4, 4, "tma")
    d = tmp_path / "tuned"
    d.mkdir()
    (d / "nvidia-h200.json").write_text(json.dumps({
        "schema": table_file.SCHEMA, "version": table_file.VERSION, "chip": "nvidia-h200",
        "match": ["h200"], "entries": [{
            "bucket": "16bit bf16 rr tma", "mode": "bf16", "m": 64, "n": 64, "k": 64,
            "config": asdict(config),
            "kernel": table_file.variant_hash("tma"), "triton": "2.9.0"}]}))
    table.reload()
    monkeypatch.setattr(table_file.triton, "__version__", "3.9.0")
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(2):
                assert table.lookup("NVIDIA H200", "16bit bf16 rr tma", 64, 64, 64,
                                    directory=d) == (config, "table")
        said = [str(x.message) for x in w if "tuned on triton 2.9.0" in str(x.message)]
        assert len(said) == 1 and "runs triton 3.9.0" in said[0]
    finally:
        table.reload()


def test_every_committed_entry_was_stamped_with_this_kernel_source():
    """An edit to a variant's kernel leaves its entries stale, never used: the picks fall
    to farther entries or the heuristic, unmeasured. Before such an edit lands, its stale
    entries are re-stamped where their code is unchanged (scripts/restamp.py --ref REV
    --write, under the table's Triton) and retuned where it moved (gemmgate tune --stale)."""
    for path in table_file.DEFAULT_DIR.glob("*.json"):
        entries = table_file.read_table(path)["entries"]
        stale = [(e["mode"], e["m"], e["n"], e["k"], e["config"].get("variant"))
                 for e in entries if table_file.is_stale(e)]
        assert not stale, (f"{path}: {len(stale)} entries stamped with other kernel source "
                           f"(first: {stale[:3]}); scripts/restamp.py says which compile "
                           "to the same PTX")


def _table(path, match, borrowed_by=None, m=64):
    data = {"schema": table_file.SCHEMA, "version": 1, "match": match,
            "entries": [dict(GOOD, m=m)]}
    if borrowed_by is not None:
        data["borrowed_by"] = borrowed_by
    path.write_text(json.dumps(data))


def test_a_table_names_a_device_by_a_word_of_its_name(tmp_path):
    """"h200" named "GH200" and "a100" "RTX A1000", as a substring (a review): a word of
    the name now, which a letter may follow ("l40" names "L40S")."""
    _table(tmp_path / "h200.json", ["h200"], ["a100", "l40"])
    table_file.reload()
    assert table_file.table_for_device("NVIDIA GH200 480GB", tmp_path).path == ""
    assert table_file.table_for_device("NVIDIA RTX A1000 Laptop GPU", tmp_path).path == ""
    assert table_file.table_for_device("NVIDIA H200 NVL", tmp_path).path.endswith("h200.json")
    assert table_file.table_for_device("NVIDIA L40S", tmp_path).lent.endswith("h200.json")


def test_a_table_serves_the_devices_it_lends_itself_to_where_none_matches_them(tmp_path):
    """`borrowed_by`: a device no table's `match` names reads the lender's table."""
    _table(tmp_path / "a-lender.json", ["h200"], ["h100", "l40"], m=64)
    table_file.reload()
    assert table_file.entries_for("NVIDIA H100 80GB HBM3", tmp_path)[0].endswith("a-lender.json")
    assert table_file.entries_for("NVIDIA L40S", tmp_path)[0].endswith("a-lender.json")
    lent = table_file.table_for_device("NVIDIA L40S", tmp_path)
    assert lent.lent == lent.path and lent.lent.endswith("a-lender.json")
    assert table_file.table_for_device("NVIDIA H200", tmp_path).lent == ""
    assert table_file.entries_for("NVIDIA A100", tmp_path) == ("", ())
    table_file.reload()


def test_a_devices_own_table_comes_first_and_the_lent_one_fills_in_the_rest(tmp_path):
    """Session 65: an own table's entries answer their bucket and shape, whichever file
    sorts first; the lent table's entries follow for the buckets and shapes the own one
    lacks, so tuning a few keys on a chip keeps the lent tiles everywhere else."""
    fresh = dict(GOOD, kernel=table_file.variant_hash("tma"))
    _table(tmp_path / "z-lender.json", ["h200"], ["h100"], m=64)
    data = json.loads((tmp_path / "z-lender.json").read_text())
    data["entries"] = [dict(fresh, m=64), dict(fresh, m=256)]
    (tmp_path / "z-lender.json").write_text(json.dumps(data))
    own = dict(fresh, m=64, config=dict(GOOD["config"], block_m=32))  # the lent m=64's key
    (tmp_path / "a-own.json").write_text(json.dumps(
        {"schema": table_file.SCHEMA, "version": 1, "match": ["h100"],
         "entries": [own, dict(fresh, m=128)]}))
    table_file.reload()
    path, entries, lent, own_count = table_file.table_for_device("NVIDIA H100 80GB HBM3",
                                                                tmp_path)
    assert path.endswith("a-own.json") and lent.endswith("z-lender.json")
    assert [(e["m"], e["config"]["block_m"]) for e in entries] == [(64, 32), (128, 64), (256, 64)]
    assert own_count == 2
    assert table_file.table_for_device("NVIDIA H200", tmp_path).entries == tuple(data["entries"])
    # an own table that holds every lent key reads nothing lent
    (tmp_path / "a-own.json").write_text(json.dumps(
        {"schema": table_file.SCHEMA, "version": 1, "match": ["h100"],
         "entries": [own, dict(fresh, m=256)]}))
    table_file.reload()
    table = table_file.table_for_device("NVIDIA H100 80GB HBM3", tmp_path)
    assert table.lent == "" and len(table.entries) == 2 and table.name == table.path
    # a stale own entry (never used) hides nothing: the lent one for its key is read
    (tmp_path / "a-own.json").write_text(json.dumps(
        {"schema": table_file.SCHEMA, "version": 1, "match": ["h100"],
         "entries": [dict(own, kernel="0123456789ab"), dict(fresh, m=256)]}))
    table_file.reload()
    table = table_file.table_for_device("NVIDIA H100 80GB HBM3", tmp_path)
    assert [(e["m"], e["config"]["block_m"]) for e in table.entries] == [(64, 32), (256, 64),
                                                                          (64, 64)]
    assert table.name == f"{table.path} over {table.lent} (lent)"
    table_file.reload()


def test_two_tables_that_claim_one_device_are_an_error_naming_both(tmp_path):
    """File-name order chose silently: `nvidia-h200-candidate.json` sorts before
    `nvidia-h200.json`, took the H200's lookups, and a tune wrote the file no lookup read."""
    _table(tmp_path / "nvidia-h200.json", ["h200"], ["h100"], m=64)
    _table(tmp_path / "nvidia-h200-candidate.json", ["h200"], m=64)
    table_file.reload()
    try:
        with pytest.raises(table_file.TableError, match=r"nvidia-h200-candidate.json and "
                           r".*nvidia-h200.json both name 'nvidia h200' in their match"):
            table_file.table_for_device("NVIDIA H200", tmp_path)
        assert table_file.table_for_device("NVIDIA H100 80GB HBM3", tmp_path).lent.endswith(
            "nvidia-h200.json")   # one lender: no doubt there
        _table(tmp_path / "other-lender.json", ["l40"], ["h100"], m=64)
        table_file.reload()
        with pytest.raises(table_file.TableError, match="in their borrowed_by"):
            table_file.table_for_device("NVIDIA H100 80GB HBM3", tmp_path)
    finally:
        table_file.reload()


@pytest.mark.parametrize("borrowed_by", ["h100", ["h100", 3], {"h100": 1}, ["h100", ""]])
def test_a_borrowed_by_not_a_list_of_strings_is_refused(tmp_path, borrowed_by):
    p = tmp_path / "t.json"
    _table(p, ["h200"], borrowed_by)
    with pytest.raises(table_file.TableError, match="not a kernels.tuning-table"):
        table_file.read_table(p)


def test_the_committed_h200_table_serves_an_h100_under_its_own():
    """Session 64 measured the H200's table on an H100 against the heuristic; session 65
    tuned 12 keys on an H100 (pr fp8, 8192^3 fp32 and tf32) into its own table, read
    first (docs/PERF.md)."""
    h100 = table_file.table_for_device("NVIDIA H100 80GB HBM3")
    h200 = table_file.table_for_device("NVIDIA H200")
    assert h100.path.endswith("nvidia-h100.json") and h100.lent.endswith("nvidia-h200.json")
    own = table_file.read_table(Path(h100.path))["entries"]
    assert h100.entries[:len(own)] == tuple(own)
    assert len(h100.entries) == len(own) + len(h200.entries) - len(
        {table_file.where(e) for e in own} & {table_file.where(e) for e in h200.entries})


def test_an_unreadable_table_beside_the_device_s_is_warned_of_and_skipped(tmp_path):
    """A truncated nvidia-a100.json made every H200 lookup raise (a review): a file no
    device can read is skipped with a warning naming it; the others serve as before."""
    _table(tmp_path / "nvidia-h200.json", ["h200"], m=64)
    (tmp_path / "nvidia-a100.json").write_text('{"schema":\n')
    table_file.reload()
    try:
        with pytest.warns(UserWarning, match=r"nvidia-a100.json is unreadable.*; skipped"):
            path, entries = table_file.entries_for("NVIDIA H200", tmp_path)
        assert path.endswith("nvidia-h200.json") and len(entries) == 1
    finally:
        table_file.reload()


@pytest.fixture
def hashed_again():
    """variant_hash computed afresh (its cache cleared), and again after the test's
    monkeypatches are undone."""
    table_file.variant_hash.cache_clear()
    yield
    table_file.variant_hash.cache_clear()


@pytest.mark.parametrize("module, name, value, moved", [
    # a constant a kernel reads (the load warp's registers, a gl.constexpr)
    ("matmul_ws", "_LOAD_REGS", 24, {"tma_ws"}),
    # a value a launch passes as a constexpr (stream-K's parts a tile)
    ("matmul_tma_streamk", "MAX_PARTS", 3, {"tma_streamk"}),
    # a constant a host part reads (B read first from Triton 3.6 on: IEEE fp32's TMA dot)
    ("fma", "B_FIRST_FROM", (3, 6), {"tma", "tma_split", "tma_hybrid"}),
    # the widest C box a wide or tall tile stores through (past it: C by pointer, C_PTR)
    ("tile", "C_BOX_MAX", 512, {"tma_wide", "tma_tall"}),
    # the warp-specialized kernel's register budget a thread (its launch's maxnreg)
    ("matmul_ws", "max_regs", lambda block_m, occupancy=1: 160, {"tma_ws"}),
    # the stride factors the tiled and gemv kernels compile in (G_AM...: their host
    # `_split_stride`), and a launch's 64-bit offsets (I64: `tile.wide_offsets`); an edit
    # to either left those entries fresh (a review, session 81)
    ("matmul_tiled", "_split_stride", lambda s: (s, 1), {"tiled"}),
    ("matmul_gemv", "_split_stride", lambda s: (s, 1), {"gemv"}),
    ("matmul_tiled", "wide_offsets", lambda *operands: True, {"tiled"}),
    ("matmul_tma", "wide_offsets", lambda *operands: True, {"tma", "tma_hybrid"}),
], ids=["kernel_constant", "compiled_in_value", "compiled_in_function", "wide_c_box",
        "ws_registers", "tiled_strides", "gemv_strides", "tiled_i64", "tma_i64"])
def test_what_a_kernel_compiles_in_is_in_its_source_hash(monkeypatch, hashed_again,
                                                         module, name, value, moved):
    """The source hash was the kernels' text alone: an edit to a constant a kernel reads,
    or to a host part that decides a constexpr the entry's tile does not hold, left the
    entries tuned on the other code fresh (a review found `B_FIRST_FROM` and `LOAD_REGS`;
    `LOAD_REGS` and `MAX_PARTS` were pinned by a test instead). Those variants' hashes
    move now, and only theirs."""
    import importlib

    before = {v: table_file.variant_hash(v) for v in table_file._SOURCES}
    mod = importlib.import_module(f"kernels.{module}")
    old = getattr(mod, name)
    monkeypatch.setattr(mod, name, type(old)(value)
                        if name.startswith("_") and not callable(old) else value)
    table_file.variant_hash.cache_clear()
    after = {v: table_file.variant_hash(v) for v in table_file._SOURCES}
    assert {v for v in before if before[v] != after[v]} == moved


def test_an_fp8_tile_of_k_blocks_under_32_is_refused():
    """fp8's dot takes K >= 32: such an entry made every call of its shape a Triton
    CompilationError on a device (a review)."""
    e = dict(GOOD, bucket="fp8 fp8 rc tma ld128", mode="fp8",
             config=asdict(TileConfig(64, 64, 16, 8, 2, 4, "tma")))
    data = {"schema": table_file.SCHEMA, "version": 1, "match": ["h200"], "entries": [e]}
    with pytest.raises(table_file.TableError, match="config.block_k is 16: fp8's dot"):
        table_file.check_table(data, "t")
    e["config"] = asdict(TileConfig(64, 64, 32, 8, 2, 4, "tma"))
    assert table_file.check_table(data, "t") == data


def test_a_table_that_repeats_a_bucket_and_shape_is_warned_of_naming_both_entries(tmp_path):
    """Two entries of one bucket and shape (a hand merge of two tunes' files) were read
    in silence: the first ran, the second's tile lost its exact key unsaid, and both took a
    neighbour's place in the nearest lookup. Read, and warned of once, naming both."""
    from kernels import table

    first, second = TileConfig(64, 64, 64, 8, 4, 4, "tma"), TileConfig(128, 128, 64, 8, 4, 8, "tma")
    d = tmp_path / "tuned"
    d.mkdir()

    def entry(c, m=4096):
        return {"bucket": "16bit bf16 rr tma ld128", "mode": "bf16", "m": m, "n": 4096,
                "k": 4096, "config": asdict(c), "kernel": table_file.variant_hash("tma"),
                "tuned_ms": 0.5}

    data = {"schema": table_file.SCHEMA, "version": 1, "match": ["h200"],
            "entries": [entry(first), entry(first, 2048), entry(second), entry(second, 2048)]}
    (d / "nvidia-h200.json").write_text(json.dumps(data))
    assert table_file.repeats(data["entries"]) == [(2, 0), (3, 1)]
    table.reload()
    try:
        with pytest.warns(UserWarning, match=r"nvidia-h200\.json: entry 2 repeats entry 0's "
                          r"bucket and shape \(16bit bf16 rr tma ld128, 4096 x 4096 x 4096\), "
                          r"and 1 more entries repeat earlier ones"):
            got = table.lookup("NVIDIA H200", "16bit bf16 rr tma ld128", 4096, 4096, 4096,
                               directory=d, variants=("tma",))
        assert got == (first, "table")   # read as before: the first
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # once a read of the folder
            table.lookup("NVIDIA H200", "16bit bf16 rr tma ld128", 4096, 4096, 4096,
                         directory=d, variants=("tma",))
        for path in table_file.DEFAULT_DIR.glob("*.json"):   # the committed: none
            assert not table_file.repeats(table_file.read_table(path)["entries"]), path
    finally:
        table.reload()


def test_every_committed_entry_is_its_own_case_s_exact_pick():
    """Each committed entry is read: its case (mode, shape, layout, padding), laid out as
    the harness lays it and decided on a Hopper chip (copies kept or not), is filed in the
    entry's bucket and gets the entry's tile back (the device's own entry first, where
    its own table has one). Two H200 entries tuned before B was copied K-major at M >= 64
    (tf32 and fp8 128 x 8192 x 8192 rr, buckets 'rr tma') were in no bucket a call makes:
    never read, their 4x slower times left in the table (a review)."""
    from gemmgate.case import Case
    from gemmgate.inputs import layout
    from gemmgate.precision import get_mode
    from kernels import table
    from kernels.decide import decide
    from kernels.modes import mode_named

    devices = {"nvidia-h200": "NVIDIA H200", "nvidia-h100": "NVIDIA H100 80GB HBM3"}
    for path in sorted(table_file.DEFAULT_DIR.glob("*.json")):
        device = devices[path.stem]
        for i, e in enumerate(table_file.read_table(path)["entries"]):
            case = Case(e["m"], e["n"], e["k"], e.get("layout", "rr"), e.get("pad", 0))
            a, b = layout(case, get_mode(e["mode"]))
            filed = {}   # copies kept (the harness), or made per call (a library call)
            for cached in (True, False):
                *_, bucket, _, _, variants = decide(
                    mode_named(e["mode"]), (9, 0), case.m, case.n, case.k, a.stride(),
                    b.stride(), (True, True), a.element_size(), has_tma=True, cached=cached)
                filed[bucket] = variants
            where = f"{path.name} entry {i} ({e['mode']} {case})"
            assert e["bucket"] in filed, f"{where}: its case is filed in {sorted(filed)}"
            bucket, variants = e["bucket"], filed[e["bucket"]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # (tuned on another triton)
                got = table.lookup(device, bucket, case.m, case.n, case.k, variants=variants,
                                   sms=132, smem=232448)
            assert got == (TileConfig(**e["config"]), "table"), f"{where}: {got}"
