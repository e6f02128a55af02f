"""Turn a scenario's rubric, written as sentences, into claims an answer can be graded against.

A scenario's ``[rubric]`` lists what a strong answer covers and what would worry an interviewer, in
prose ("Checks sectors per request ... and expects 4 for 4-byte loads"; "Proposes caching the
structs in shared memory: each struct is still read whole from DRAM once"). Each line becomes one
``Concept``: its label is the claim (the line up to a colon), its explanation the reason (after the
colon, or the mapped bank concepts' explanation, or the exercise file's ``why``). It is found by any
of, together:

1. the bank concepts an exercise file maps to the line (``[[rubric]] line = "<its first words>",
   concepts = [...]``, optionally ``why = "..."``; see ``coach.exercises.player``): for a strong
   line at least half of them, for a red flag any one;
2. the line's own words: each alternative of its claim ("more threads, larger blocks or higher
   occupancy" gives three) is a loose cue (``coach.exercises.grading``), negation and all;
3. for a strong line: the bank signals it names by a phrase of two words or more, its key words
   (at least half of them, in sentences that assert something), and the quantities it states
   ("265 blocks", "about 3x") within 10%;
4. for a red-flag line: the bank red flags it names, and any phrase it quotes ('the kernel is
   already optimal').

Every line resolves to a claim: every red flag is graded.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Mapping

from coach.exercises.bank import RED_FLAG_PREFIX, Bank
from coach.exercises.grading import FRAMING, Concept, Quantity, phrase_stems
from coach.exercises.quantity import dimension, mentions

#: Share of a line's named concepts (or key words) an answer must name. Half: a rubric line usually
#: pairs the idea with its justification ("proposes X and says why"), and either shows the idea.
FOUND_SHARE = 0.5
#: Words that describe what the candidate does rather than the idea: never key words.
_ACTION_WORDS = frozenset(phrase_stems(
    "checks check proposes propose reads notices sees compares estimates says explains names fixes predicts "
    "asks adds tunes moves blames expects looks finds uses about both whole without whether only before after "
    "first then like instead being already each every more than less into onto over under well what when where "
    "which while whose will would just even also such other another part parts thing things"
)) | FRAMING
_QUOTED = re.compile(r"['\u2018\"\u201c]([^'\u2019\"\u201d]{4,80})['\u2019\"\u201d]")
#: Where a red-flag line's claim ends and its qualification begins ("... without checking for spills").
_QUALIFIER = re.compile(r"\s(?:without|while|when|whose|which|although|because|as if|instead of|for a kernel|"
                        r"for data|for a product|on the strength|that is|whose)\b|,\s(?:which|so|as|but)\b|\s-\s")


@dataclass(frozen=True)
class RubricLine:
    text: str
    concept: Concept | None  # None only for an empty line
    how: str  # "mapped", "named", "quoted", "words", "keywords"


def resolve(lines: tuple[str, ...], bank: Bank, *, red_flags: bool, mapped: Mapping[str, list[str]] | None = None,
            prefix: str = "rubric", why: Mapping[str, str] | None = None, default_why: str = "") -> list[RubricLine]:
    """One ``RubricLine`` per line. ``mapped`` maps the start of a line to the bank concepts it means;
    ``why`` the start of a line to the reason it gives in feedback; ``default_why`` is the reason for
    a red flag that has none."""
    out = []
    for i, text in enumerate(lines):
        cid = f"{prefix}-{'flag' if red_flags else 'strong'}-{i + 1}"
        ids = next((v for start, v in (mapped or {}).items() if starts_with(text, start)), None) or []
        given_why = next((v for start, v in (why or {}).items() if starts_with(text, start)), "")
        claim, reason = _claim(text) if red_flags else (" ".join(text.split()).rstrip("."), "")
        concepts = [bank.concept(c) for c in ids]
        how = "mapped" if concepts else ""
        if not concepts:
            # (a concept named is a cue, not what the line means: its contrary claims are not the line's)
            concepts = [replace(c, contrary=()) for c in bank.concepts.values()
                        if c.id.startswith(RED_FLAG_PREFIX) == red_flags and _names(c, claim)]
            how = "named" if concepts else ""
        # a concept found by name in the line ("named") is a cue to grade by, not what the line means:
        # its explanation may be another topic's (scenario 07's "blocks per SM" named the speculative
        # decoding formula), so only mapped concepts lend the line theirs
        explain = given_why or reason or (" ".join(dict.fromkeys(c.explain for c in concepts)) if how == "mapped" else "")
        if red_flags and not explain:
            explain = default_why
        own = _own(cid, claim, red_flags)
        parts: list[Concept] = []
        if concepts:
            need = 1 if red_flags else max(1, math.ceil(FOUND_SHARE * len(concepts)))
            parts.append(concepts[0] if len(concepts) == 1 else
                         Concept(f"{cid}-bank", claim, explain, parts=tuple(concepts), min_parts=need))
        if own is not None:
            parts.append(own)
        quoted = tuple(q.strip() for q in _QUOTED.findall(text) if phrase_stems(q)) if red_flags else ()
        if quoted:
            parts.append(Concept(f"{cid}-quoted", claim, explain, quoted))
            how = how or "quoted"
        if not red_flags:
            keys = _keywords(claim)
            if len(keys) >= 2:
                parts.append(Concept(f"{cid}-keys", claim, explain, keywords=keys,
                                     min_keywords=max(2, math.ceil(FOUND_SHARE * len(keys)))))
                how = how or "keywords"
            parts += _quantities(cid, claim)
        how = how or "words"
        if not parts:
            out.append(RubricLine(text, None, "empty"))
            continue
        out.append(RubricLine(text, Concept(cid, claim, explain, parts=tuple(parts), min_parts=1,
                                            loose_label=False), how))
    return out


def _claim(text: str) -> tuple[str, str]:
    """A rubric line as (claim, reason): the reason is what follows a colon, if anything."""
    text = " ".join(text.split())
    head, sep, tail = text.partition(": ")
    if sep and len(head.split()) >= 2:
        reason = tail.strip()
        return head.strip().rstrip("."), reason[:1].upper() + reason[1:] if reason else ""
    return text.rstrip("."), ""


def _own(cid: str, claim: str, red_flag: bool) -> Concept | None:
    """The claim in its own words: each alternative a loose cue (a red flag's without its qualifier).

    A red flag that names code ("laid out [thread][bin]", "torch.cuda.empty_cache()") is the code
    itself: an answer must write it, since its words alone also fit the right answer."""
    core = _QUALIFIER.split(claim, maxsplit=1)[0] if red_flag else claim
    code = re.findall(r"(?:\[[^\]\s]+\]){2,}", core) if red_flag else []  # an index order: [thread][bin]
    if code:
        patterns = tuple(r"\s*".join(re.escape(c) for c in re.findall(r"\w+|[^\w\s]", tok)) for tok in code)
        return Concept(f"{cid}-own", claim, "", patterns=tuple(p.replace("\\_", "_").lower() for p in patterns),
                       loose_label=False)
    alternatives = [a.strip() for a in re.split(r",\s*(?:or\s+)?|\s+or\s+|;\s*", core) if a.strip()]
    cues, phrases = [], []
    for alt in alternatives:
        words = [w for w in phrase_stems(alt) if w not in FRAMING]
        if len(words) >= 3:
            cues.append(alt)
        elif len(words) == 2:
            phrases.append(" ".join(words))
    if red_flag and len(phrase_stems(core)) >= 3 and core not in cues:
        cues.append(core)
    if not red_flag and len(phrase_stems(claim)) >= 3:
        cues.append(claim)
    if red_flag and not cues and not phrases and len(phrase_stems(claim)) >= 3:
        cues.append(claim)  # a claim of one word ("blames coalescing ..."): stated as the line states it
    if not cues and not phrases:
        return None
    return Concept(f"{cid}-own", claim, "", tuple(phrases), paraphrases=tuple(dict.fromkeys(cues)),
                   loose_label=False, example="" if not red_flag else core)


def _quantities(cid: str, claim: str) -> list[Concept]:
    """The numbers a strong line states with a unit or a counted thing: each found within 10%."""
    out = []
    for value, unit, _, _ in mentions(claim):
        if unit and dimension(unit) and (value >= 3 or dimension(unit) == "ratio") and value != 32:
            out.append(Concept(f"{cid}-q{len(out) + 1}", claim, "", quantity=Quantity(value, unit, 0.1),
                               loose_label=False))
    return out


def starts_with(line: str, start: str) -> bool:
    """Whether a rubric line begins with ``start``, ignoring case, punctuation and word endings."""
    words, head = phrase_stems(line), phrase_stems(start)
    return bool(head) and words[: len(head)] == head


def _names(concept: Concept, text: str) -> bool:
    """Whether the rubric line names the concept by a phrase of two words or more, not a verb."""
    in_line = set(phrase_stems(text))
    for syn in concept.synonyms:
        stems = phrase_stems(syn)
        if sum(st in in_line for st in set(stems)) < 2:  # neither an exact nor a loose match can hold
            continue
        if len(stems) >= 2 and not set(stems) <= _ACTION_WORDS and Concept("n", "n", "", (syn,)).find(text):
            return True
    return False


def _keywords(text: str) -> tuple[str, ...]:
    words = re.findall(r"[a-z][a-z0-9_]+", text.lower())
    keep = []
    for w in words:
        stems = phrase_stems(w)
        if stems and len(w) >= 4 and stems[0] not in _ACTION_WORDS and w not in keep:
            keep.append(w)
    return tuple(keep)
