"""Numbers an answer states, held against the worked answer's: a figure off by a factor is a wrong claim.

A question's model answer (and its text) state the right numbers with their units: "16.4 ms at the
measured read bandwidth of 4.19 TB/s", "a 64 x 256 accumulator takes 128 registers per thread",
"MFU still counts 6ND". An answer that states a number of the same kind (the same dimension, or the
same counted thing) in the same context, where the context is the words around each number, that
is off from the worked one by ``WRONG_FACTOR`` or more, and close to no number of that kind the
worked answer states, claims something wrong: "at 4.19 TB/s that is about 1.6 ms", "64 x 256 / 128
= 32 registers per thread", "I'd count it at 12ND in MFU". A number the candidate derives that the
worked answer does not hold and whose context matches none of its numbers is left alone: the
grader cannot tell it is wrong.

Kinds: the units of ``coach.exercises.quantity`` ("ms" and "s" are one kind, "KB" and "GiB"
another), the counted things ("265 blocks", "32 sectors"), ratios ("1.4x", "twice"), and a
symbol glued to a number that the worked answer glues to its numbers too ("6ND", "12ND"). A bare
number at the start of a clause after a colon takes the counted thing named earlier in its sentence
("Sectors per request, ...: 4 is ideal").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from coach.exercises import grading as g
from coach.exercises.quantity import _COUNTS, dimension, mentions

#: A number this many times the worked answer's (or less than it by as much) is wrong: rounding
#: ("about 57 KB" for 57.3) and estimates ("roughly 3x" for 2.9x) stay well inside it.
WRONG_FACTOR = 1.5
#: A number within this share of any worked number of its kind is a right number, whatever its context.
RIGHT_TOLERANCE = 0.25
#: A number the worked answer states without a unit ("4Ψ", "989 dense") is the answer's own only as written.
BARE_TOLERANCE = 0.01
#: The words either side of a number (in its clause) that say what it counts.
CONTEXT_WORDS = 6
#: The context a stated number must share with a worked one to be the same quantity: this many
#: informative stems (numbers among them), and this much of their weight.
MIN_SHARED = 2
MIN_SHARED_WEIGHT = 3.0
#: Words that say a ratio without a digit.
_RATIO_WORDS = {"twice": 2.0, "thrice": 3.0, "double": 2.0, "doubles": 2.0, "doubling": 2.0, "halves": 2.0,
                "halving": 2.0, "triple": 3.0, "triples": 3.0, "quadruple": 4.0, "quadruples": 4.0,
                "an order of magnitude": 10.0}
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split()) if i >= 2}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b(?=[ -][a-z])")
#: Rates ``quantity`` counts as things: converted here so "2,039 GB/s" and "2.0 TB/s" compare.
_RATES = {"mb/s": ("bandwidth", 1e6), "gb/s": ("bandwidth", 1e9), "tb/s": ("bandwidth", 1e12),
          "gflop/s": ("flops", 1e9), "tflop/s": ("flops", 1e12), "tflops": ("flops", 1e12),
          "pflop/s": ("flops", 1e15), "pflops": ("flops", 1e15)}
_GLUED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([a-z]{1,3})\b")
_BARE_AFTER_COLON = re.compile(r":\s+(\d+(?:\.\d+)?)\s+(?:is|are|was|would be)\b")


@dataclass(frozen=True)
class Figure:
    """A number stated in a sentence: its value (in the base unit of its kind), kind and context."""

    value: float
    kind: str
    quote: str
    sentence: int
    lo: int
    hi: int
    context: frozenset[str]
    written: float = 0.0  # the number as written, before its unit's scale ("1.6" of "1.6 ms")
    #: said as an adjective, its unit joined by a hyphen ("16-byte vector loads", "a 1-minute
    #: checkpoint"): it names the thing, it does not state an amount of it
    attributive: bool = False


#: Words after "N x" that make it a ratio ("1.4x faster", "2x the bandwidth"); before anything else
#: it is a product ("64 x 256", "32 x num_warps", "64 x N tile").
_RATIO_NEXT = frozenset("faster slower more less fewer larger smaller bigger higher lower longer shorter better worse "
                        "speedup speed the that what as over of in on at for from than to and or but its".split())


def _product(after: str) -> bool:
    m = re.match(r"\s*([a-z]+|\S)", after)
    return m is not None and m.group(1) not in _RATIO_NEXT and not re.fullmatch(r"[.,;:)!?]", m.group(1))


def _kind(unit: str) -> str:
    return _RATES[unit][0] if unit in _RATES else dimension(unit)


def _prepare(raw: str) -> str:
    """A sentence with its numbers as ``mentions`` reads them, offsets kept: number words as digits
    ("four sectors"), a hyphen between a number and its unit as a space ("a 1-minute checkpoint")."""
    raw = _NUMBER_WORD.sub(lambda m: f"{_NUMBER_WORDS[m.group(1)]}".ljust(len(m.group(1))), raw)
    return re.sub(r"(?<=\d)(\s*)-(?=[a-z])", lambda m: m.group(1) + " ", raw)


def _context(sent, lo: int, hi: int, unit: str) -> frozenset[str]:
    words = sent.words
    inside = [i for i, w in enumerate(words) if w.start >= lo and w.end <= hi]
    if inside:
        a, b = inside[0], inside[-1]
    else:
        a = b = next((i for i, w in enumerate(words) if w.start >= hi), len(words))
    clause = words[a].clause if a < len(words) else -1
    unit_stems = set(g.phrase_stems(unit)) if unit else set()
    def near(clauses) -> frozenset[str]:
        ws = [w for w in words[max(0, a - CONTEXT_WORDS): b + 1 + CONTEXT_WORDS]
              if w.clause in clauses and not (lo <= w.start and w.end <= hi)]
        return frozenset(w.stem for w in ws if w.stem not in unit_stems and w.stem not in g.FRAMING and len(w.stem) > 1)

    own = near({clause})
    # a number said as an aside of the clause before ("..., about 1.6x") is about what that clause says
    return own if len(own) >= MIN_SHARED else near({clause, clause - 1, clause - 2})


#: A number and the word after it ("two all-reduces", "512 pages"): what it counts, if nothing else says.
_COUNTED = re.compile(r"(?<![\w./*^])((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s+([a-z]+(?:-[a-z]+)?)\b")


def _counted_stem(word: str) -> str:
    return g.stem(word.replace("-", ""))


def _counted_words(text: str) -> frozenset[str]:
    """The words the worked answer counts with a number ("two all-reduces", "three waves") that no
    unit of ``quantity`` names: each is a kind of its own."""
    out = set()
    for s in g._sentences(text):
        for m in _COUNTED.finditer(_prepare(s.raw)):
            word = m.group(2)
            if not _kind(word) and not _kind(word.split("-")[0]) and word not in _NOT_COUNTED and len(word) > 2:
                out.add(_counted_stem(word))
    return frozenset(out)


#: Words after a number that say nothing of what it counts.
_NOT_COUNTED = frozenset(g._CONNECTORS | g._STOPWORDS | set(
    "more less fewer times per of to or and than about roughly around nearly over under up down".split()))


def figures(text: str, *, glued: frozenset[str] = frozenset(), counted: frozenset[str] = frozenset()) -> list[Figure]:
    """Every number with a kind in ``text``, sentence by sentence (the sentences of ``grading``).

    ``glued``: the symbols that count as a kind when glued to a number ("nd" of "6ND"); ``counted``:
    the (stemmed) words that are a kind when they follow a number ("two all-reduces")."""
    out: list[Figure] = []
    for k, sent in enumerate(g._sentences(text)):
        raw = _prepare(sent.raw)
        taken: list[tuple[int, int]] = []
        for value, unit, lo, hi in mentions(raw):
            if re.search(r"[/*^]\s*$", raw[:lo]):  # "N/2", "64*128": an operand, not a stated quantity
                continue
            kind = _kind(unit) if unit else ""
            if not kind or (unit == "x" and _product(raw[hi:])):
                continue
            if unit in _RATES:
                value *= _RATES[unit][1]
            digits = re.match(r"[~a-z ]*?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)", raw[lo:hi])
            written = float(digits.group(1).replace(",", "")) if digits else value
            out.append(Figure(value, kind, sent.raw[lo:hi].strip(), k, lo, hi, _context(sent, lo, hi, unit), written,
                              # (the thesaurus writes float4 as "vector 16 byte": a type, not an amount)
                              bool(re.search(r"\d\s*-\s*[a-z]", sent.raw[lo:hi]) or sent.raw[:lo].endswith("vector "))))
            taken.append((lo, hi))
        for m in re.finditer(r"\b(" + "|".join(_RATIO_WORDS) + r")\b", raw):
            out.append(Figure(_RATIO_WORDS[m.group(1)], "ratio", m.group(), k, m.start(), m.end(),
                              _context(sent, m.start(), m.end(), "")))
        for m in _GLUED.finditer(raw):
            if (m.group(2) in glued and not _ordinal(float(m.group(1)), m.group(2))
                    and not any(lo <= m.start() < hi for lo, hi in taken)):
                out.append(Figure(float(m.group(1)), "glued:" + m.group(2), m.group(), k, m.start(), m.end(),
                                  _context(sent, m.start(), m.end(), "")))
        for m in _COUNTED.finditer(raw):
            st = _counted_stem(m.group(2))
            if st in counted and not any(lo <= m.start() < hi for lo, hi in taken):
                lo, hi = m.start(), m.end()
                out.append(Figure(float(m.group(1).replace(",", "")), "count:" + st, sent.raw[lo:hi], k, lo, hi,
                                  _context(sent, lo, hi, m.group(2)), float(m.group(1).replace(",", ""))))
        for m in _BARE_AFTER_COLON.finditer(raw):
            named = [c for c in re.findall(r"[a-z]+", raw[:m.start()]) if c in _COUNTS and _COUNTS[c] != "ratio"]
            if named:
                lo, hi = m.start(1), m.end(1)
                out.append(Figure(float(m.group(1)), _COUNTS[named[-1]], f"{m.group(1)} {named[-1]}", k, lo, hi,
                                  _context(sent, lo, hi, "")))
    return out


def _ordinal(value: float, sym: str) -> bool:
    """Whether "2nd", "3rd", "21st" is an ordinal rather than a number of a glued symbol."""
    n = int(value)
    if n != value or sym not in ("st", "nd", "rd", "th"):
        return False
    want = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return sym == want


def _glued_symbols(text: str) -> frozenset[str]:
    """Symbols the worked answer glues to two or more of its numbers ("6ND", "8ND"): a kind of its own."""
    seen: dict[str, int] = {}
    for m in _GLUED.finditer(g._normalise(text)):
        sym = m.group(2)
        if not _kind(sym) and sym not in ("x", "e", "k", "b") and not _ordinal(float(m.group(1)), sym):
            seen[sym] = seen.get(sym, 0) + 1
    return frozenset(s for s, n in seen.items() if n >= 2)


def _asserted(sentences, f: Figure, listed: frozenset[int]) -> bool:
    if f.sentence in listed:
        return False
    sent = sentences[f.sentence]
    negated, _ = g._negation(sent, f.lo, f.hi, set())
    if negated:
        return False
    words = [w for w in sent.all_words if w.start < f.hi] or list(sent.all_words)
    claim = words[-1].claim if words else 0
    ws = [w for w in sent.all_words if w.claim == claim]
    span = sent.raw[ws[0].start:ws[-1].end] if ws else sent.raw
    return not g._HYPOTHETICAL.search(span) and not re.search(r"\b(?:if|when|whenever|unless|say|e\.?g|for example)\b",
                                                               sent.raw[:f.lo][-40:])


def _bare(text: str) -> set[float]:
    """The numbers of ``text`` stated without a kind ("4Ψ", "12 of FP32 state", the factors of
    "2 x 32 layers"): a number the answer repeats from them may be right in a unit the text leaves out."""
    out = set()
    for s in g._sentences(text):
        raw = _prepare(s.raw)
        for value, unit, lo, hi in mentions(raw):
            if not unit or (unit == "x" and _product(raw[hi:])):
                out.add(value)
    return out


def _shared(a: frozenset[str], b: frozenset[str]) -> tuple[int, float]:
    both = a & b
    return len(both), sum(g._weight(s) for s in both)


def _ratio(f: Figure) -> float:
    """A ratio compared as a factor: "0.5x" and "2x fewer" are the same size of change."""
    return 1 / f.value if f.kind == "ratio" and 0 < f.value < 1 else f.value


def _off(a: float, b: float) -> bool:
    if a <= 0 or b <= 0:
        return False
    return max(a, b) / min(a, b) >= WRONG_FACTOR


def _close(a: float, b: float, tolerance: float = RIGHT_TOLERANCE) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


@dataclass(frozen=True)
class _Worked:
    """What a worked answer states, read once: its figures and what an answer may repeat."""

    glued: frozenset[str]
    counted: frozenset[str]
    worked: tuple[Figure, ...]
    stated: tuple[Figure, ...]  # the worked answer's and the question's
    bare: frozenset[float]
    sentence_numbers: tuple[frozenset[str], ...]  # the numbers' stems of each sentence of the worked answer
    given_numbers: frozenset[str]  # and of the question
    sentences: tuple


@lru_cache(maxsize=512)
def _read_worked(reference: str, given: str) -> _Worked | None:
    # a worked answer is prose wrapped at a line length: a line that starts "* 2 = 32 KB" is no bullet
    reference, given = " ".join(reference.split()), " ".join(given.split())
    if not reference:
        return None
    glued, counted = _glued_symbols(reference), _counted_words(reference)
    worked = tuple(figures(reference, glued=glued, counted=counted))
    if not worked:
        return None
    def numbers(s) -> frozenset[str]:
        return frozenset(w.stem for w in s.words if w.stem[0].isdigit())

    return _Worked(glued, counted, worked, worked + tuple(figures(given, glued=glued, counted=counted)),
                   frozenset(_bare(reference) | _bare(given)), tuple(numbers(s) for s in g._sentences(reference)),
                   frozenset().union(*(numbers(s) for s in g._sentences(given))), g._sentences(reference))


def wrong_numbers(answer: str, reference: str, *, given: str = "",
                  listed: frozenset[int] = frozenset()) -> list[tuple[Figure, Figure, str]]:
    """The numbers ``answer`` asserts that are off by a factor from the worked number of the same
    quantity in ``reference``: (stated, worked, the worked answer's clause that holds it). ``given``
    (the question's text) holds numbers the answer may repeat whatever their context."""
    ref = _read_worked(reference, given)
    if ref is None:
        return []
    sentences = g._sentences(answer)
    out = []
    for f in figures(answer, glued=ref.glued, counted=ref.counted):
        if f.attributive:
            continue
        inputs = {c for c in f.context if c[0].isdigit()}  # the numbers said with it ("64 x 256 / 128 = 32")
        same = [w for w in ref.worked if w.kind == f.kind and not w.attributive]
        if (not same or any(_close(_ratio(f), _ratio(v)) for v in ref.stated if v.kind == f.kind)
                or any(_close(f.written or f.value, v, BARE_TOLERANCE) for v in ref.bare)
                or not _asserted(sentences, f, listed)):
            continue
        scored = sorted(((_shared(f.context, w.context), w) for w in same), key=lambda x: -x[0][1])
        (n, weight), w = scored[0]
        if n < MIN_SHARED or weight < MIN_SHARED_WEIGHT or not _off(_ratio(f), _ratio(w)):
            continue
        if inputs - ref.sentence_numbers[w.sentence] - ref.given_numbers:
            continue  # said with numbers the worked sentence does not hold: another case ("64 registers allow ...")
        out.append((f, w, _clause(ref.sentences[w.sentence], w)))
    return out


def _clause(sent, f: Figure) -> str:
    """The clause of a sentence that holds figure ``f``: what the worked answer says of it."""
    at = [w for w in sent.all_words if w.start >= f.lo] or list(sent.all_words[-1:])
    clause = at[0].clause if at else 0
    ws = [w for w in sent.all_words if w.clause == clause]
    return sent.raw[ws[0].start:ws[-1].end].strip(" ,;:") if ws else sent.raw
