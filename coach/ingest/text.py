"""Text encodings of exports saved on Windows: PowerShell's ``>`` writes UTF-16 with a byte-order
mark, so an ``ncu --csv`` page or a trace redirected there arrives as UTF-16. Readers transcode such
bytes to UTF-8 first; everything else is read as it is."""

from __future__ import annotations

import codecs

UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def is_utf16(head: bytes) -> bool:
    return head[:2] in UTF16_BOMS


def as_utf8(raw: bytes) -> bytes:
    """``raw`` transcoded to UTF-8 where it starts with a UTF-16 byte-order mark, else unchanged."""
    if not is_utf16(raw):
        return raw
    return raw.decode("utf-16", errors="replace").encode("utf-8")
