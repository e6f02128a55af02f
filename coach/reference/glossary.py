"""The glossary: terms a GPU performance candidate meets, each with a definition, where it shows in
a profile, and related terms.

The data is ``data/glossary.toml`` (its header describes the fields). ``load()`` checks it once: every
term has a definition and a profile line, names and aliases are unique, every see-also resolves.
``lookup(query)`` finds a term by name or alias, forgiving case, punctuation and typos; when nothing
is close enough it returns suggestions instead of guessing.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coach.errors import InputError

GLOSSARY = Path(__file__).resolve().parent / "data" / "glossary.toml"
#: difflib ratio above which a misspelt query is taken to mean the closest term ("ocupancy" ->
#: occupancy scores 0.94, "wrap" -> warp 0.75); below it the lookup offers suggestions instead.
MATCH_CUTOFF = 0.8
#: Shorter queries are too ambiguous to correct ("mem" is one edit from TMEM): they get suggestions.
MIN_FUZZY = 4
#: Suggestions offered when no term is close enough, and the ratio they need.
SUGGESTIONS = 5
SUGGEST_CUTOFF = 0.55


@dataclass(frozen=True)
class Term:
    term: str
    aliases: tuple[str, ...]
    topic: str
    definition: str
    profile: str
    see: tuple[str, ...]


@dataclass(frozen=True)
class Lookup:
    """What a query found: the term (None when nothing matched), how, and suggestions otherwise."""

    query: str
    term: Term | None
    how: str  # "exact", "alias", "fuzzy", "part" (the query is part of one term's names only) or "none"
    suggestions: tuple[str, ...] = ()


def key(text: str) -> str:
    """The form names are compared in: lower case, no punctuation or spaces ('tcgen05.mma' -> 'tcgen05mma')."""
    return re.sub(r"[^a-z0-9+]", "", text.lower())


@dataclass(frozen=True)
class Glossary:
    terms: tuple[Term, ...]
    index: dict[str, Term]  # key(name or alias) -> term

    def get(self, name: str) -> Term:
        return self.index[key(name)]

    def resolve(self, name: str) -> Term | None:
        return self.index.get(key(name))

    def lookup(self, query: str) -> Lookup:
        k = key(query)
        if not k:
            return Lookup(query, None, "none")
        if k in self.index:
            t = self.index[k]
            return Lookup(query, t, "exact" if key(t.term) == k else "alias")
        for i in range(len(k) - 1):  # two letters swapped ("wrap" for warp): the commonest typo
            swapped = k[:i] + k[i + 1] + k[i] + k[i + 2:]
            if len(k) >= 4 and swapped in self.index:
                return Lookup(query, self.index[swapped], "fuzzy")
        names = list(self.index)
        close = difflib.get_close_matches(k, names, n=SUGGESTIONS, cutoff=SUGGEST_CUTOFF)
        if len(k) >= MIN_FUZZY and close and difflib.SequenceMatcher(None, k, close[0]).ratio() >= MATCH_CUTOFF:
            return Lookup(query, self.index[close[0]], "fuzzy")
        hits: dict[str, int] = {}
        for n in names:
            if len(k) >= 3 and k in n:
                hits[self.index[n].term] = hits.get(self.index[n].term, 0) + 1
        # the term more of whose names contain the query first ("stall" -> warp stall reasons)
        containing = sorted(hits, key=lambda t: (-hits[t], t.lower()))
        if len(containing) == 1:
            return Lookup(query, self.get(containing[0]), "part")
        seen: list[str] = []
        for n in [*(key(c) for c in containing), *close]:
            name = self.index[n].term
            if name not in seen:
                seen.append(name)
        return Lookup(query, None, "none", tuple(seen[:SUGGESTIONS]))

    def by_topic(self) -> dict[str, list[Term]]:
        out: dict[str, list[Term]] = {}
        for t in sorted(self.terms, key=lambda t: t.term.lower()):
            out.setdefault(t.topic, []).append(t)
        return out


def load(path: Path = GLOSSARY) -> Glossary:
    """The glossary in ``path``, checked (``InputError`` naming the term and the rule otherwise)."""
    return _load(path)


@lru_cache(maxsize=4)
def _load(path: Path) -> Glossary:
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(path, "missing") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(path, f"not valid TOML: {err}") from None
    terms: list[Term] = []
    index: dict[str, Term] = {}
    allowed = {"term", "aliases", "topic", "definition", "profile", "see"}
    for entry in raw.get("terms", []):
        name = entry.get("term", "")
        if unknown := set(entry) - allowed:
            raise InputError(path, f"term {name!r} has unknown keys {sorted(unknown)}")
        for field in ("term", "topic", "definition", "profile"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise InputError(path, f"term {name!r} needs a non-empty {field}")
        t = Term(name.strip(), tuple(entry.get("aliases", ())), entry["topic"].strip(),
                 " ".join(entry["definition"].split()), " ".join(entry["profile"].split()), tuple(entry.get("see", ())))
        for n in (t.term, *t.aliases):
            k = key(n)
            if not k:
                raise InputError(path, f"term {name!r}: the name or alias {n!r} has no letters or digits")
            if k in index and index[k] is not t:
                raise InputError(path, f"{n!r} names both {index[k].term!r} and {t.term!r}")
            index[k] = t
        terms.append(t)
    if not terms:
        raise InputError(path, "no [[terms]]")
    for t in terms:
        for s in t.see:
            if key(s) not in index:
                raise InputError(path, f"term {t.term!r}: see-also {s!r} is not a term or alias")
            if index[key(s)] is t:
                raise InputError(path, f"term {t.term!r}: see-also {s!r} points at itself")
    return Glossary(tuple(terms), index)
