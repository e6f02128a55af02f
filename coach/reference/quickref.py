"""Quick references: the CUDA and Triton a candidate writes on a whiteboard, as short checked snippets.

The data is ``data/ref_<language>.toml`` (its header describes the fields). Every CUDA snippet is a
translation unit that compiles with ``nvcc -arch=sm_90``; every Triton snippet runs, with its
hidden check, under ``TRITON_INTERPRET=1`` (tests/test_reference.py does both).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coach.errors import CoachError, InputError

DATA = Path(__file__).resolve().parent / "data"
LANGUAGES = ("cuda", "triton")
#: Widest code line a sheet may hold: printed with a two-space indent it fits 80 columns.
MAX_CODE_WIDTH = 78


class UnknownSectionError(CoachError):
    """A section id the sheet does not have."""


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    code: str
    notes: tuple[str, ...]
    check: str = ""  # Triton: the test appended when the snippet is run


@dataclass(frozen=True)
class Sheet:
    language: str
    sections: tuple[Section, ...]

    def section(self, query: str) -> Section:
        """The section named ``query`` (its id, a unique prefix of one, or a close misspelling)."""
        q = query.strip().lower()
        ids = [s.id for s in self.sections]
        if q in ids:
            return self.sections[ids.index(q)]
        starts = [s for s in self.sections if s.id.startswith(q) or q in s.title.lower()]
        if len(starts) == 1:
            return starts[0]
        close = difflib.get_close_matches(q, ids, n=1, cutoff=0.75)
        if close:
            return self.sections[ids.index(close[0])]
        raise UnknownSectionError(f"no section '{query}' in the {self.language} reference; sections: {', '.join(ids)}")


def sheet(language: str) -> Sheet:
    """The reference sheet of ``language`` ("cuda" or "triton")."""
    lang = language.strip().lower()
    if lang not in LANGUAGES:
        raise UnknownSectionError(f"no reference for '{language}'; use one of {', '.join(LANGUAGES)}")
    return _load(DATA / f"ref_{lang}.toml", lang)


@lru_cache(maxsize=4)
def _load(path: Path, language: str) -> Sheet:
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(path, "missing") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(path, f"not valid TOML: {err}") from None
    sections: list[Section] = []
    for entry in raw.get("sections", []):
        sid = entry.get("id", "")
        if unknown := set(entry) - {"id", "title", "code", "notes", "check"}:
            raise InputError(path, f"section {sid!r} has unknown keys {sorted(unknown)}")
        for field in ("id", "title", "code"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise InputError(path, f"section {sid!r} needs a non-empty {field}")
        if any(s.id == sid for s in sections):
            raise InputError(path, f"section id {sid!r} is used twice")
        code = entry["code"].strip("\n")
        wide = [i for i, line in enumerate(code.splitlines(), 1) if len(line) > MAX_CODE_WIDTH]
        if wide:
            raise InputError(path, f"section {sid!r}: code line {wide[0]} is wider than {MAX_CODE_WIDTH} columns")
        sections.append(Section(sid, entry["title"].strip(), code, tuple(entry.get("notes", ())),
                                entry.get("check", "").strip("\n")))
    if not sections:
        raise InputError(path, "no [[sections]]")
    return Sheet(language, tuple(sections))
