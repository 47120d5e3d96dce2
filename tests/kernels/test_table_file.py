"""kernels/table_file.py: the committed tuning table files, read and checked."""

import json

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


def test_variant_hash_follows_the_source():
    assert table_file.variant_hash("tiled") != table_file.variant_hash("tma")
    assert len(table_file.variant_hash("tiled")) == 12


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
