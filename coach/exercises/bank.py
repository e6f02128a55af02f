"""The interview question bank and the concept library it grades with.

The bank is data: ``coach/exercises/data/bank/<topic>.toml``, one file per topic, each holding the
topic's concepts (``[concepts.<id>]``: label, explain, synonyms, patterns; red flags also an
``example`` sentence that shows the misconception) and its questions (``[[questions]]``: id, level,
question, answer, signals, red_flags, sources). Concept ids are one namespace across all files, so a
question, or a scenario's rubric, can name a concept from any topic.

A question may also carry ``follow_ups`` (the questions an interviewer asks next, shown after the
model answer) and ``numbers``: a worked answer whose figures come from hardware/. Each number is an
expression over given values, earlier numbers and hardware fields (``h200.dram_bandwidth_bytes_per_s``,
``h200.measured.dram_read_bandwidth_bytes_per_s``), and ``{name}`` in the question, answer or
follow-ups is replaced by its value as ``coach numbers`` prints it (``coach.exercises.worked``). The
text is filled in at load time, so a table that changes changes the answer with it.

Claims (what question authors can add; every field beyond label, explain and synonyms is optional,
and a concept written with only those is graded well: its label, the clauses of its explanation and
its longer synonyms are matched loosely, in other words, besides its exact synonyms)::

    [concepts.littles-law]
    label = "Little's law: bytes in flight = bandwidth x latency"
    explain = "To sustain bandwidth B with latency L, about B x L bytes must be outstanding."
    synonyms = ["little's law", "bytes in flight"]        # exact phrases, in order, small gaps allowed
    patterns = ['sectors?\\s*/\\s*request']            # regular expressions, where a phrase cannot say it
    paraphrases = ["enough requests must be outstanding to cover the round trip"]  # plain words, loose
    polarity = "negative"   # only where the answer *denies* the phrases ("occupancy is not the goal")
    universal = true        # red flags only: a classic misconception, wrong whatever the question
    quantity = { value = 265, unit = "blocks", tolerance = 0.1 }   # a number the answer must state
    example = "..."         # red flags (rf-*): a sentence stating the misconception; required
    also = ["so I'd just fix the biggest stall first", "..."]  # red flags: the same wrong claim said
                            # other ways (other verbs, as a consequence or a plan); matched like paraphrases
    subject = ["little's law", "bytes in flight"]  # signals: what the fact is said of (default: synonyms)

    [[concepts.littles-law.contrary]]   # signals: what a half-right answer says instead of the fact
    claim = "Bytes in flight are bandwidth divided by latency"   # the misconception, as feedback names it
    says = ["bandwidth divided by latency", "bandwidth over latency"]  # phrases that assert it (two
                            # words or more besides filler words), read only where a subject phrase
                            # is named in the same argument, or before it where the claim refers back
    subject = ["bytes in flight"]       # optional: this claim's own subject
    why = "..."                         # optional: why it is wrong (default: the signal's explain)

A claim counts only where a sentence asserts it: negation and "not relevant / doesn't matter /
irrelevant" flip it, and a bare list of terms asserts nothing (``coach.exercises.grading``). A red
flag is matched strictly (its synonyms, its paraphrases and example almost whole, in one clause, in
order): write its synonyms, and its ``also`` sentences, as the misconception is said ("higher occupancy is always better"),
never as a bare term a right answer also uses. Its ``explain`` says why it is wrong; feedback
quotes it. A red flag marked ``universal`` is a classic misconception, wrong in any context
("higher occupancy is always better", "just cast to FP8"): it is graded on every question and
scenario, not only on those that list it (``Bank.classic``, ``coach.exercises.grading.grade``).

A signal's contrary claims are red flags of every rubric that holds the signal (a question's, or a
scenario line's that maps to it): feedback names the misconception and then the fact ("In fact: ...").

Everything is checked once at load time; a bank that breaks a rule raises ``InputError`` naming the
file and the rule, so a typo in a TOML file is a one-line message, not a wrong grade later.
"""

from __future__ import annotations

import random
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from coach.errors import InputError
from coach.exercises.grading import Concept, Grade, Quantity, grade, phrase_stems
from coach.exercises.worked import Number, WorkedError, render

BANK_DIR = Path(__file__).resolve().parent / "data" / "bank"
LEVELS = ("junior", "mid", "senior", "staff")
RED_FLAG_PREFIX = "rf-"  # red-flag concepts are named rf-*, so a rubric cannot mix the two up


@dataclass(frozen=True)
class Topic:
    id: str
    title: str


@dataclass(frozen=True)
class Question:
    id: str
    topic: str
    level: str
    question: str
    answer: str  # the model answer, written to a senior engineer's standard
    signals: tuple[Concept, ...]
    red_flags: tuple[Concept, ...]
    sources: tuple[str, ...]
    follow_ups: tuple[str, ...] = ()  # what an interviewer asks next, shown after the model answer
    #: For a worked answer filled from hardware/: each number by name (``coach.exercises.worked``).
    numbers: Mapping[str, Number] = field(default_factory=dict, compare=False, repr=False)

    def grade(self, text: str) -> Grade:
        return grade(text, self.signals, self.red_flags, reference=self.answer, given=self.question)


@dataclass(frozen=True)
class Bank:
    topics: dict[str, Topic]
    concepts: dict[str, Concept]
    examples: dict[str, str]  # red-flag id -> a sentence that shows the misconception
    questions: tuple[Question, ...]
    #: The classic misconceptions (red flags marked ``universal``): graded on every answer.
    classic: tuple[Concept, ...] = ()

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)

    def select(self, *, topic: str | None = None, level: str | None = None, count: int | None = None,
               seed: int | None = None) -> list[Question]:
        """Questions matching ``topic`` and ``level``, shuffled by ``seed`` (bank order without one)."""
        if topic is not None and topic not in self.topics:
            raise KeyError(topic)
        if level is not None and level not in LEVELS:
            raise KeyError(level)
        chosen = [q for q in self.questions
                  if (topic is None or q.topic == topic) and (level is None or q.level == level)]
        if seed is not None:
            random.Random(seed).shuffle(chosen)
        return chosen[:count] if count is not None else chosen

    def concept(self, cid: str) -> Concept:
        return self.concepts[cid]


def _concept(path: Path, cid: str, raw: dict) -> tuple[Concept, str]:
    allowed = {"label", "explain", "synonyms", "patterns", "example", "paraphrases", "polarity", "quantity",
               "universal", "also", "subject", "contrary"}
    if unknown := set(raw) - allowed:
        raise InputError(path, f"concept {cid!r} has unknown keys {sorted(unknown)}")
    if "universal" in raw and (not isinstance(raw["universal"], bool) or not cid.startswith(RED_FLAG_PREFIX)):
        raise InputError(path, f"concept {cid!r}: universal must be true or false, and only on a red flag (rf-*)")
    for key in ("label", "explain"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise InputError(path, f"concept {cid!r} needs a non-empty {key}")
    example = raw.get("example", "")
    if cid.startswith(RED_FLAG_PREFIX) and not example:
        raise InputError(path, f"red flag {cid!r} needs an example sentence that shows the misconception")
    also = raw.get("also", [])
    if "also" in raw and (not cid.startswith(RED_FLAG_PREFIX) or not isinstance(also, list)
                          or not all(isinstance(a, str) and a.strip() for a in also)):
        raise InputError(path, f"concept {cid!r}: also must be a list of sentences, and only on a red flag (rf-*)")
    quantity = raw.get("quantity")
    try:
        if quantity is not None:
            if not isinstance(quantity, dict) or not isinstance(quantity.get("value"), (int, float)):
                raise ValueError(f"concept {cid!r}: quantity needs a table with a number value (and unit, tolerance)")
            if unknown_q := set(quantity) - {"value", "unit", "tolerance"}:
                raise ValueError(f"concept {cid!r}: quantity has unknown keys {sorted(unknown_q)}")
            quantity = Quantity(float(quantity["value"]), str(quantity.get("unit", "")),
                                float(quantity.get("tolerance", 0.1)))
        concept = Concept(cid, raw["label"].strip(), raw["explain"].strip(),
                          tuple(raw.get("synonyms", ())), tuple(raw.get("patterns", ())),
                          paraphrases=tuple(dict.fromkeys((*raw.get("paraphrases", ()), *also))), example=example,
                          polarity=raw.get("polarity", "positive"), quantity=quantity)
        concept = replace(concept, contrary=_contraries(path, cid, raw, concept))
    except (ValueError, TypeError) as err:
        raise InputError(path, str(err)) from None
    return concept, example


def _phrases(path: Path, where: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(path, f"{where} must be a list of phrases")
    return tuple(value)


def _contraries(path: Path, cid: str, raw: dict, concept: Concept) -> tuple[Concept, ...]:
    """A signal's contrary claims (``[[concepts.<id>.contrary]]``): each a red flag said of the
    signal's subject (its ``subject`` phrases, the concept's, or else its synonyms)."""
    if cid.startswith(RED_FLAG_PREFIX) and ("contrary" in raw or "subject" in raw):
        raise InputError(path, f"red flag {cid!r} cannot have contrary claims or a subject: they belong to a signal")
    default = _phrases(path, f"concept {cid!r}: subject", raw["subject"]) if "subject" in raw else concept.synonyms
    items = raw.get("contrary", [])
    if not isinstance(items, list):
        raise InputError(path, f"concept {cid!r}: contrary must be a list of tables ([[concepts.{cid}.contrary]])")
    out = []
    for k, item in enumerate(items, 1):
        where = f"concept {cid!r}: contrary {k}"
        if not isinstance(item, dict) or (unknown := set(item) - {"claim", "says", "patterns", "subject", "why"}):
            raise InputError(path, f"{where} must be a table of claim, says, patterns, subject, why")
        if not isinstance(item.get("claim"), str) or not item["claim"].strip():
            raise InputError(path, f"{where} needs a claim: the misconception in a sentence")
        says = _phrases(path, f"{where}: says", item.get("says", []))
        # a claim of one word is a term a right answer uses too ("in FP16" is "fp16" once filler is gone)
        if short := [p for p in says if len(phrase_stems(p)) < 2]:
            raise InputError(path, f"{where}: says {short[0]!r} needs two words besides filler words")
        # nor may it be one of the fact's own phrases: a right answer says it too ("mn-major" in "FP8 needs
        # K-major operands, so an MN-major B is transposed first")
        own = {tuple(phrase_stems(s)) for s in concept.synonyms}
        if same := [p for p in says if tuple(phrase_stems(p)) in own]:
            raise InputError(path, f"{where}: says {same[0]!r} is one of the signal's own phrases (its synonyms)")
        patterns = _phrases(path, f"{where}: patterns", item["patterns"]) if "patterns" in item else ()
        if not says and not patterns:
            raise InputError(path, f"{where} needs says (the phrases that assert it) or patterns")
        subject = _phrases(path, f"{where}: subject", item["subject"]) if "subject" in item else default
        if not subject:
            raise InputError(path, f"{where} needs a subject: the phrases that name what it is said of")
        why = str(item.get("why", "")).strip() or concept.explain
        out.append(Concept(f"{RED_FLAG_PREFIX}{cid}-contrary-{k}", item["claim"].strip().rstrip("."),
                           f"In fact: {concept.label.rstrip('.')}. {why}", says, patterns,
                           loose_label=False, anchor=subject))
    return tuple(out)


def _question(path: Path, topic: str, raw: dict, concepts: dict[str, Concept]) -> Question:
    qid = raw.get("id", "?")
    allowed = {"id", "level", "question", "answer", "signals", "red_flags", "sources", "follow_ups", "numbers"}
    if unknown := set(raw) - allowed:
        raise InputError(path, f"question {qid!r} has unknown keys {sorted(unknown)}")
    required = ("id", "level", "question", "answer", "signals", "red_flags")
    if missing := [k for k in required if not raw.get(k)]:
        raise InputError(path, f"question {qid!r} lacks {', '.join(missing)}")
    if raw["level"] not in LEVELS:
        raise InputError(path, f"question {qid!r}: level {raw['level']!r} is not one of {', '.join(LEVELS)}")
    follow_ups = raw.get("follow_ups", [])
    if not isinstance(follow_ups, list) or not all(isinstance(f, str) and f.strip().endswith("?")
                                                       for f in follow_ups):
        raise InputError(path, f"question {qid!r}: follow_ups must be a list of questions, each ending in '?'")

    def refs(key: str, want_flag: bool) -> tuple[Concept, ...]:
        out = []
        for cid in raw[key]:
            if cid not in concepts:
                raise InputError(path, f"question {qid!r}: {key} names unknown concept {cid!r}")
            if cid.startswith(RED_FLAG_PREFIX) != want_flag:
                raise InputError(path, f"question {qid!r}: {cid!r} cannot be one of its {key}")
            out.append(concepts[cid])
        return tuple(out)

    texts = [raw["question"].strip(), raw["answer"].strip(), *(f.strip() for f in follow_ups)]
    numbers: dict[str, Number] = {}
    sources = list(raw.get("sources", ()))
    if "numbers" in raw:
        try:
            texts, numbers, cited = render(texts, raw["numbers"])
        except WorkedError as err:
            raise InputError(path, f"question {qid!r}: {err}") from None
        sources += [c for c in cited if c not in sources]
    return Question(qid, topic, raw["level"], texts[0], texts[1], refs("signals", False), refs("red_flags", True),
                    tuple(sources), tuple(texts[2:]), numbers)


@lru_cache(maxsize=4)
def load_bank(folder: Path = BANK_DIR) -> Bank:
    """Read and check every ``*.toml`` in ``folder``."""
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise InputError(folder, "no question files (*.toml) here")
    raw_files: list[tuple[Path, dict]] = []
    for path in files:
        try:
            raw_files.append((path, tomllib.loads(path.read_text(encoding="utf-8"))))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise InputError(path, f"not valid TOML: {err}") from None
    topics: dict[str, Topic] = {}
    concepts: dict[str, Concept] = {}
    examples: dict[str, str] = {}
    classic: list[Concept] = []
    for path, data in raw_files:
        tid = data.get("topic")
        if not tid or not data.get("title"):
            raise InputError(path, "needs a top-level topic and title")
        if tid in topics:
            raise InputError(path, f"topic {tid!r} is defined twice")
        topics[tid] = Topic(tid, data["title"])
        for cid, raw in data.get("concepts", {}).items():
            if cid in concepts:
                raise InputError(path, f"concept {cid!r} is defined twice")
            concepts[cid], example = _concept(path, cid, raw)
            if example:
                examples[cid] = example
            if raw.get("universal"):
                classic.append(concepts[cid])
    questions: list[Question] = []
    seen: set[str] = set()
    for path, data in raw_files:
        for raw in data.get("questions", []):
            q = _question(path, data["topic"], raw, concepts)
            if q.id in seen:
                raise InputError(path, f"question id {q.id!r} is used twice")
            seen.add(q.id)
            questions.append(q)
    return Bank(topics, concepts, examples, tuple(questions), tuple(classic))
