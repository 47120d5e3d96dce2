"""gemmgate/shapes.py: set names resolved, user shape files, the device-memory check."""

import re
import subprocess
import sys

import pytest

from gemmgate.files import InputError
from gemmgate.shapes import (
    COLUMNS,
    SETS,
    Case,
    case_bytes,
    check_fits,
    load_shape_file,
    parse_inline,
    resolve,
)

# --- shape files --------------------------------------------------------------------------

def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_csv_full_header(tmp_path):
    p = _write(tmp_path, "s.csv", "m,n,k,layout,pad\n64,32,96,cr,0\n8, 16, 24, rc, 5\n")
    assert load_shape_file(p) == (Case(64, 32, 96, "cr"), Case(8, 16, 24, "rc", 5))


def test_csv_without_optional_columns_and_blank_optionals(tmp_path):
    p = _write(tmp_path, "s.CSV", "M,N,K\n1,2,3\n4,5,6\n")
    assert load_shape_file(str(p)) == (Case(1, 2, 3), Case(4, 5, 6))
    q = _write(tmp_path, "t.csv", "m,n,k,layout,pad\n1,2,3,,\n")
    assert load_shape_file(q) == (Case(1, 2, 3),)


def test_yaml_list_and_cases_key(tmp_path):
    p = _write(tmp_path, "s.yaml",
               "- {m: 64, n: 64, k: 64}\n- {m: 1, n: 2, k: 3, layout: cc, pad: 2}\n")
    assert load_shape_file(p) == (Case(64, 64, 64), Case(1, 2, 3, "cc", 2))
    q = _write(tmp_path, "s.yml", "cases:\n  - m: 7\n    n: 8\n    k: 9\n    layout: rc\n")
    assert load_shape_file(q) == (Case(7, 8, 9, "rc"),)


@pytest.mark.parametrize(("name", "text", "match"), [
    ("s.txt", "m,n,k\n1,2,3\n", "must end in .csv, .yaml or .yml"),
    ("s.csv", "", "holds no cases"),
    ("s.csv", "m,n,k\n", "holds no cases"),
    ("s.yaml", "[]\n", "holds no cases"),
    ("s.csv", "m,n\n1,2\n", "case 1 lacks 'k'"),
    ("s.yaml", "- {m: 1, k: 3}\n", "case 1 lacks 'n'"),
    ("s.csv", "m,n,k\n1,2,3\n4,x,6\n", "case 2"),
    ("s.yaml", "- {m: 1, n: 2, k: 3.5}\n", "case 1"),
    ("s.csv", "m,n,k\n1,-2,3\n", "negative dimension"),
    ("s.csv", "m,n,k,pad\n1,2,3,-4\n", "pad must be >= 0"),
    ("s.csv", "m,n,k,layout\n1,2,3,tt\n", "unknown layout 'tt'"),
    ("s.yaml", "- {m: 1, n: [2\n", "not valid YAML"),
    ("s.yaml", "42\n", "must hold a list"),
    ("s.yaml", "other: []\n", "unknown top-level key\\(s\\) 'other'"),
    ("s.yaml", "cases: [{m: 1, n: 2, k: 3}]\nother: 1\n", "key\\(s\\) 'other'; the file is"),
    pytest.param("s.yaml", "- " + "[" * 5000 + "\n", "nests deeper than the YAML reader",
                 id="yaml-nested-5000-deep"),
    pytest.param("s.csv", 'm,n,k\n"16,16,16\n' + "16,16,16\n" * 15000,
                 r"s.csv:\d+: not a CSV the reader can parse \(field larger than field "
                 r"limit .*unclosed quote", id="csv-stray-quote-past-the-field-limit"),
    ("s.yaml", "- 1\n", "case 1 must be a mapping"),
    ("s.csv", "m,n,k\n1_000,2,3\n", "m must be a whole number, got '1_000'"),
    ("s.csv", "m,n,k\n\u0661\u0666,2,3\n", "m must be a whole number"),
])
def test_shape_file_errors(tmp_path, name, text, match):
    p = _write(tmp_path, name, text)
    with pytest.raises(ValueError, match=match) as e:
        load_shape_file(p)
    assert str(p) in str(e.value)  # every message names the file


@pytest.mark.parametrize("name", ["missing.csv", "missing.yaml", "missing.txt"])
def test_missing_shape_file(tmp_path, name):
    with pytest.raises(ValueError, match="cannot read shape file"):
        load_shape_file(tmp_path / name)


def test_directory_is_not_readable(tmp_path):
    d = tmp_path / "dir.csv"
    d.mkdir()
    with pytest.raises(ValueError, match="cannot read") as e:
        load_shape_file(d)
    assert f"shape file {d}: it is a directory" in str(e.value)


@pytest.mark.parametrize(("data", "match"), [
    (b"PK\x03\x04\x14\x00\x06\x00", r"not UTF-8 text \(NUL byte at offset 5"),  # an .xlsx
    ("m,n,k\n1,2,3 # \xe9\n".encode("latin-1"), r"not UTF-8 text \(byte 0xe9 at offset 14\)"),
])
def test_binary_or_non_utf8_shape_file(tmp_path, data, match):
    p = tmp_path / "s.csv"
    p.write_bytes(data)
    with pytest.raises(InputError, match=match) as e:
        load_shape_file(p)
    assert f"shape file {p} is not UTF-8 text" in str(e.value)
    assert "give a CSV/YAML/JSON file" in str(e.value)


def test_csv_from_a_spreadsheet(tmp_path):
    # Excel: a BOM, CRLF, empty trailing columns and all-empty rows; all harmless
    p = tmp_path / "s.csv"
    p.write_bytes(b"\xef\xbb\xbfm,n,k,,\r\n1,2,3,,\r\n,,,,\r\n\r\n4,5,6\r\n")
    assert load_shape_file(p) == (Case(1, 2, 3), Case(4, 5, 6))


def _error(p) -> str:
    with pytest.raises(InputError) as e:
        load_shape_file(p)
    assert str(p) in str(e.value)
    return str(e.value)


def test_csv_unknown_header_column(tmp_path):
    p = _write(tmp_path, "s.csv", "m,n,k,dtype\n1,2,3,fp16\n")
    assert _error(p) == (f"{p}:1: unknown column 'dtype' (column 4); "
                         "allowed columns: m, n, k, layout, pad")


def test_csv_row_with_more_fields_than_the_header(tmp_path):
    p = _write(tmp_path, "s.csv", "m,n,k\n1,2,3\n\n4,5,6,rc\n")
    msg = _error(p)
    assert msg.startswith(f"{p}:4: case 2 has a value 'rc' in column 4")
    assert "allowed columns: m, n, k, layout, pad" in msg


@pytest.mark.parametrize(("text", "match"), [
    ("64,64,64\n", ":1: the first line is not a header"),
    ("m;n;k\n1;2;3\n", r"unknown column 'm;n;k' .*separate columns with commas"),
    ("m,n,k,M\n1,2,3,4\n", r":1: column 'm' appears twice \(columns 1 and 4\)"),
    ("m,n,k\n1,,3\n", ":2: case 1 has no value for 'n'"),
    ("m,n,k\n1,2\n", ":2: case 1 lacks 'k'"),
    ("m,n,k\n1,2,4k\n", ":2: case 1: k must be a whole number, got '4k'"),
])
def test_csv_mistakes_name_the_line(tmp_path, text, match):
    p = _write(tmp_path, "s.csv", text)
    assert re.search(match, _error(p))


def test_yaml_unknown_key_names_the_line(tmp_path):
    p = _write(tmp_path, "s.yaml", "- {m: 1, n: 2, k: 3}\n- m: 4\n  n: 5\n  k: 6\n  lyout: cc\n")
    assert _error(p) == (f"{p}:5: case 2 has unknown key 'lyout'; "
                         "allowed keys: m, n, k, layout, pad")


@pytest.mark.parametrize(("text", "match"), [
    ("cases:\n  - {m: 1, n: 2, k: 3, dtype: bf16}\n", ":2: case 1 has unknown key 'dtype'"),
    ("- {m: 1, n: 2, k: 3, M: 4}\n", ":1: case 1 gives 'm' twice"),
    ("- {m: 1, n: 2, k: null}\n", ":1: case 1 has no value for 'k'"),
    ("- {m: 1, n: 2, k: true}\n", ":1: case 1: k must be a whole number, got 'true'"),
])
def test_yaml_mistakes_name_the_line(tmp_path, text, match):
    p = _write(tmp_path, "s.yaml", text)
    assert match in _error(p)


def test_allowed_columns():
    assert COLUMNS == ("m", "n", "k", "layout", "pad")


# --- resolve --------------------------------------------------------------------------------

def test_resolve_set_name():
    assert resolve("smoke") == ("smoke", SETS["smoke"])


def test_resolve_file(tmp_path):
    p = _write(tmp_path, "mine.yaml", "- {m: 3, n: 4, k: 5}\n")
    assert resolve(str(p)) == (str(p), (Case(3, 4, 5),))


def test_resolve_missing_file_with_suffix(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        resolve(str(tmp_path / "nope.csv"))


def test_resolve_unknown_name():
    with pytest.raises(ValueError, match="unknown shape set 'weekly'") as e:
        resolve("weekly")
    for name in SETS:
        assert name in str(e.value)


def test_resolve_an_inline_list_of_cases_in_the_form_their_ids_print():
    spec = "4096x4096x4096,1000x1000x1000-RC, 64X64*64+p8,3x4x0-cc"
    assert resolve(spec) == (spec, (Case(4096, 4096, 4096), Case(1000, 1000, 1000, "rc"),
                                    Case(64, 64, 64, "rr", 8), Case(3, 4, 0, "cc")))
    assert resolve("16x16x16") == ("16x16x16", (Case(16, 16, 16),))


def test_an_inline_list_longer_than_a_file_name_is_read_as_shapes():
    """29 shapes (nightly's, as a device plan listed them) are past the file-name limit:
    asking whether such a file exists raised ENAMETOOLONG, exit 2 (session 68)."""
    cases = tuple(Case(4096, 256 + i, 128 + i, "rr", 8 if i % 2 else 0) for i in range(29))
    spec = ",".join(f"{c.m}x{c.n}x{c.k}-rr" + (f"+p{c.pad}" if c.pad else "") for c in cases)
    assert len(spec) > 255 and resolve(spec) == (spec, cases)
    with pytest.raises(ValueError, match="unknown shape set"):
        resolve("q" * 300)


def test_inline_shapes_are_shapes_where_a_path_of_that_name_exists(tmp_path, monkeypatch):
    """`mkdir 48x40x24; gemmgate run --shapes 48x40x24 --json 48x40x24/run.json` was "cannot
    read shape file 48x40x24: it is a directory", exit 2; a file of that name, "shape file
    must end in .csv" (a review). A shape file is a .csv or .yaml one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "48x40x24").mkdir()
    (tmp_path / "16x16x16-rc").write_text("not shapes\n")
    assert resolve("48x40x24") == ("48x40x24", (Case(48, 40, 24),))
    assert resolve("16x16x16-rc") == ("16x16x16-rc", (Case(16, 16, 16, "rc"),))
    (tmp_path / "notes").mkdir()   # a path that is no case is still read as one, and said
    with pytest.raises(InputError, match="it is a directory"):
        resolve("notes")


@pytest.mark.parametrize("spec, match", [
    ("4096x4096x4096,foo", r"'foo' is not a case; write MxNxK\[-LAYOUT\]\[\+pPAD\]"),
    ("10x10x10-xy", "unknown layout 'xy'"),
    ("1x1x1-rc+p", "'1x1x1-rc\\+p' is not a case"),
    ("1x1x1,,", "'' is not a case"),
    ("8x8x-8", "'8x8x-8' is not a case"),   # these two were an "unknown shape set"
    ("-8x8x8", "'-8x8x8' is not a case"),
    ("pr,nightly", "unknown shape set 'pr,nightly'.*4096x4096x4096,1000x1000x1000-rc"),
])
def test_a_bad_inline_list_names_the_item(spec, match):
    with pytest.raises(InputError, match=match):
        resolve(spec)


def test_a_trailing_comma_is_taken_as_modes_and_providers_take_it():
    assert resolve("1x1x1,")[1] == (Case(1, 1, 1),)


def test_a_case_too_large_by_its_pad_says_so():
    with pytest.raises(InputError, match="use smaller M/N/K or pad"):
        check_fits([Case(8, 8, 8, "rc", 10**11)], 4, 4, 2**30, "free on cuda:0")


# --- device memory --------------------------------------------------------------------------

def test_case_bytes_counts_padded_buffers_copies_outputs_and_reference():
    # A column-major: k x (m + pad) = 7 * 5; B row-major: k x (n + pad) = 7 * 7
    operands, mn = 7 * 5 + 7 * 7, 3 * 5
    assert case_bytes(Case(3, 5, 7, "cr", 2), 2, 2) == operands * (4 + 2 + 8) + mn * (2 * 2 + 8)
    # row-major A: m x (k + pad); column-major B: n x (k + pad)
    assert case_bytes(Case(3, 5, 7, "rc", 1), 1, 4) == (3 * 8 + 5 * 8) * 13 + 15 * 16
    assert case_bytes(Case(0, 0, 0), 4, 4) == 0
    assert case_bytes(Case(8192, 8192, 8192), 2, 2) == 8192 * 8192 * (2 * 14 + 12)


def test_check_fits_accepts_the_named_sets():
    for cases in SETS.values():
        check_fits(cases, 4, 4, 139 * 2**30, "free on cuda:0")


def test_check_fits_names_the_case_the_size_and_the_fix():
    cases = [Case(64, 64, 64), Case(10**11, 64, 64), Case(2 * 10**11, 64, 64)]
    with pytest.raises(InputError) as e:
        check_fits(cases, 2, 2, 139 * 2**30, "free on cuda:0")
    msg = str(e.value)
    assert msg.startswith("case m100000000000-n64-k64 needs about 154,972.1 GiB of device")
    assert "more than the 139.0 GiB free on cuda:0; use smaller M/N/K" in msg


def test_check_fits_absurd_sizes_give_the_same_clean_message():
    big = 2**40 - 1   # the largest dimension a case takes (gemmgate/case.py MAX_DIM)
    with pytest.raises(InputError, match="needs over 10\\^12 GiB .* use smaller M/N/K"):
        check_fits([Case(big, big, big)], 8, 8, 2**30, "free on cuda:0")
    check_fits([Case(10**12, 0, 0)], 8, 8, 2**30, "free on cuda:0")  # zero bytes: it fits


def test_check_fits_small_limit_in_mib():
    with pytest.raises(InputError, match="about 3.0 MiB .* than the 1.0 MiB set by --max-mem"):
        check_fits([Case(256, 256, 256)], 4, 4, 2**20, "set by --max-mem")


def test_shapes_does_not_import_torch():
    code = "import sys, gemmgate.shapes; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0



def test_a_layout_in_capitals_reads_alike_inline_and_in_a_file(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text("m,n,k,layout\n16,16,16,RC\n")
    assert load_shape_file(f) == parse_inline("16x16x16-RC") == (Case(16, 16, 16, "rc"),)
    assert parse_inline("\u0661\u0666x16x16") is None    # not ASCII digits: not a shape


@pytest.mark.parametrize("text, said", [
    ("- {m: 016, n: 16, k: 1:00}\n", "k must be a whole number, got '1:00'"),
    ("- {m: 0x10, n: 16, k: 16}\n", "m must be a whole number, got '0x10'"),
    ("- {m: 1_6, n: 16, k: 16}\n", "m must be a whole number, got '1_6'"),
    ("- {m: 16, n: 16, k: 16, layout: false}\n", "layout must be text"),
    ("- {m: 16, n: 16, k: 16, layout: 0}\n", "layout must be text"),
    # (its nodes were printed, not the value; a review)
    ("- {m: 16, n: 16, k: 16, layout: [rr]}\n", "layout must be text such as rr or cr, "
                                                "got ['rr']"),
    # two files concatenated: the last list's cases took the first list's text (a review)
    ("cases:\n  - {m: 32, n: 32, k: 32}\ncases:\n  - {m: 16, n: 16, k: 16, layout: cc}\n",
     "`cases:` appears 2 times")])
def test_a_yaml_case_is_read_as_written_not_as_yaml_types_it(tmp_path, text, said):
    """YAML 1.1 read `016` as octal 14 and `1:00` as 60 (m14-n16-k60 ran, exit 0), and a
    layout of `0` or `false` ran as rr (a review): dimensions are read as the CSV reads
    them, ASCII digits, and a layout must be text."""
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(InputError, match=re.escape(said)):
        load_shape_file(f)
    f.write_text("- {m: 016, n: 16, k: 16, pad: null, layout: null}\n")
    assert load_shape_file(f) == (Case(16, 16, 16),)


@pytest.mark.parametrize("spec, bad", [("16x16,32x32x32", "16x16"), (",16x16x16", "")])
def test_an_inline_list_names_its_bad_item_wherever_it_is(spec, bad):
    """A first item that is no case made the list an "unknown shape set" (a review)."""
    with pytest.raises(InputError, match=re.escape(f"{bad!r} is not a case")):
        parse_inline(spec)


def test_a_csv_comment_line_is_skipped(tmp_path):
    """A `#` line was read as a case: "case 1 lacks 'n'" (a review)."""
    f = tmp_path / "c.csv"
    f.write_text("# the shapes we ship\nm,n,k\n# a comment\n16,16,16\n  # indented\n32,16,8\n")
    assert load_shape_file(f) == (Case(16, 16, 16), Case(32, 16, 8))



def test_a_quote_in_a_csv_comment_does_not_swallow_the_cases_after_it(tmp_path):
    """`# note,"big ones follow` opened a quoted field that ran over the next lines: their
    cases were dropped, exit 0 (a review)."""
    f = tmp_path / "c.csv"
    f.write_text('m,n,k\n# note,"big ones follow\n64,64,64\n32,32,32\n# end"\n16,16,16\n')
    assert load_shape_file(f) == (Case(64, 64, 64), Case(32, 32, 32), Case(16, 16, 16))
    f.write_text('# first,"line\nm,n,k\n8,8,8\n')
    assert load_shape_file(f) == (Case(8, 8, 8),)


def test_a_layout_of_spaces_is_an_empty_one(tmp_path):
    """`, ,` was "unknown layout ''" where `,,` is rr (a review)."""
    f = tmp_path / "c.csv"
    f.write_text("m,n,k,layout\n8,8,8,\n 16 , 16 , 16 ,  \n")
    assert load_shape_file(f) == (Case(8, 8, 8), Case(16, 16, 16))
