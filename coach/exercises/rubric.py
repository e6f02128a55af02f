"""Turn a scenario's rubric, written as sentences, into concepts an answer can be graded against.

A scenario's ``[rubric]`` lists what a strong answer covers and what would worry an interviewer, in
prose ("Checks sectors per request ... and expects 4 for 4-byte loads"). Each line becomes one
``Concept`` labelled with the line itself, found in an answer by, in order of preference:

1. the concepts an exercise file maps to that line (``[[rubric]] line = "<its first words>",
   concepts = [...]``; see ``coach.exercises.player``): at least half of them must be named;
2. for a strong line: the signal concepts whose synonyms occur in the line (at least half of them
   named), or else its key words (at least half of them present);
3. for a red-flag line: the red-flag concepts it names; and, whichever way it resolved, any phrase
   it quotes ('the kernel is already optimal') is one more way to show the flag.

A red-flag line that resolves to nothing is not graded (wrongly penalising a good answer is worse
than missing a flag); the player lists it as something to avoid.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping

from coach.exercises.bank import RED_FLAG_PREFIX, Bank
from coach.exercises.grading import Concept, phrase_stems

#: Share of a line's named concepts (or key words) an answer must name. Half: a rubric line usually
#: pairs the idea with its justification ("proposes X and says why"), and either shows the idea.
FOUND_SHARE = 0.5
#: Words that describe what the candidate does rather than the idea: never key words.
_ACTION_WORDS = frozenset(phrase_stems(
    "checks check proposes propose reads notices sees compares estimates says explains names fixes predicts "
    "asks adds tunes moves blames expects looks finds uses about both whole without whether only before after "
    "first then like instead being already each every more than less into onto over under well what when where "
    "which while whose will would just even also such other another part parts thing things"
))
_QUOTED = re.compile(r"['\u2018\"\u201c]([^'\u2019\"\u201d]{4,80})['\u2019\"\u201d]")


@dataclass(frozen=True)
class RubricLine:
    text: str
    concept: Concept | None  # None: a red flag that could not be resolved
    how: str  # "mapped", "named", "quoted", "keywords", "unresolved"


def resolve(lines: tuple[str, ...], bank: Bank, *, red_flags: bool, mapped: Mapping[str, list[str]] | None = None,
            prefix: str = "rubric") -> list[RubricLine]:
    """One ``RubricLine`` per line. ``mapped`` maps the start of a line to the bank concepts it means."""
    out = []
    for i, text in enumerate(lines):
        cid = f"{prefix}-{'flag' if red_flags else 'strong'}-{i + 1}"
        ids = next((v for start, v in (mapped or {}).items() if starts_with(text, start)), None)
        quoted = tuple(q.strip() for q in _QUOTED.findall(text) if phrase_stems(q)) if red_flags else ()
        if ids:
            out.append(RubricLine(text, _union(cid, text, [bank.concept(c) for c in ids], quoted), "mapped"))
            continue
        named = [c for c in bank.concepts.values() if c.id.startswith(RED_FLAG_PREFIX) == red_flags and _names(c, text)]
        keys = () if red_flags else _keywords(text)
        if red_flags:
            how = "named" if named else "quoted" if quoted else "unresolved"
            out.append(RubricLine(text, _union(cid, text, named, quoted) if how != "unresolved" else None, how))
            continue
        by_keys = Concept(f"{cid}-keys", text, "", keywords=keys,
                          min_keywords=max(1, math.ceil(FOUND_SHARE * len(keys)))) if keys else None
        parts = [c for c in (_union(f"{cid}-named", text, named) if named else None, by_keys) if c is not None]
        if not parts:
            out.append(RubricLine(text, None, "unresolved"))
            continue
        explain = parts[0].explain if named else ""
        out.append(RubricLine(text, Concept(cid, text, explain, parts=tuple(parts), min_parts=1),
                              "named" if named else "keywords"))
    return out


def starts_with(line: str, start: str) -> bool:
    """Whether a rubric line begins with ``start``, ignoring case, punctuation and word endings."""
    words, head = phrase_stems(line), phrase_stems(start)
    return bool(head) and words[: len(head)] == head


def _names(concept: Concept, text: str) -> bool:
    """Whether the rubric line names the concept by more than a verb ("proposes", "checks")."""
    quote = concept.find(text)
    return quote is not None and not set(phrase_stems(quote)) <= _ACTION_WORDS


def _union(cid: str, text: str, concepts: list[Concept], quoted: tuple[str, ...] = ()) -> Concept:
    """One concept for the line: found when the answer names enough of ``concepts`` (or a quoted phrase)."""
    explain = " ".join(dict.fromkeys(c.explain for c in concepts))
    if len(concepts) == 1 and not quoted:
        return Concept(cid, text, explain, concepts[0].synonyms, concepts[0].patterns)
    return Concept(cid, text, explain, quoted, parts=tuple(concepts),
                   min_parts=max(1, math.ceil(FOUND_SHARE * len(concepts))) if concepts else 0)


def _keywords(text: str) -> tuple[str, ...]:
    words = re.findall(r"[a-z][a-z0-9_]+", text.lower())
    keep = []
    for w in words:
        stems = phrase_stems(w)
        if stems and len(w) >= 4 and stems[0] not in _ACTION_WORDS and w not in keep:
            keep.append(w)
    return tuple(keep)
