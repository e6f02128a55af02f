"""Receiving a file the user uploads: size limit, a private temporary folder, kind checked by content.

The page sends the file's bytes as they are (``receive_stream``: the body of one POST, read in
blocks, with the browser showing the transfer's progress); a base64 data URL (``receive``) is
accepted too. Either is written under a fresh name inside the app's temporary folder (never where
the user's file name points) only while within the size limit, recognised by its first bytes
(``coach.ingest.detect``), read into the canonical model, and deleted. Nothing uploaded is ever
executed. Failures are ``InputError`` naming the file as the user called it, so the page can show
the one-line message; the server's own paths never appear in it.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from pathlib import Path
from typing import BinaryIO

from coach.app.format import si
from coach.errors import CoachError, InputError
from coach.ingest import load
from coach.model import Profile

#: Default largest upload. The browser holds the file as base64 text while it sends it (4/3 of its
#: size) and the server decodes it in memory: 256 MiB keeps both comfortable on a laptop while
#: admitting nsys exports of a few hundred thousand events. ``coach dash --max-upload-mb`` changes it.
DEFAULT_LIMIT_BYTES = 256 * 2**20

#: Bytes read from the request at a time while an upload is written to disk.
BLOCK_BYTES = 1 << 20

_DATA_URL = re.compile(r"^data:[^,]*;base64,", re.ASCII)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def display_name(filename: str | None) -> str:
    """The uploaded file's own name, without any folders the browser may send."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name or "uploaded file"


def safe_name(filename: str | None) -> str:
    """A file name that cannot leave its folder or start hidden: letters, digits, dot, dash, underscore."""
    cleaned = _UNSAFE.sub("_", display_name(filename)).lstrip(".") or "upload"
    return cleaned[:120]


def decoded_size(contents: str) -> int:
    """Bytes that a base64 data URL decodes to, computed without decoding it."""
    payload = contents[contents.index(",") + 1:] if "," in contents else contents
    return len(payload) * 3 // 4 - payload[-2:].count("=")


def receive(contents: str | None, filename: str | None, folder: Path, limit_bytes: int) -> Path:
    """Write an upload into a fresh subfolder of ``folder`` and return its path."""
    name = display_name(filename)
    if not contents or not _DATA_URL.match(contents):
        raise InputError(name, "did not arrive as a file upload")
    size = decoded_size(contents)
    if size > limit_bytes:
        raise _too_big(name, size, limit_bytes)
    try:
        data = base64.b64decode(contents[contents.index(",") + 1:], validate=True)
    except (binascii.Error, ValueError):
        raise InputError(name, "arrived damaged (not valid base64)") from None
    if not data:
        raise InputError(name, "is empty")
    target = folder / secrets.token_hex(8) / safe_name(filename)
    target.parent.mkdir(parents=True)
    tmp = target.with_name(f".{target.name}.part")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def _too_big(name: str, size: int, limit_bytes: int) -> InputError:
    return InputError(name, f"is {si(size, 'B')}, over the upload limit of {si(limit_bytes, 'B')} "
                            "(run `coach dash --max-upload-mb N` to raise it, or `coach load` on the command line)")


def receive_stream(stream: BinaryIO, filename: str | None, folder: Path, limit_bytes: int,
                   length: int | None = None) -> Path:
    """Write the bytes of ``stream`` (an upload's request body) into a fresh subfolder of ``folder``.

    ``length`` is the size the request announces: one over the limit is refused before anything is
    read, and a stream that runs past the limit is cut off and deleted.
    """
    name = display_name(filename)
    if length is not None and length > limit_bytes:
        raise _too_big(name, length, limit_bytes)
    target = folder / secrets.token_hex(8) / safe_name(filename)
    target.parent.mkdir(parents=True)
    tmp = target.with_name(f".{target.name}.part")
    size = 0
    try:
        with tmp.open("wb") as out:
            while block := stream.read(BLOCK_BYTES):
                size += len(block)
                if size > limit_bytes:
                    raise _too_big(name, size, limit_bytes)
                out.write(block)
        if not size:
            raise InputError(name, "is empty")
        if length is not None and size < length:
            raise InputError(name, f"arrived incomplete ({si(size, 'B')} of {si(length, 'B')}): send it again")
    except BaseException:
        tmp.unlink(missing_ok=True)
        _remove_folder(target.parent)
        raise
    tmp.replace(target)
    return target


def scrub(text: str, path: Path, name: str, *folders: Path) -> str:
    """``text`` with the server's own paths (the upload's, its folders) replaced by the user's file name."""
    out = text.replace(str(path), name)
    for folder in (path.parent, *folders):
        out = out.replace(str(folder) + "/", "").replace(str(folder), "the upload folder")
    return out


def read_path(path: Path, filename: str | None, folder: Path) -> Profile:
    """Read a received upload and delete it; errors name the file as the user called it, never a
    path on the server (a reader or ``nsys export`` that names its input gets the user's name)."""
    name = display_name(filename)
    try:
        profile = load(path)
    except InputError as err:
        raise InputError(name, scrub(err.problem, path, name, folder)) from None
    except CoachError as err:  # a tool (nsys export) that failed on it: its message names our copy
        raise InputError(name, scrub(str(err), path, name, folder)) from None
    else:
        if profile.kind == "sanitizer-report":
            raise InputError(name, "is a compute-sanitizer report: the dashboard shows profiles; read it with "
                                   "`coach load` or `coach diagnose`")
        return profile
    finally:
        path.unlink(missing_ok=True)
        _remove_folder(path.parent)


def _remove_folder(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # a reader left a side file (an nsys export, say); the app's folder goes at exit


def read_upload(contents: str | None, filename: str | None, folder: Path, limit_bytes: int) -> Profile:
    """Receive (a data URL), read and delete an upload; errors name the file as the user called it."""
    return read_path(receive(contents, filename, folder, limit_bytes), filename, folder)
