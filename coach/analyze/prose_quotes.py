"""The numbers a ladder's hand-written prose quotes, checked against the recording they come from.

A rung's ``measured`` sentence and NOTES.md's results table are written from the recorded files
(``coach.analyze.ladder_evidence``); the ``why`` of a rung and the prose of NOTES.md are written by
hand from the same files, and go stale when a ladder is recorded again. This module reads the
quantities that prose quotes, works out from the words around each what it claims to be, and
compares it with the recording:

- ``193.1 us`` / ``4.68 ms``: a median time (``results.json``), or the Nsight Compute duration of the
  rung's longest kernel (or of all its kernels, or of the kernel named);
- ``2.78 TB/s`` / ``GB/s`` / ``TFLOP/s``: the rate of the same (the work model over the median time,
  or the DRAM rate Nsight Compute measured);
- ``x1.11 over torch.cumsum``, ``0.96x rung 02``, ``22x slower than rung 02``: a ratio of two
  recorded median times (a bare ``x1.09`` is over what the sentence last compared with, else the
  rung before, as the ``measured`` sentences say);
- ``DRAM 57.1% of peak`` (DRAM, L1 or L2; ``at DRAM 15.1%``), ``issue active 18.7%``, ``34.40 M warp
  instructions``: the Nsight Compute metric of the rung's longest kernel, or of the kernel named;
- ``level with`` (within ``LEVEL_WITHIN``), ``the fastest/best rung``, ``slower/faster than``,
  ``past``, ``ahead of``, ``behind``, ``short of`` a rung or peer: the order of the recorded medians.

Times and rates are matched against any of the referent's recorded values of that kind (median,
Nsight Compute's longest kernel, all its kernels), so the prose may quote either method; the
referent is what must be right.

**Whose number.** A quantity belongs to, in this order: the entity right after it (``3.85 TB/s of
rung 02's pass``); the one a relative clause follows (``torch.sdpa, which ran at 4.26 TB/s``); the one
just before it in its sub-clause (``rung 05 (195.0 us)``, ``against rung 06's 39.31 M``, ``(rung 05
57.1%)``); the one whose brackets it is in (``torch.sum (259.3 us, 4.14 TB/s)``); the last entity
named before it in its segment (a clause split at ``:``) that is not something compared with
(``over``, ``than``, ``against``, ``with``, ``past``...); else the field's rung (a ``why``) or, in
NOTES.md, the first such entity of the sentence or the rung the paragraph opens with
(``**Rung 09, measured**``, ``- *Rung 04, streaming loads*``); otherwise it is not checked.
In ``A -> B`` and ``from A to B``, A is the rung before's. In ``A against B``, B is the entity named
after ``against``, else the field's rung where A is another's, else what the sentence compared with.
Entities: ``rung NN`` (or ``(NN)``), a peer by its key or its capitalised short name (SDPA, cuBLAS,
CuPy, ``.t().contiguous()``), and the kernels of the Nsight Compute report (``scan02_tiles``).

**Not checked, by context** (each returned with its reason by ``quotes()``):
- predictions: ``prediction`` fields (and ``change`` / ``reason``, written before the rung was
  measured): only ``why`` is read (``CHECKED_FIELDS``); a sub-clause (between commas, brackets,
  colons, "and", "where", "which") that says "predict" or "expect"; ranges (``3.5-3.9 TB/s``), bounds
  and estimates (``not``, ``~``, ``about``, ``under``, ``above``, ``at least``), goals, hypotheticals
  (``would``, ``if``);
- other recordings: a segment that names one (``trial``, ``first recording``, ``first run``, a date
  or time other than results.json's, ``the run before``, ``morning``, ``sweep``, ``batch N``, the
  tuning's own timings, a commit, a separate profile, ``hardware/measured``, the datasheet) and, where
  that segment ends with ``:``, the one after it unless it names this recording; in NOTES.md a
  paragraph whose opening sentence does so, and the list that follows a paragraph ending with ``:``;
  and ``ALLOWLIST``, quotes from other recordings that context cannot tell, each with its reason;
- at another problem size (``at D64 434.7``, ``x0.84 causal``, ``at 8192^3``: the words right after
  the number or the last size named before it in its clause; ``non-causal`` is the main size): times,
  rates, ratios and order are checked against that size's ``results.<size>.json``; its Nsight Compute
  numbers are not, the profile being of the main size only;
- arithmetic (``= 9.7 us``, ``4,625.1 us / 16,384``), differences (``0.2 us apart``), per-item times
  (under half of every recorded time of the referent), tables (NOTES.md's results table is
  ``ladder_evidence``'s; the others are trials' or predictions).

A quoted value is matched to the precision it is written with: ``193.1 us`` claims 193.05-193.15 us.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import polars as pl

from coach.analyze import ladder_evidence as ev
from coach.ladders import DEFINITION_FILE, FLOPS, Measured, results_file, results_path

#: "Level with" in the ladders' prose: two medians within this fraction of each other (about the
#: p20-p80 spread of a rung's timing, 1-3%).
LEVEL_WITHIN = 0.035
#: ``why`` is the only ladder.toml field written after the measurement by hand; ``measured`` is
#: written from the recording (and tested by ladder_evidence); the others come before the run.
CHECKED_FIELDS = ("why",)

#: Quotes from another recording that the words around them do not say are: (file, rung id or
#: "NOTES", the quote as written) -> the reason.
ALLOWLIST: Mapping[tuple[str, str, str], str] = {}

_NUM = r"(?<![\w.,-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"
_UNIT = {"us": 1e-6, "ms": 1e-3, "TB/s": 1e12, "GB/s": 1e9, "TFLOP/s": 1e12}
_QUANTITY = re.compile(_NUM + r"(?P<x>x\b)?(?:\s*(?P<unit>us|ms|TB/s|GB/s|TFLOP/s)\b|(?P<pct>%)|\s+(?P<m>M)\b)?")
_XRATIO = re.compile(r"(?<![\w.])x(\d+)\.(\d+)")
_RUNG = re.compile(r"\b[Rr]ungs?,?\s+(?:is\s+)?(\d\d)\b(?:\s*(?:-|and|,)\s*(\d\d)\b)?")
_OTHER_RECORDING = re.compile(
    r"\btrials?\b|\bfirst recording\b|\brun before\b|\bmorning\b|\bsweep|\bbatch \d|\btuning\b|\btuner\b|stderr"
    r"|\bcommit [0-9a-f]{7}|\bearlier that day\b|\bbefore (?:the|this) ladder\b|\bfirst run\b|hardware/measured|\bdatasheet\b|\bprevious recording\b"
    r"|\bprofiled (?:once more|on its own|separately)\b|\bsame day\b|\bncu-stalls\b|\bprobes?\b", re.I)
#: A date (and time) in prose names a recording: results.json's own, or another.
_RECORDING_OF = re.compile(r"(\d{4}-\d\d-\d\d)(?:[ ,~]*(\d\d):(\d\d))?")
#: An entity right after one of these words is what a number is compared with, not whose it is.
_OBJECT = re.compile(r"(?:\d\.\d+x|x\d+\.\d+\s+of|over|than|against|with|vs\.?|as in|to|from|past|behind)\s+(?:the\s+(?:[\w-]+\s+){1,2}|the\s+[\w\s-]{0,20},\s+|eager\s+|causal\s+)?$", re.I)
_PREDICT = re.compile(r"predict|\bexpect", re.I)
_SUB = re.compile(r"[,():]|\band\b|\bwhere\b|\bwhich\b")
_METRIC_WORD = re.compile(r"\b(DRAM|L1|L2)\b|issue active|warp instructions|instructions")


@dataclass(frozen=True)
class Quote:
    """One quantity quoted in prose and what it was compared with."""

    file: str  # relative to the repository root
    where: str  # "rung 09 why" or "NOTES.md paragraph 12"
    text: str  # the quantity as written ("193.1 us", "x1.11 over torch.cumsum")
    kind: str  # time, rate, ratio, dram_pct, l1_pct, l2_pct, issue_pct, warp_inst, order
    referent: str  # the rung key, peer or kernel whose number it is ("" where none)
    status: str  # "ok", "stale", or "not checked"
    recorded: str = ""  # what the recording says, where checked
    reason: str = ""  # why not checked

    def message(self) -> str:
        return (f"{self.file}, {self.where}: {self.text!r} ({self.kind} of {self.referent or '?'}) is stale: "
                f"the recording says {self.recorded}")


@dataclass(frozen=True)
class _Entity:
    start: int
    end: int
    key: str  # rung key, peer key or kernel name; "" for several rungs at once


@dataclass
class _Context:
    rec: ev.Recorded
    kernels: Mapping[str, Mapping[str, object]]  # kernel name -> its longest launch's profile
    file: str
    where: str
    subject: str | None
    other_sizes: re.Pattern[str] | None
    out: list[Quote] = field(default_factory=list)
    allowlist: Mapping[tuple[str, str, str], str] = field(default_factory=lambda: ALLOWLIST)
    sentence: str = ""  # the sentence being read
    last_object: str | None = None  # what the field last compared with ("slower than rung 06")

    def add(self, text: str, kind: str, referent: str, status: str, recorded: str = "", reason: str = "") -> None:
        self.out.append(Quote(self.file, self.where, text, kind, referent, status, recorded, reason))


# --------------------------------------------------------------------------------------------
# What the recording holds
# --------------------------------------------------------------------------------------------


def _profile_folder(rec: ev.Recorded) -> Path:
    """The Nsight Compute profile saved beside the results ``rec`` was read from (a copy's, for a copy)."""
    return rec.results.path.parent / ev.PROFILE_FOLDER


def kernel_profiles(rec: ev.Recorded, folder: Path) -> dict[str, dict[str, object]]:
    """Kernel name -> the profile of its longest launch (every kernel of every rung)."""
    if not folder.exists():
        return {}
    rows = ev.launch_profiles(rec.defn.name, folder).sort("duration_ns", descending=True)
    return {r["kernel_name"]: r for r in rows.unique("kernel_name", keep="first", maintain_order=True).iter_rows(named=True)}


def _measured(rec: ev.Recorded, key: str) -> Measured | None:
    return next((m for m in (*rec.results.rungs, *rec.results.peers) if m.key == key and m.status == "ok"), None)


def _rung_key(rec: ev.Recorded, rung_id: str) -> str | None:
    return next((r.key for r in rec.defn.rungs if r.id == rung_id), None)


def _previous_key(rec: ev.Recorded, key: str | None) -> str | None:
    keys = [r.key for r in rec.defn.rungs]
    return keys[keys.index(key) - 1] if key in keys and keys.index(key) > 0 else None


def _candidates(ctx: _Context, kind: str, key: str) -> dict[str, float]:
    """The recorded values a quantity of ``kind`` about ``key`` may be: source -> value (SI units, %)."""
    rec, out = ctx.rec, {}
    m = _measured(rec, key)
    profile = rec.profiles.get(key) if m is not None else None
    kernel = ctx.kernels.get(key)
    if kind == "time":
        if m is not None:
            out["median"] = m.time_s
        if profile is not None:
            out["Nsight Compute, longest kernel"] = profile["duration_ns"] / 1e9
            out["Nsight Compute, all kernels"] = profile["total_duration_ns"] / 1e9
        if kernel is not None:
            out["Nsight Compute"] = kernel["duration_ns"] / 1e9
    elif kind == "rate":
        if m is not None:
            out["median"] = m.rate(rec.results.ceiling_unit)
        for name, p in (("Nsight Compute DRAM, longest kernel", profile), ("Nsight Compute DRAM", kernel)):
            if p is not None and p.get("dram_bytes_per_s") is not None and rec.results.ceiling_unit != FLOPS:
                out[name] = p["dram_bytes_per_s"]
    else:
        column = {"dram_pct": "dram_throughput_pct", "l1_pct": "l1_throughput_pct", "l2_pct": "l2_throughput_pct",
                  "issue_pct": "sm_issue_active_pct", "warp_inst": "warp_inst"}[kind]
        p = kernel if kernel is not None else profile
        if p is not None and p.get(column) is not None:
            out["Nsight Compute"] = p[column]
    return {k: v for k, v in out.items() if v is not None}


# --------------------------------------------------------------------------------------------
# Reading the prose
# --------------------------------------------------------------------------------------------


def _value(whole: str, frac: str | None) -> tuple[float, float]:
    """A number as written and half a unit of its last place: "193.1" -> (193.1, 0.05)."""
    v = float(f"{whole.replace(',', '')}.{frac or '0'}")
    return v, 0.5 * 10.0 ** -(len(frac) if frac else 0)


def _agrees(quoted: float, half: float, recorded: float) -> bool:
    return abs(recorded - quoted) <= half * (1 + 1e-9) + 1e-12 * abs(quoted)


def _entities(ctx: _Context, text: str) -> list[_Entity]:
    """The rungs, peers and kernels named in ``text``, in order."""
    rec, found = ctx.rec, []
    for m in _RUNG.finditer(text):
        key = _rung_key(rec, m[1]) if not m[2] else ""
        found.append(_Entity(m.start(), m.end(), key or ""))
    for m in re.finditer(r"(?<=\()(\d\d)(?=[,)])", text):  # "pipelined loads (03) add x1.41"
        if (key := _rung_key(rec, m[1])) is not None:
            found.append(_Entity(m.start(), m.end(), key))
    names: dict[str, str] = {}
    title = rec.defn.title.lower()
    for peer in rec.results.peers:
        names[peer.key] = peer.key
        bare = re.sub(r"^torch(?:\s+|\.)", "", peer.key)
        if bare and bare != peer.key:
            names.setdefault(bare, peer.key)
        parts = [p for p in peer.key.split(".") if p != "torch"]
        if len(parts) > 0 and "." in peer.key:
            names.setdefault(parts[-1] if len(parts) == 1 else parts[0], peer.key)
            if len(parts) > 1 and parts[-1].lower() not in title:  # not "BF16" in a BF16 ladder
                names.setdefault(parts[-1], peer.key)
    # a short alias matches only capitalised (SDPA, cuBLAS, CuPy, cuDNN), not the common word
    for name in sorted(names, key=len, reverse=True):
        for m in re.finditer(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", text, re.I):
            if "." not in name and " " not in name and m[0] == m[0].lower():
                continue
            if any(e.start <= m.start() < e.end for e in found):
                continue
            found.append(_Entity(m.start(), m.end(), names[name]))
    for kernel in sorted(ctx.kernels, key=len, reverse=True):
        for m in re.finditer(r"(?<![\w])" + re.escape(kernel) + r"(?![\w])", text):
            if not any(e.start <= m.start() < e.end for e in found):
                found.append(_Entity(m.start(), m.end(), kernel))
    return sorted(found, key=lambda e: e.start)


def _strip_parens(text: str) -> str:
    while True:
        new = re.sub(r"\([^()]*\)", "", text)
        if new == text:
            return text
        text = new


def _sub_clause(text: str, start: int, end: int) -> tuple[str, str]:
    """The words of the sub-clause before ``start`` and after ``end`` (to the nearest comma, bracket, and/where)."""
    before = [m.end() for m in _SUB.finditer(text, 0, start)]
    after = _SUB.search(text, end)
    return text[before[-1] if before else 0:start], text[end:after.start() if after else len(text)]


def _segments(clause: str) -> Iterator[tuple[int, str]]:
    """A clause split after each ':' outside brackets."""
    at, depth = 0, 0
    for i, ch in enumerate(clause):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ":" and depth <= 0 and not re.match(r"\d\d", clause[i + 1:i + 3]):  # not "14:08"
            yield at, clause[at:i + 1]
            at = i + 1
    yield at, clause[at:]


def _current_recording(ctx: _Context, clause: str) -> bool:
    """False where the clause names a recording other than results.json's."""
    when = str(ctx.rec.results.provenance.get("date", ""))
    try:
        recorded = datetime.fromisoformat(when)
    except ValueError:
        return not _RECORDING_OF.search(clause)
    for m in _RECORDING_OF.finditer(clause):
        if m[1] != recorded.date().isoformat():
            return False
        if m[2] and abs(datetime.fromisoformat(f"{m[1]}T{m[2]}:{m[3]}:00+00:00") - recorded) > timedelta(minutes=30):
            return False
    return True


def _names_this_recording(ctx: _Context, text: str) -> bool:
    """Whether ``text`` says its numbers are results.json's ("in this recording", its date)."""
    return bool(re.search(r"\bthis recording\b|\bthis run\b|\bthe same run\b", text)
                or (_RECORDING_OF.search(text) and _current_recording(ctx, text)))


def _skip_reason(ctx: _Context, clause: str) -> str | None:
    if _OTHER_RECORDING.search(clause) or not _current_recording(ctx, clause):
        return "another recording"
    return None


def _sentences(text: str) -> list[str]:
    """Sentences; a bold lead ("**What limits it.**") joins the sentence after it."""
    return re.split(r"(?:(?<=[.!?])|(?<=[.!?]\*\*))\s+(?=[A-Z*(`])", " ".join(text.split()))


def _lead_sentence(sentences: Sequence[str]) -> str:
    """A paragraph's first sentence, with the one after a bold title ("**What limits it.** ...")."""
    if len(sentences) > 1 and re.fullmatch(r"\W*\*\*[^*]+\*\*", sentences[0]):
        return sentences[0] + " " + sentences[1]
    return sentences[0] if sentences else ""


def _clauses(sentence: str) -> list[str]:
    """A sentence split at the semicolons outside brackets."""
    out, depth, at = [], 0, 0
    for i, ch in enumerate(sentence):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth <= 0:
            out.append(sentence[at:i + 1])
            at = i + 1
    return [*out, sentence[at:]]


def _read_text(ctx: _Context, text: str, notes: bool = False) -> None:
    text = text.replace("`", "")  # code spans: `.t().contiguous()` is the peer's name
    sentences = _sentences(text)
    for s_i, sentence in enumerate(sentences):
        sentence_entities = _entities(ctx, sentence)
        ctx.sentence = sentence
        objects = [e.key for e in sentence_entities if e.key and _is_object(sentence, e)]
        for clause in _clauses(sentence):
            reason = None
            if reason is None and notes and _skip_reason(ctx, _lead_sentence(sentences)) == "another recording":
                reason = "another recording"
            if reason is None:
                key = (ctx.file, ctx.where.split()[1] if ctx.where.startswith("rung") else "NOTES")
                hit = next((t for (f, w, t) in ctx.allowlist if (f, w) == key and t in clause), None)
                if hit is not None:
                    reason = "allowlisted: " + ctx.allowlist[(*key, hit)]
            offset = sentence.index(clause)
            # a clause's segments (split at ':'): another recording named in one covers it and, where it
            # ends with ':' ("in the trial of 2026-12-03:"), the one after it
            carried = None
            for at, segment in _segments(clause):
                if carried and _names_this_recording(ctx, segment):
                    carried = None
                own = reason or carried or _skip_reason(ctx, segment)
                _read_segment(ctx, sentence, offset + at, segment, sentence_entities, own, notes)
                carried = own if own and own != reason and segment.rstrip().endswith(":") else None
        if objects:
            ctx.last_object = objects[-1]


def _compared_with(ctx: _Context, sentence: str, at: int, sentence_ents: list[_Entity]) -> str | None:
    """What a number at ``sentence[at]`` is compared with when its words do not say: the entity last
    named as a comparison ("level with rung 06", "over torch.compile") before it in the field."""
    objects = [e.key for e in sentence_ents if e.end <= at and e.key and _is_object(sentence, e)]
    return objects[-1] if objects else ctx.last_object


def _is_object(text: str, e: _Entity) -> bool:
    """Whether ``e`` is named as what something is compared with ("over rung 05", "against rung 06's"),
    or as a possessive inside a phrase ("two thirds of rung 05's warp instructions")."""
    prefix = text[max(0, e.start - 30):e.start]
    return bool(_OBJECT.search(prefix) or (re.search(r"\bof\s+$", prefix) and text[e.end:e.end + 2] == "'s"))


def _referent(ctx: _Context, seg: str, ents: list[_Entity], start: int, end: int,
              sentence_ents: list[_Entity], seg_at: int, notes: bool) -> str | None:
    """Whose number the quantity at ``seg[start:end]`` is (module docstring, "Whose number")."""
    after = re.match(r"\s*(?:of|in|for)\s+(?:the\s+)?", seg[end:])
    if after:
        nxt = next((e for e in ents if e.start == end + after.end()), None)
        if nxt is not None:
            return nxt.key or None
    # an entity inside brackets closed before the quantity is not its referent
    before = [e for e in ents if e.end <= start and (seg[e.end:start].count(")") <= seg[e.end:start].count("(")
                                                      or seg[e.start - 1:e.end + 1] == f"({seg[e.start:e.end]})")]
    # "torch.sdpa, which ran at 4.26 TB/s": a relative clause is about the entity before it
    for w in reversed(list(re.finditer(r",?\s+which\b", seg[:start]))):
        if re.search(r"[,;:()]", seg[w.end():start]):
            break
        owner = next((e for e in reversed(ents) if e.end <= w.start() and not seg[e.end:w.start()].strip()), None)
        if owner is not None:
            return owner.key or None
    # "rung 05 (195.0 us)", "against rung 06's 39.31 M", "(rung 05 57.1%)": the entity just before, in its sub-clause
    if before:
        last = before[-1]
        between = seg[last.end:start]
        if _is_object(seg, last):  # "over rung 05 (195.0 us)", "against rung 06's 39.31 M"
            if re.fullmatch(r"(?:'s)?\s*\(?\s*", between):
                return last.key or None
        elif re.fullmatch(r"(?:'s)?\s*\(?[^()\d,;:]*", between) or not _SUB.search(between):
            return last.key or None
    # "torch.sum (259.3 us, 4.14 TB/s)": inside brackets opened right after an entity
    depth, opened = 0, None
    for i in range(start - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(seg[i], 0)
        if depth < 0:
            opened = i
            break
    if opened is not None:
        # the last entity before the bracket, in its sub-clause with no number between ("cuBLAS BF16 (681.1")
        inside = [e for e in before if e.start > opened and e.key and not _is_object(seg, e)]  # "(scan02_tiles, 132.1 us)"
        if inside:
            return inside[-1].key
        owner = next((e for e in reversed(ents) if e.end <= opened), None)
        if owner is not None and (re.search(r"[,;:()]|(?<![\w.])\d", seg[owner.end:opened])
                                  or len(seg[owner.end:opened].split()) > 4):
            owner = None
        comparison = re.search(r"\bagainst\b|\bvs\b|(?<![\w.])x\d", seg[opened:start])
        if owner is not None and not (comparison and _is_object(seg, owner)):
            return owner.key or None
    # "(issue active 41.9% and 47.1%)" after two kernels named: respectively
    pair = re.match(r"\s*(?:%|us|M|TB/s)?\s+and\s+\d", seg[end:])
    named = [e for e in before if not _is_object(seg, e) and e.key]  # "rungs 00-02" owns no number
    if pair and len(named) >= 2:
        return named[-2].key or None
    if named:
        return named[-1].key or None
    if notes:
        earlier = [e for e in sentence_ents if e.end <= seg_at + start and not _is_object(ctx.sentence, e)]
        if earlier:
            return earlier[0].key or None
        if any(e.end <= seg_at + start for e in sentence_ents):
            return None
    return ctx.subject


def _read_segment(ctx: _Context, sentence: str, seg_at: int, seg: str, sentence_ents: list[_Entity],
                  skip: str | None, notes: bool) -> None:
    ents = _entities(ctx, seg)
    plain = ctx.rec.results.ceiling_unit != FLOPS
    # ratios first: "x1.11 over torch.cumsum", "0.96x rung 02", "22x slower than rung 02"
    taken: list[tuple[int, int]] = []
    for m in list(_XRATIO.finditer(seg)) + [q for q in _QUANTITY.finditer(seg) if q["x"]]:
        start, end = m.span()
        taken.append((start, end))
        text = seg[start:end]
        value, half = _value(m[1], m[2])
        before, after = _sub_clause(seg, start, end)
        if skip or _PREDICT.search(before) or _PREDICT.search(after) or re.search(r"\d-$", seg[:start]) \
                or re.match(r"-\d", seg[end:]) or re.search(r"(~|about|not)\s*$", seg[:start]):
            ctx.add(text, "ratio", "", "not checked", reason=skip or "a prediction or a range")
            continue
        rest = _strip_parens(seg[end:])
        slower = re.match(r"\s*slower than\s+(?:the\s+\w+\s+)?", rest)
        obj = re.match(r"\s*(?:over|of|than|against)?\s*(?:the\s+(?:slow\s+|only\s+peer,\s+)?|eager\s+|causal\s+)?", rest)
        other = None
        paren = next((e for e in ents if re.fullmatch(r"\s*\(", seg[e.end:start])), None)
        if slower or obj:
            pos = (slower or obj).end()
            rest_ents = _entities(ctx, rest)
            hit = next((e for e in rest_ents if e.start == pos), None)
            other = hit.key if hit else None
            if hit is None and paren is not None and paren.key:  # "past torch.compile (x1.11)"
                other, slower = paren.key, None
            elif hit is None and (slower or re.match(r"\s*(over|of|than|against)\b", rest)):
                ctx.add(text, "ratio", "", "not checked", reason="no rung or peer named after it")
                continue
        # whose ratio: a rung or peer named before it, not one it was compared with
        owners = [e for e in ents if e.key != other and not _is_object(seg, e)]
        subject = _referent(ctx, seg, owners, start, start, sentence_ents, seg_at, notes)
        if other is None:
            if not m[0].startswith("x"):
                ctx.add(text, "ratio", "", "not checked", reason="no rung or peer named after it")
                continue
            other = _compared_with(ctx, sentence, seg_at + start, sentence_ents) or _previous_key(ctx.rec, subject)
            if other == subject:
                other = _previous_key(ctx.rec, subject)
        sized = _at_size(ctx, sentence, seg_at + start, seg_at + end)
        if sized is None:
            ctx.add(text, "ratio", "", "not checked", reason="a size not recorded")
            continue
        a, b = _measured(sized.rec, subject or ""), _measured(sized.rec, other or "")
        if a is None or b is None or other == subject:
            ctx.add(text, "ratio", f"{subject} / {other}", "not checked", reason="not a recorded pair")
            continue
        ratio = a.time_s / b.time_s if slower else b.time_s / a.time_s
        label = f"{other} / {subject}" if not slower else f"{subject} / {other}"
        if sized is not ctx:
            label += f", {sized.rec.results.path.name}"
        full = text + (" slower than " if slower else " vs ") + other
        ok = _agrees(value, half, ratio)
        ctx.add(full, "ratio", label, "ok" if ok else "stale", recorded=f"{ratio:.4f} (median times {label})")
    # arrows and from-to pairs: the left one is the rung before's
    lefts: dict[int, str] = {}
    for m in re.finditer(_NUM + r"\s*(?:%|M|us|TB/s)?\s*->\s*", seg):
        lefts[m.start()] = "arrow"
    for m in re.finditer(r"\bfrom\s+" + _NUM, seg):
        if re.match(r"\s*(?:%|M|us|TB/s)?\s+to\s+\d", seg[m.end():]):
            lefts[m.start() + len(m[0]) - len(m[1]) - (len(m[2]) + 1 if m[2] else 0)] = "from"
    againsts: dict[int, str | None] = {}
    for m in re.finditer(r"(?:against|vs\.?)\s+(?:(rung\s+\d\d)'s\s+|(\w[\w.]*)'s\s+)?" + _NUM, seg):
        named = _entities(ctx, m[0])
        num_at = m.end() - len(m[3]) - (len(m[4]) + 1 if m[4] else 0)
        if named:
            againsts[num_at] = named[0].key
            continue
        # "550.4 against 560.7 us": the left number's owner is named before "against"; the right one is
        # the field's rung where the left one is another's, else what the field compares with
        left = _referent(ctx, seg, ents, m.start(), m.start(), sentence_ents, seg_at, notes)
        near = [e for e in ents if e.end <= m.start() and e.key == left]
        if left is not None and near and _is_object(seg, near[-1]):  # "slower than rung 08 (A against B)"
            againsts[num_at] = left
        elif left is not None and left != ctx.subject:
            # in NOTES.md with no rung of its own, "rung 05: 553.3 vs 560.7 us" is one rung, two methods
            same = [e for e in ents if e.end <= m.start() and e.key == left
                    and re.fullmatch(r"\s*:\s*[\d.,]+\s*(?:us|ms|%|M)?\s*", seg[e.end:m.start()])]
            againsts[num_at] = ctx.subject or (left if same else None)
        else:
            againsts[num_at] = (_compared_with(ctx, sentence, seg_at + m.start(), sentence_ents)
                                or _previous_key(ctx.rec, ctx.subject))
    for q in _QUANTITY.finditer(seg):
        if q["x"] or any(s <= q.start() < e for s, e in taken):
            continue
        kind = _kind(seg, q)
        if kind is None:
            continue
        start, end = q.span()
        text = seg[start:end]
        value, half = _value(q[1], q[2])
        if q["unit"]:
            value, half = value * _UNIT[q["unit"]], half * _UNIT[q["unit"]]
        elif kind == "warp_inst":
            value, half = value * 1e6, half * 1e6
        before, after = _sub_clause(seg, start, end)
        if skip:
            ctx.add(text, kind, "", "not checked", reason=skip)
            continue
        if (_PREDICT.search(before) or _PREDICT.search(after) or re.search(r"\d\s*-\s*$", seg[:start])
                or re.match(r"\s*-\s*\d", seg[end:]) or re.search(r"(~|about|not|under|below|above|over|at least|at most|up to)\s*$", seg[:start])
                or re.match(r"\s*(?:us|ms)?\s*-\s*\d", seg[end:])):
            ctx.add(text, kind, "", "not checked", reason="a prediction, a bound or a range")
            continue
        if kind == "rate" and (re.match(r"\s*goal", seg[end:]) or re.search(r"goal\W{0,3}$|goal's\s*$|issue's\s*$", seg[:start])):
            ctx.add(text, kind, "", "not checked", reason="a goal, not a measurement")
            continue
        if re.search(r"\b(?:would|could|if)\b", before):
            ctx.add(text, kind, "", "not checked", reason="a hypothetical")
            continue
        # a time restated as a rate ("1,138.2 us = 483.0 TFLOP/s") is two quotes, not arithmetic
        restated = ((kind == "rate" and re.search(r"(?:us|ms)\s*=\s*$", seg[:start]))
                    or (kind == "time" and re.match(r"\s*=\s*[\d,.]+\s*(?:TB/s|GB/s|TFLOP/s)", seg[end:])))
        if not restated and (re.search(r"=\s*$", seg[:start]) or re.match(r"\s*[=/]\s", seg[end:])) or re.match(r"\s*(?:apart|/|each\b|per\b|a (?:round|tile|hop|poll))", seg[end:]) \
                or re.search(r"[-+/]\s*$", seg[:start]):
            ctx.add(text, kind, "", "not checked", reason="arithmetic, not a recorded value")
            continue
        if start in lefts:
            key = _previous_key(ctx.rec, _referent(ctx, seg, ents, start, end, sentence_ents, seg_at, notes))
            if any(e.end <= start and seg[e.end:start].strip().startswith("'s") for e in ents[-1:]):
                key = ents[-1].key if ents else key
        elif start in againsts:
            key = againsts[start]
        else:
            key = _referent(ctx, seg, ents, start, end, sentence_ents, seg_at, notes)
        if not key:
            ctx.add(text, kind, "", "not checked", reason="no rung, peer or kernel it belongs to")
            continue
        if kind == "rate" and (q["unit"] == "TFLOP/s") == plain:
            ctx.add(text, kind, key, "not checked", reason="not in the ladder's unit (a bandwidth in a compute ladder, or the reverse)")
            continue
        sized = _at_size(ctx, sentence, seg_at + start, seg_at + end)
        if sized is None:
            ctx.add(text, kind, key, "not checked", reason="a size not recorded")
            continue
        cands = _candidates(sized, kind, key)
        if not cands:
            ctx.add(text, kind, key, "not checked",
                    reason="not in the recording" if sized is ctx else "another size: no Nsight Compute profile of it")
            continue
        if sized is not ctx:
            cands = {f"{sized.rec.results.path.name} {k}": v for k, v in cands.items()}
        if kind == "time" and not any(0.5 <= value / v <= 2 for v in cands.values()):
            ctx.add(text, kind, key, "not checked", reason="not a time of it (a part, a per-item or derived figure)")
            continue
        ok = any(_agrees(value, half, v) for v in cands.values())
        shown = "; ".join(f"{src} {_show(kind, v, q['unit'])}" for src, v in cands.items())
        if not plain and kind == "rate" and q["unit"] == "TB/s":
            shown += " (a compute-bound ladder: its rates are FLOP/s)"
        ctx.add(text, kind, key, "ok" if ok else "stale", recorded=shown)


def _kind(seg: str, q: re.Match[str]) -> str | None:
    if q["unit"] in ("us", "ms"):
        return "time"
    if q["unit"]:
        return "rate"
    if q["m"]:
        nxt = seg[q.end():q.end() + 12]
        if re.match(r"\s*(?:HGMMA|HMMA|QGMMA|FFMA|LDS|elements|values|blocks|bytes|keys|tiles)", nxt) or "instructions" not in seg:
            return None
        return "warp_inst"
    if q["pct"]:
        after = seg[q.end():q.end() + 16]
        before = seg[max(0, q.start() - 40):q.start()]
        if re.match(r"\s*of (?:DRAM )?peak", after):
            word = re.search(r"of (DRAM) peak", after) or list(re.finditer(r"\b(DRAM|L1|L2)\b", before))
            word = word[1] if isinstance(word, re.Match) else (word[-1][1] if word else None)
            return {"DRAM": "dram_pct", "L1": "l1_pct", "L2": "l2_pct"}.get(word or "")
        if re.search(r"issue active(?: (?:down to|at|of|unchanged at))?\s*$", before):
            return "issue_pct"
        unit = re.search(r"\b(DRAM|L1|L2)(?: throughput)?(?: (?:runs|stays|stayed|falls|fell|is|was))?(?: (?:at|to))?\s*$", before)
        if unit:  # "at DRAM 15.0%", "while DRAM runs at 11.6%"
            return {"DRAM": "dram_pct", "L1": "l1_pct", "L2": "l2_pct"}[unit[1]]
    return None


def _show(kind: str, v: float, unit: str | None) -> str:
    if kind == "time":
        return f"{v * 1e6:,.3f} us"
    if kind == "rate":
        return f"{v / _UNIT.get(unit or 'TB/s', 1e12):,.3f} {unit}"
    if kind == "warp_inst":
        return f"{v / 1e6:,.3f} M"
    return f"{v:.2f}%"


# --------------------------------------------------------------------------------------------
# Ordering claims: "level with", "the fastest", "slower than rung 06"
# --------------------------------------------------------------------------------------------

_ORDER = re.compile(r"\b(level with|(?:slower|faster) than|behind|past|ahead of|beats?|short of)\s+(?:the\s+(?:three-pass\s+)?)?", re.I)
_BEST = re.compile(r"\b(?:the\s+)?(?:last and\s+)?(?:fastest|best)\s+rung\b|\bthe ladder's best\b|\bbest rung\b", re.I)


def _read_order(ctx: _Context, text: str) -> None:
    """Check the ordering claims of a ``why`` against the recorded medians: about its own rung, or
    about the rung or peer named just before the claim in its segment."""
    if ctx.subject is None:
        return
    rates = {r.key: m.time_s for r in ctx.rec.defn.rungs if (m := _measured(ctx.rec, r.key)) is not None}
    for sentence in _sentences(text):
        for clause in _clauses(sentence):
            carried = None
            for _, seg in _segments(clause):
                skip = carried or _skip_reason(ctx, seg)
                carried = skip if skip and seg.rstrip().endswith(":") else None
                if skip:
                    continue
                _order_claims(ctx, seg, rates)


def _order_claims(ctx: _Context, seg: str, rates: Mapping[str, float]) -> None:
    ents = _entities(ctx, seg)
    for m in _ORDER.finditer(seg):
        hit = next((e for e in ents if e.start == m.end()), None)
        prefix = seg[:m.start()]
        if hit is None or not hit.key or re.search(r"\b(not|nor|or)\s+(?:\w+\s+)?$", prefix) \
                or _PREDICT.search(_sub_clause(seg, m.start(), m.end())[0]):
            continue
        owners = [e for e in ents if e.end <= m.start() and e.key and not _is_object(seg, e)
                  and not re.search(r"[;(]", seg[e.end:m.start()])]
        who = owners[-1].key if owners else ctx.subject
        sized = _at_size(ctx, seg, m.start())
        if sized is None:
            continue
        a, b = _measured(sized.rec, who), _measured(sized.rec, hit.key)
        if a is None or b is None or who == hit.key:
            continue
        word = m[1].lower()
        r = b.time_s / a.time_s  # > 1: ``who`` is faster
        ok = {"level with": abs(r - 1) <= LEVEL_WITHIN, "slower than": r < 1, "behind": r < 1,
              "short of": r < 1}.get(word, r > 1)
        where = "" if sized is ctx else f" ({sized.rec.results.path.name})"
        ctx.add(f"{who} {m[1]} {hit.key}", "order", who, "ok" if ok else "stale",
                recorded=f"{hit.key} median / {who} median = {r:.4f}{where}")
    best = _BEST.search(seg)
    if best and not re.search(r"\bnot\b[^,]*$", seg[:best.start()]):
        before = [e for e in ents if e.end <= best.start() and e.key and not _is_object(seg, e)]
        who = before[-1].key if before else ctx.subject
        after = re.match(r"\s*(?:rung\s+)?(?:of the ladder\s*)?is\s+(\d\d)\b", seg[best.end():])
        if after:
            who = _rung_key(ctx.rec, after[1]) or who
        if who in rates:
            fastest = min(rates, key=rates.get)
            ctx.add(f"{who}: {best[0]}", "order", who, "ok" if who == fastest else "stale",
                    recorded=f"the fastest rung recorded is {fastest}")


# --------------------------------------------------------------------------------------------
# A ladder's files
# --------------------------------------------------------------------------------------------


def _size_recordings(rec: ev.Recorded) -> dict[frozenset[str], ev.Recorded]:
    """The ladder's other sizes, by the words that name them ({"d64", "causal"} -> results.h200_d64_causal.json),
    each as a Recorded without a profile (Nsight Compute profiles the main size only), read beside
    ``rec``'s own results (a copy's, for a copy), as its profile is."""
    return _sizes_beside(rec.defn.name, rec.defn.kernels_root, rec.results.path.parent)


@cache
def _sizes_beside(name: str, kernels_root: Path, folder: Path) -> dict[frozenset[str], ev.Recorded]:
    from coach.ladders import load_definition, load_results, rung_table

    defn = load_definition(name, kernels_root)
    main = set(defn.main_size.split("_"))
    out = {}
    for size in defn.sizes[1:]:
        path = folder / results_file(size, defn.main_size)
        if path.is_file():
            results = load_results(path)
            out[frozenset(w.lower() for w in size.split("_") if w not in main)] = \
                ev.Recorded(defn, results, tuple(rung_table(defn, results)), {})
    return out


def _at_size(ctx: _Context, sentence: str, at: int, end: int | None = None) -> _Context | None:
    """The context a number at ``sentence[at:end]`` is read in: the main size's, or, where the words
    right after it ("x0.84 causal", "x1.11 at D64") or the clause before it ("at D64 434.7", "causal
    490.0", "x0.84 of causal SDPA") name another size, that size's recording; None where they name
    no recorded size."""
    if ctx.other_sizes is None:
        return ctx
    after = None
    if end is not None:
        near = re.match(r"\s*(?:at\s+|of\s+)?(?:[\w.]+\s+)?(?=\S)", sentence[end:])
        after = ctx.other_sizes.match(sentence, end + near.end()) if near else None
        if after is None:  # "47.0 TFLOP/s, x0.92, at 8192^3"
            rest = re.split(r"[;(]|\band\b", sentence[end:], maxsplit=1)[0]
            at_size = re.search(r"\bat\s+(?=\S)", rest)
            after = ctx.other_sizes.match(sentence, end + at_size.end()) if at_size else None
    phrases = [after] if after else list(ctx.other_sizes.finditer(_clauses(sentence[:at])[-1]))
    if not phrases:
        return ctx
    words = frozenset(w.lower() for w in re.split(r"[\s_]+", phrases[-1][0]))
    if any(w.startswith("non-") for w in words):
        return ctx
    other = _size_recordings(ctx.rec).get(words)
    if other is None:
        return None
    return replace(ctx, rec=other, kernels={})


def _other_sizes(rec: ev.Recorded) -> re.Pattern[str] | None:
    """A pattern for the words that name the ladder's other sizes ("causal", "D64", "8192")."""
    words = set()
    for size in rec.defn.sizes:
        if size == rec.defn.main_size:
            continue
        words |= {w for w in size.split("_") if w not in rec.defn.main_size.split("_")}
    if not words:
        return None
    one = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:non-(?:{one})|(?:{one})(?:\s+(?:{one}))?)\b", re.I)


def _context(rec: ev.Recorded, kernels, file: str, where: str, subject: str | None) -> _Context:
    return _Context(rec, kernels, file, where, subject, _other_sizes(rec))


def check_text(rec: ev.Recorded, text: str, subject: str | None, file: str = "", where: str = "",
               notes: bool = False, kernels: Mapping[str, Mapping[str, object]] | None = None) -> list[Quote]:
    """The quotes of one piece of prose: a ``why`` (``subject``: its rung's key) or a NOTES.md paragraph."""
    if kernels is None:
        kernels = kernel_profiles(rec, _profile_folder(rec))
    ctx = _context(rec, kernels, file, where, subject)
    _read_text(ctx, text, notes)
    if not notes:
        _read_order(ctx, text)
    return ctx.out


def _paragraphs(notes: str) -> Iterator[tuple[int, str]]:
    """NOTES.md's prose paragraphs (numbered from 1), without tables, code or the results table."""
    begin, end = notes.find(ev.TABLE_BEGIN), notes.find(ev.TABLE_END)
    if 0 <= begin < end:
        notes = notes[:begin] + notes[end + len(ev.TABLE_END):]
    notes = re.sub(r"```.*?```", "", notes, flags=re.S)
    items = [item for para in re.split(r"\n\s*\n", notes) for item in re.split(r"\n(?=\s*[-*] )", para)]
    for i, para in enumerate(items, 1):
        lines = [ln for ln in para.splitlines() if not ln.lstrip().startswith(("|", "#"))]
        if lines:
            yield i, "\n".join(lines)


def _lead(rec: ev.Recorded, para: str) -> str | None:
    """The rung a NOTES.md paragraph opens with ("**Rung 09, measured**", "Rung 07's tile pass")."""
    m = re.match(r"[\W_]*[Rr]ung\s+(\d\d)\b", para)
    return _rung_key(rec, m[1]) if m else None


@cache
def _recorded(name: str) -> ev.Recorded:
    return ev.recorded(name)


def quotes(name: str, kernels_root: Path | None = None, rec: ev.Recorded | None = None,
           allowlist: Mapping[tuple[str, str, str], str] = ALLOWLIST) -> list[Quote]:
    """Every quote of a ladder's ``why`` fields and NOTES.md prose, checked or not (with the reason).
    ``kernels_root``: read the prose from ``<kernels_root>/<name>/`` (a copy) instead of the ladder's folder."""
    rec = rec or _recorded(name)
    folder = (kernels_root / name) if kernels_root else rec.defn.folder
    root = Path(__file__).resolve().parents[2]
    label = lambda p: str(p.relative_to(root)) if p.is_relative_to(root) else str(p)  # noqa: E731
    kernels = kernel_profiles(rec, _profile_folder(rec))
    out: list[Quote] = []
    toml = folder / DEFINITION_FILE
    doc = tomllib.loads(toml.read_text(encoding="utf-8"))
    for raw in doc.get("rungs", []):
        key = _rung_key(rec, str(raw.get("id")))
        for fld in CHECKED_FIELDS:
            if raw.get(fld):
                ctx = _context(rec, kernels, label(toml), f"rung {raw['id']} {fld}", key)
                ctx.allowlist = allowlist
                _read_text(ctx, raw[fld])
                _read_order(ctx, raw[fld])
                out += ctx.out
    notes = folder / ev.NOTES_FILE
    if notes.exists():
        carried = ""
        items = list(_paragraphs(notes.read_text(encoding="utf-8")))
        for n, (i, para) in enumerate(items):
            lead = _lead(rec, para)
            ctx = _context(rec, kernels, label(notes), f"NOTES.md paragraph {i}", lead)
            ctx.allowlist = allowlist
            if carried:  # the paragraph before named another recording and ended with ':' (a list of its numbers)
                para = carried + " " + para
            _read_text(ctx, para, notes=True)
            first = _lead_sentence(_sentences(para))
            if para.rstrip().endswith(":") and _skip_reason(ctx, first):
                carried = first
            elif not (carried and re.match(r"\s*[-*] ", items[n + 1][1] if n + 1 < len(items) else "")):
                carried = ""  # a list after the paragraph that named another recording keeps it
            out += ctx.out
    return out


def table(found: Iterable[Quote]) -> pl.DataFrame:
    return pl.DataFrame([q.__dict__ for q in found], schema={k: pl.Utf8 for k in Quote.__dataclass_fields__})


def stale(name: str, kernels_root: Path | None = None) -> list[Quote]:
    return [q for q in quotes(name, kernels_root) if q.status == "stale"]


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import sys

    from coach.errors import CoachError
    from coach.ladders import ladder_names

    parser = argparse.ArgumentParser(prog="python -m coach.analyze.prose_quotes",
                                     description="Check the numbers quoted in ladder.toml's why fields and NOTES.md "
                                                 "against each ladder's recording.")
    parser.add_argument("ladders", nargs="*", help="ladder names (default: every ladder with recorded results)")
    parser.add_argument("--all", action="store_true", help="list every quote, checked or not, with the reason")
    args = parser.parse_args(argv)
    names = args.ladders or [n for n in ladder_names() if results_path(n).is_file()]
    failed = False
    try:
        for name in names:
            found = quotes(name)
            for q in found:
                if q.status == "stale":
                    print(q.message(), file=sys.stderr)
                    failed = True
                elif args.all:
                    print(f"{q.file}, {q.where}: {q.text!r} {q.status}" + (f" ({q.reason})" if q.reason else ""))
            counts = {s: sum(q.status == s for q in found) for s in ("ok", "stale", "not checked")}
            print(f"{name}: {counts['ok']} quotes match the recording, {counts['stale']} stale, "
                  f"{counts['not checked']} not checked")
    except CoachError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
