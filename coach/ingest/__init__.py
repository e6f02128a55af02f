"""Readers: one per source format, each returning the canonical model of ``coach.model``.

    from coach.ingest import load
    profile = load("report.ncu-rep")        # a KernelProfile
    timeline = load("report.sqlite")        # a Timeline

``load`` detects the format by content (``coach.ingest.detect``) and dispatches to the reader.
Every failure that comes from the file becomes an ``InputError`` with a one-line message.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

from coach.errors import CoachError, InputError
from coach.ingest.detect import detect
from coach.model import Profile

# format -> "module:function" of the reader. Modules are imported on first use so that, say, a
# machine without ncu_report can still read nsys exports.
READERS: dict[str, str] = {
    "ncu-rep": "coach.ingest.ncu_rep:read",
    "ncu-csv": "coach.ingest.ncu_csv:read",
    "ncu-text": "coach.ingest.ncu_text:read",
    "nsys-sqlite": "coach.ingest.nsys_sqlite:read",
    "nsys-rep": "coach.ingest.nsys_rep:read",
    "kineto-json": "coach.ingest.kineto:read",
    "sanitizer-text": "coach.ingest.sanitizer_text:read",
    "sanitizer-xml": "coach.ingest.sanitizer_xml:read",
    "coach-profile": "coach.ingest.saved:read",
}


def reader_for(fmt: str) -> Callable[[Path], Profile]:
    module, func = READERS[fmt].split(":")
    return getattr(importlib.import_module(module), func)


XZ_MAGIC = b"\xfd7zXZ\x00"


def load(path: str | Path) -> Profile:
    """Read any supported profile into the canonical model; an xz-compressed one (the full reports
    traces/ keeps, ``report.ncu-rep.xz``) is unpacked into a temporary file first."""
    p = Path(path)
    if p.is_file() and _starts_with(p, XZ_MAGIC):
        return _load_xz(p)
    fmt = detect(p)
    try:
        return reader_for(fmt)(p)
    except CoachError:
        raise
    except MemoryError:
        raise InputError(p, "is too large to read into memory") from None
    except Exception as err:  # a reader met something it did not expect: still one line, no traceback
        raise InputError(p, f"could not be read as {fmt} ({type(err).__name__}: {err})") from err


def _starts_with(p: Path, magic: bytes) -> bool:
    try:
        with p.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def _load_xz(p: Path) -> Profile:
    import lzma  # noqa: PLC0415 - only for compressed reports
    import shutil  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    name = p.name[:-3] if p.name.endswith(".xz") else p.name
    with tempfile.TemporaryDirectory(prefix="coach-xz-") as tmp:
        inner = Path(tmp) / name
        try:
            with lzma.open(p) as fin, inner.open("wb") as fout:
                shutil.copyfileobj(fin, fout)
        except (lzma.LZMAError, EOFError) as err:
            raise InputError(p, f"is xz-compressed but cannot be unpacked ({err})") from None
        try:
            return load(inner)
        except InputError as err:  # name the file the user gave, not the temporary one
            raise InputError(p, err.problem) from None


def expand(paths: list[str | Path]) -> list[Path]:
    """Files named directly, plus the profiles inside any folder named (not recursing into saved profiles)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and not (p / "coach-profile.json").exists():
            found = sorted(q for q in p.iterdir() if q.suffix in SUFFIXES or (q / "coach-profile.json").exists())
            if not found:
                raise InputError(p, "holds no profiles (.ncu-rep, .csv, .sqlite, .nsys-rep, .json)")
            out.extend(found)
        else:
            out.append(p)
    return out


SUFFIXES = {".ncu-rep", ".csv", ".sqlite", ".nsys-rep", ".qdrep", ".json", ".gz"}
