"""Recordings packed for transfer: gzip'd tar archives, whole (``NAME.tgz``) or split into numbered
parts (``NAME.tgz.0``, ``NAME.tgz.1``, ...), as ``scripts/pack-recording.sh`` writes them, read back
into a temporary folder.

Standard library only. Extraction refuses members that would land outside the folder (absolute
paths, ``..``, links to elsewhere: ``tarfile``'s "data" filter), and a missing or truncated part
gives one error naming the archive.
"""

from __future__ import annotations

import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coach.errors import InputError

_PART = re.compile(r"^(?P<stem>.+\.(?:tgz|tar\.gz))(?:\.(?P<part>\d+))?$")


def find(folder: Path) -> dict[str, list[Path]]:
    """The archives in ``folder``: archive name -> its files in order (one file, or its parts)."""
    groups: dict[str, list[tuple[int, Path]]] = {}
    for path in sorted(Path(folder).iterdir()):
        m = _PART.match(path.name)
        if not m or not path.is_file():
            continue
        part = -1 if m.group("part") is None else int(m.group("part"))
        groups.setdefault(m.group("stem"), []).append((part, path))
    out = {}
    for stem, parts in groups.items():
        parts.sort()
        numbers = [n for n, _ in parts]
        if numbers != [-1] and numbers != list(range(len(numbers))):
            have = ", ".join(p.name for _, p in parts)
            raise InputError(Path(folder) / stem, f"is split into numbered parts from 0 with none missing and no "
                                                  f"whole copy beside them; found {have}")
        out[stem] = [p for _, p in parts]
    return out


@contextmanager
def unpacked(folder: Path) -> Iterator[Path]:
    """Every archive in ``folder`` extracted into one temporary folder, removed afterwards."""
    archives = find(folder)
    if not archives:
        raise InputError(folder, "holds no archives (NAME.tgz, or parts NAME.tgz.0, NAME.tgz.1, ...)")
    tmp = Path(tempfile.mkdtemp(prefix="coach-unpack-"))
    try:
        for stem, parts in archives.items():
            _extract(folder, stem, parts, tmp)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract(folder: Path, stem: str, parts: list[Path], dest: Path) -> None:
    joined = dest / f".{stem}"
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out)
    try:
        with tarfile.open(joined, "r:gz") as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        what = f"{len(parts)} parts" if len(parts) > 1 else "the archive"
        raise InputError(Path(folder) / stem, f"cannot be unpacked from {what} (truncated or not a gzip'd tar: "
                                              f"{err})") from None
    finally:
        joined.unlink(missing_ok=True)
