"""Grade a free-text answer by the concepts it names, not by its wording.

A ``Concept`` is one idea a good answer names ("accesses are coalesced") or one misconception a
weak answer shows ("more threads are always faster"), written as a few synonym phrases and,
where a phrase cannot say it, regular expressions. An answer is graded against the strong signals
and red flags of a question or scenario rubric: the score is the number of signals found minus
the number of red flags shown, and the feedback says for each concept what was matched (quoting
the answer) or what was missing, and why it matters.

Matching tolerates wording without a language model:

* case, accents, punctuation, hyphens and slashes are ignored ("128-byte" = "128 byte");
* words are reduced to a crude stem, the same way in the phrase and in the answer, so plurals and
  the usual verb endings match ("coalesced" = "coalescing" = "coalesce", "bytes" = "byte");
* filler words are dropped and a phrase's words must appear in order within one sentence, with at
  most ``MAX_GAP`` other words between consecutive ones ("reads from the shared memory tile"
  matches "shared memory");
* a red flag that the answer negates ("occupancy is *not* the goal") does not count: a negation
  word within ``NEGATION_WINDOW`` words before the match, between its words ("many FLOPs is not
  necessarily compute-bound") or right after it ("... is not the goal"), within the same clause,
  cancels it. Strong signals ignore negation: "the loads are not coalesced" still names coalescing.

A concept written as a sentence (a scenario's rubric line) can instead be found by its key words
(``keywords``, ``min_keywords``) or by naming enough of several concepts (``parts``, ``min_parts``);
``coach.exercises.rubric`` builds those.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

#: Words allowed between two consecutive words of a synonym phrase (filler words are dropped before
#: counting). Two lets a qualifier in ("shared-memory tile reads" for "shared memory reads"); more
#: starts joining words from unrelated clauses.
MAX_GAP = 2
#: How far back (in words, same sentence) a negation cancels a red flag: "is not always" and
#: "doesn't really mean that" fit; a "not" in an earlier clause mostly does not.
NEGATION_WINDOW = 4
#: Negations right after a match also cancel it: "maximising occupancy is not the goal".
NEGATION_AFTER = 2

_STOPWORDS = frozenset(
    "a an the of to is are was were be been being by for in on at it its that this these those and "
    "or as with from into so which there their they we i you your our do does did just very also "
    "here has have had will would should could can may might".split()
)
_SENTENCE_END = re.compile(r"[.!?;]+(?=\s|$)|\n\s*\n")
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def stem(word: str) -> str:
    """A crude, deterministic stem: the same word family gives the same string.

    Not linguistics, only consistency: phrase and answer go through the same function.
    """
    w = word
    if len(w) <= 3 or w[0].isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "slz":  # "stopped" -> "stopp" -> "stop"
        w = w[:-1]
    return w


#: Words that cancel a red flag (stemmed like the answer's words).
_NEGATIONS = frozenset(
    stem(w)
    for w in "not no never isnt arent wasnt doesnt dont didnt wont cannot cant neither nor without instead "
    "rather myth misconception wrong false unlike".split()
)


def fold(text: str) -> str:
    """Lower-case ASCII text: accents gone, micro sign as "u", apostrophes dropped."""
    text = text.replace("µ", "u").replace("μ", "u")
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"['\u2019`]", "", text.casefold())
    return text


@dataclass(frozen=True)
class _Word:
    stem: str
    start: int  # character offsets in the folded sentence, to quote the answer back
    end: int


@dataclass(frozen=True)
class _Sentence:
    text: str  # folded
    words: tuple[_Word, ...]  # stop words removed


@lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[_Sentence, ...]:
    """The text split into sentences of stemmed words (cached: an answer is graded against many concepts)."""
    out = []
    for part in _SENTENCE_END.split(fold(text)):
        part = " ".join(part.split())
        spaced = re.sub(r"[-_/+=*(),\[\]{}<>\"|~^]", " ", part)
        words = tuple(
            _Word(stem(m.group()), m.start(), m.end()) for m in _WORD.finditer(spaced) if m.group() not in _STOPWORDS
        )
        if words:
            out.append(_Sentence(part, words))
    return tuple(out)


@lru_cache(maxsize=4096)
def phrase_stems(phrase: str) -> tuple[str, ...]:
    """The stems a phrase is matched by: folded, filler words dropped, each word stemmed."""
    return tuple(w.stem for s in _sentences(phrase) for w in s.words)


@dataclass(frozen=True)
class Concept:
    """One idea to look for in an answer."""

    id: str
    label: str  # how feedback names it: "coalesced global access"
    explain: str  # why it matters (a signal) or why it is wrong (a red flag)
    synonyms: tuple[str, ...] = ()  # phrases, matched as described in the module docstring
    patterns: tuple[str, ...] = ()  # regular expressions over the folded sentence text
    #: Key words for a concept written as a sentence (a scenario rubric line that names no concept of
    #: the bank): it is found when at least ``min_keywords`` of them occur anywhere in the answer.
    keywords: tuple[str, ...] = ()
    min_keywords: int = 0
    #: Concepts of which at least ``min_parts`` must be found (a rubric line that names several).
    parts: tuple[Concept, ...] = ()
    min_parts: int = 0

    def __post_init__(self) -> None:
        if not (self.synonyms or self.patterns or self.keywords or self.parts):
            raise ValueError(f"concept {self.id!r} has neither synonyms, patterns, keywords nor parts")
        if self.keywords and not 0 < self.min_keywords <= len(self.keywords):
            raise ValueError(f"concept {self.id!r}: min_keywords must be between 1 and {len(self.keywords)}")
        if self.parts and not 0 < self.min_parts <= len(self.parts):
            raise ValueError(f"concept {self.id!r}: min_parts must be between 1 and {len(self.parts)}")
        for p in self.patterns:
            re.compile(p)
        for s in self.synonyms:
            if not phrase_stems(s):
                raise ValueError(f"concept {self.id!r}: synonym {s!r} has no words left after folding")

    def find(self, text: str, *, honour_negation: bool = False) -> str | None:
        """The words of ``text`` that name this concept, or None."""
        return find_in(_sentences(text), self, honour_negation=honour_negation)


def find_in(sentences: tuple[_Sentence, ...], concept: Concept, *, honour_negation: bool) -> str | None:
    for sent in sentences:
        stems = [w.stem for w in sent.words]
        for syn in concept.synonyms:
            phrase = phrase_stems(syn)
            for i, j in _phrase_spans(stems, phrase):
                lo, hi = sent.words[i].start, sent.words[j].end
                if not (honour_negation and _negated(sent, lo, hi, set(phrase))):
                    return sent.text[lo:hi].strip()
        for pat in concept.patterns:
            for m in re.finditer(pat, sent.text):
                if m.group().strip() and not (honour_negation and _negated(sent, m.start(), m.end(), set())):
                    return m.group().strip()
    if concept.keywords:
        present = {w.stem for sent in sentences for w in sent.words}
        hits = [k for k in concept.keywords if stem(k) in present]
        if len(hits) >= concept.min_keywords:
            return ", ".join(hits)
    if concept.parts:
        quotes = [q for p in concept.parts if (q := find_in(sentences, p, honour_negation=honour_negation))]
        if len(quotes) >= concept.min_parts:
            return "; ".join(quotes)
    return None


def _phrase_spans(stems: list[str], phrase: tuple[str, ...]):
    """Every (start, end) word-index span where ``phrase`` occurs in order with gaps <= MAX_GAP."""
    for start, s in enumerate(stems):
        if not phrase or s != phrase[0]:
            continue
        pos = start
        for p in phrase[1:]:
            window = stems[pos + 1 : pos + 2 + MAX_GAP]
            if p not in window:
                break
            pos = pos + 1 + window.index(p)
        else:
            yield start, pos


def _negated(sent: _Sentence, lo: int, hi: int, own: set[str]) -> bool:
    """Whether a negation governs the match at characters lo..hi of the sentence.

    Looks NEGATION_WINDOW words back and NEGATION_AFTER words on ("... is not the goal"), never across
    a comma, and at words inside the match that are not the phrase's own ("is not necessarily").
    """
    clause_lo = sent.text.rfind(",", 0, lo) + 1
    clause_hi = sent.text.find(",", hi)
    clause_hi = len(sent.text) if clause_hi < 0 else clause_hi
    before = [w.stem for w in sent.words if clause_lo <= w.start and w.end <= lo][-NEGATION_WINDOW:]
    inside = [w.stem for w in sent.words if lo <= w.start and w.end <= hi and w.stem not in own]
    after = [w.stem for w in sent.words if hi <= w.start and w.end <= clause_hi][:NEGATION_AFTER]
    return not _NEGATIONS.isdisjoint(before + inside + after)


@dataclass(frozen=True)
class Hit:
    concept: Concept
    quote: str  # the answer's own words that matched


@dataclass(frozen=True)
class Grade:
    """The result of grading one answer against a rubric."""

    found: tuple[Hit, ...]
    missed: tuple[Concept, ...]
    flags: tuple[Hit, ...]
    notes: tuple[str, ...] = field(default=())  # extra feedback lines from the caller

    @property
    def score(self) -> int:
        """Strong signals named minus red flags shown."""
        return len(self.found) - len(self.flags)

    @property
    def max_score(self) -> int:
        return len(self.found) + len(self.missed)

    @property
    def fraction(self) -> float:
        """The score as a share of the best possible, clipped to 0..1 (for progress and plans)."""
        return max(0, self.score) / self.max_score if self.max_score else 0.0

    def feedback(self) -> list[str]:
        """One line per concept: what was matched (quoted) or missed, and why it matters."""
        def label(c: Concept) -> str:
            return c.label.rstrip(".")

        lines = [f"+ {label(h.concept)}: you said \"{h.quote}\". {h.concept.explain}".rstrip() for h in self.found]
        lines += [f"- missing: {label(c)}. {c.explain}".rstrip() for c in self.missed]
        lines += [f"! red flag: {label(h.concept)}: you said \"{h.quote}\". {h.concept.explain}".rstrip()
                  for h in self.flags]
        lines += list(self.notes)
        lines.append(f"score {self.score}/{self.max_score} ({_count(len(self.found), 'signal')} found, "
                     f"{_count(len(self.flags), 'red flag')})")
        return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def grade(answer: str, signals: tuple[Concept, ...] | list[Concept], red_flags: tuple[Concept, ...] | list[Concept]) -> Grade:
    """Grade ``answer``: which strong signals it names and which red flags (not negated) it shows."""
    sentences = _sentences(answer)
    found, missed, flags = [], [], []
    for c in signals:
        quote = find_in(sentences, c, honour_negation=False)
        (found.append(Hit(c, quote)) if quote is not None else missed.append(c))
    for c in red_flags:
        quote = find_in(sentences, c, honour_negation=True)
        if quote is not None:
            flags.append(Hit(c, quote))
    return Grade(tuple(found), tuple(missed), tuple(flags))
