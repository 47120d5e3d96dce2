"""Input and output files, checked before any measuring starts.

Reading: `read_text` turns every way a user's file can be wrong (missing, a directory,
unreadable, binary, not UTF-8) into an InputError that names the file and the fix, instead
of a traceback or a half-parsed table. Writing: `check_writable` proves an output path can
be written before the run spends minutes on the GPU; `write_text_atomic` then writes a temp
file in the same directory, fsyncs it and renames it over, so a reader never sees half a file.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NoReturn


class InputError(ValueError):
    """Bad user input (a file, a path, a value); the CLI maps ValueError to exit 2."""


# --- reading ------------------------------------------------------------------------------

_NOT_TEXT = "give a CSV/YAML/JSON file"


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of a user's file (a leading BOM dropped, newlines made \\n).

    `what` names the file in errors, e.g. "shape file" or "baseline"."""
    p = Path(path)
    try:   # (is_dir too: a folder the user may not enter raises PermissionError there)
        if p.is_dir():
            raise InputError(f"cannot read {what} {p}: it is a directory; give a file in it")
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"cannot read {what} {p}: no such file; check the path") from None
    except PermissionError:
        raise InputError(f"cannot read {what} {p}: permission denied; make it readable "
                         "(chmod a+r) or give a copy you can read") from None
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {e.strerror or e}") from None
    return _decode(data, p, what)


def _decode(data: bytes, p: Path, what: str) -> str:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # e.g. PowerShell's `>` writes UTF-16
        raise InputError(f"{what} {p} is not UTF-8 text (UTF-16 byte-order mark at offset 0);"
                         f" {_NOT_TEXT} saved as UTF-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"{what} {p} is not UTF-8 text (NUL byte at offset {nul}: "
                         f"a binary file?); {_NOT_TEXT}")
    try:
        text = data.decode("utf-8-sig")  # Excel's "CSV UTF-8" starts with a BOM
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {p} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                         f"{e.start}); {_NOT_TEXT}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as Path.read_text() did


# --- writing ------------------------------------------------------------------------------

def check_writable(path: str | Path, what: str, *, append: bool = False) -> None:
    """InputError unless `path` can be written, checked before any work is done.

    Creates nothing: a missing parent directory (the writers create it) needs its nearest
    existing ancestor to take a new entry, so a usage error found later leaves no empty
    directories behind. By default the file is written atomically (a temp file beside it,
    renamed over), so the directory must take a new file and an existing target must be a
    regular file. With `append` (e.g. a GitHub step summary) an existing file only needs to
    open for appending."""
    p = Path(path)

    def fail(reason: str, fix: str = "give a path you can write") -> NoReturn:
        raise InputError(f"cannot write {what} {p}: {reason}; {fix}")

    if p.is_dir():
        fail("it is a directory", f"give a file path, e.g. {p / 'out.json'}")
    base = _nearest_dir(p, fail)
    if base != p.parent:
        _try_create_in(base, fail)
        return
    if p.exists() or p.is_symlink():
        if append:
            _try_append(p, fail)
            return
        if not p.is_file():
            fail("it is not a regular file and would be replaced", "give a regular file path")
        _try_append(p, fail)  # it is there now; be sure we may change it
    _try_create_in(p.parent, fail)


def may_exist(path: str | Path) -> bool:
    """Whether `path` may name a file: False where the text cannot (an inline --shapes
    list of 29 shapes is past the system's name length, and `exists` raised ENAMETOOLONG,
    session 68; a NUL in the text); True where asking failed otherwise (a folder one may
    not enter), so that reading it says why."""
    try:
        return Path(path).exists()
    except ValueError:
        return False
    except OSError as e:
        return e.errno != errno.ENAMETOOLONG


def is_file(path: str | Path) -> bool:
    """Path.is_file, False where the text cannot name a file (`may_exist`'s texts: the
    CLI's input check raised ENAMETOOLONG after the parser's probe was mended, an H100
    call) or asking failed."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


_Fail = Callable[..., NoReturn]


def _nearest_dir(p: Path, fail: _Fail) -> Path:
    """The nearest existing ancestor of `p`, which must be a directory."""
    for d in (p.parent, *p.parent.parents):
        if d.exists():
            if not d.is_dir():
                fail(f"{d} is a file, not a directory", "give a path inside a directory")
            return d
    return Path(p.anchor or ".")


def _try_append(p: Path, fail: _Fail) -> None:
    try:
        with open(p, "a"):  # opens without truncating or writing: contents stay untouched
            pass
    except OSError as e:
        fail(f"cannot open it for writing: {e.strerror or e}")


def _try_create_in(d: Path, fail: _Fail) -> None:
    # os.access first for a plain message; then really create a file, since root passes
    # access() whatever the mode bits, and pseudo filesystems (/proc) refuse new files.
    if not os.access(d, os.W_OK | os.X_OK):
        fail(f"directory {d} is not writable (permission denied)")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gemmgate-check.", suffix=".tmp", dir=d)
    except OSError as e:
        fail(f"cannot create a file in {d}: {e.strerror or e}")
    os.close(fd)
    os.unlink(tmp)


def write_text_atomic(path: str | Path, text: str) -> None:
    """`text` to `path` whole or not at all (a temp file beside it, renamed over); a
    symbolic link is written through to its target, not replaced by a file."""
    write_bytes_atomic(path, text.encode())


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """`write_text_atomic`'s for bytes (a figure's PNG)."""
    p = Path(path).resolve() if Path(path).is_symlink() else Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        raise _naming(e, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(p))  # mkstemp makes 0600
        os.replace(tmp, p)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise _naming(e, path) from None
        raise


def _naming(e: OSError, path: str | Path) -> OSError:
    """`e` with the file it could not write named ("[Errno 28] No space left on device"
    named none, after a run's whole measuring; a review); the earlier file is kept."""
    return type(e)(e.errno, f"cannot write {path}: {e.strerror or e} (the file there, if "
                            "any, is left as it was)")


def _mode_for(p: Path) -> int:
    """The mode a file written at `p` gets: the one it has there (0644 over a 0600 file
    made a private file every user's to read, through a rewrite; a review), else a new
    file's under the umask."""
    try:
        return stat.S_IMODE(os.stat(p).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json_atomic(path: str | Path, data) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n")


def write_csv_atomic(path: str | Path, rows: Iterable[dict], columns: Sequence[str],
                     extra: str = "raise") -> None:
    """`rows` as CSV (a header of `columns`), whole or not at all (`write_text_atomic`):
    a kill mid-write keeps the file as it was. `extra`: csv.DictWriter's `extrasaction`
    for keys outside `columns`."""
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, columns, extrasaction=extra)
    w.writeheader()
    w.writerows(rows)
    write_text_atomic(path, text.getvalue())


def clear_outputs(*paths: str | Path | None) -> None:
    """Remove an earlier run's files at these output paths (through a symbolic link: its
    target), once a command's input is checked and before it measures: a command that
    writes its outputs only at its end, stopped part-way, left the earlier run's files
    there looking like its own (a review)."""
    for path in paths:
        if path:
            p = Path(path).resolve()
            if p.is_file():
                p.unlink()


def json_schema(path: str | Path) -> object:
    """The top-level "schema" of a JSON object file; None where `path` is no regular file
    (a FIFO or a terminal is not read), is unreadable, not JSON or not an object."""
    if not is_file(path):
        return None
    try:
        data = json.loads(read_text(path, "file"))
    except (ValueError, RecursionError):   # (InputError is a ValueError)
        return None
    return data.get("schema") if isinstance(data, dict) else None


def head_holds(path: str | Path | None, text: str) -> bool:
    """Whether `path` is a regular file whose first 4 KiB hold `text` (a JSON file's
    schema line: what kind of file a path holds, before writing over it). Only a regular
    file is read: a FIFO or a terminal would block the read."""
    if not path or not is_file(path):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return text.encode() in head
