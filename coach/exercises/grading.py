"""Grade a free-text answer by the claims it makes, not by the words it contains.

A ``Concept`` is one claim a good answer makes ("accesses are coalesced") or one misconception a
weak answer states ("more threads are always faster"). It is written as synonym phrases, regular
expressions, and optionally plain-language ``paraphrases`` (whole sentences a candidate might say
instead), an ``example`` of the misconception, a ``polarity`` and a ``quantity``. An answer is graded
against the strong signals and red flags of a question or scenario rubric.

A claim counts only where a sentence *asserts* it:

* **Wording.** Case, accents, punctuation and hyphens are ignored; words are reduced to a crude stem
  the same way in the phrase and in the answer ("coalesced" = "coalescing"); contractions read as
  negations ("doesn't" = "does not"); a small thesaurus of plain words maps onto the rubric's terms
  ("on-chip scratchpad" = "shared memory", "round trip" = "latency", "bigger" = "larger").
* **Exact and loose matches.** A synonym matches when its words appear in order within one sentence,
  at most ``MAX_GAP`` other words apart; a compound is one word ("memory-bound" holds no "bound" for
  "compute bound", and a synonym "weight-only" needs the two words together). "non-sticky" is one
  word, not a negation. A label, a paraphrase, an example or a longer synonym also
  matches *loosely* when most of its informative words (``LOOSE_SHARE`` of their weight) occur close
  together in one sentence, in any order: this is how an answer in plain words is recognised.
* **Negation.** A "not", "no", "never", "without", "instead of" ... near the match, or a dismissal
  after it in the same clause ("... is not relevant", "doesn't matter", "is irrelevant", "won't
  help"), flips the claim: a negated red flag is the right idea, not the misconception; a negated
  signal is not a signal, and a dismissed one ("the ridge point is not relevant") is a contradiction
  that fails the answer. A concept with ``polarity = "negative"`` is the other way round: it is
  found only where the answer denies its phrases. Where two matches of one claim share words and
  one is denied ("switching isn't free either, it costs ..."), the denial holds.
* **Denied requirements.** "You don't need X", "no need for X", "I don't think you need X", "X
  doesn't have to ..." dismiss X ("have to" and "need to" read as "must"), and all the clause says
  after it ("you don't need A before X or before Y"): said of a signal's own term, that contradicts
  the signal, whatever else names or negates it.
* **Claims over clauses.** A phrase and a misconception are matched within one claim: a clause, or
  a clause and the one that refers back to it ("local memory, which is on chip"; "ring is optimal,
  so it is ...") or the condition before it ("if the point is under the roof, it is at the limit").
  A colon ends a clause; an aside in brackets does not. Every word of a misconception close
  together in one affirmative claim states it in any order; an "always" in it is its claim. Read
  in any order, a claim is one argument with the reasons and consequences said for it ("X will fix
  it, since a faster GPU ...", "since X, Y", "X, so Y"); a short misconception is read where its
  words are closest together, and one of three words only whole, within three words, and holding a
  word the model answers do not use or one that carries the claim ("padding is the fix in all cases").
* **Who says it.** A misconception named to be rejected is not asserted: held by someone else
  ("people often assume X", "the naive kernel assumes X", "you might think X"), named as one ("a
  common mistake is X"), or taken back at once ("...; it doesn't", "..., which is wrong"). A hedge
  of the candidate's own ("I think X", "probably X") still asserts X. Neither is a supposition ("with
  all 64 heads it would be 8x that", "what if", "if we had") nor a claim said of only a few ("only a
  few thousand atomics, which is cheap"); a plan in the first person ("I'd fix the top stall") is.
* **How often and whose.** "Every call", "each time", "whenever it is called" read as one word, and
  in a misconception it is the claim, like "always": "after 8 recompiles it gives up" is not
  "recompiles every call". A possessive is its noun ("an op's time" says "op"), and "GPU" in a
  misconception is part of its claim ("NVTX ranges measure GPU time"), not framing.
* **Alternative phrasings.** Each red flag of the bank carries two to four other ways of saying its
  wrong claim (``also``: other verbs, the claim as a consequence or a plan), matched like its
  paraphrases and checked against every model and strong answer the repository holds.
* **Contrary claims.** A signal (a fact an answer must carry) may declare what a half-right answer
  says instead (a wrong consequence, mechanism, direction or number), each a red flag anchored to the
  fact's subject (``Concept.anchor``): it counts only where the answer names the subject in the same
  argument (the clause with its condition, reasons and consequences, not a contrasting "while ..."),
  in a phrase put before it with a comma ("Past the recompile limit, it ..."), or before it where the
  claim refers back ("FlexAttention ... . It materialises the full score matrix"). Negation, hedges,
  attribution and suppositions read it as they read every claim; its words may lie ``ANCHORED_GAP``
  apart, the subject being named with them. Every rubric that holds the signal grades them.
* **Questions asked.** A claim inside a question the answer asks ("check whether it is compute-bound",
  "what the chip needs to be compute-bound") is not asserted.
* **Classic misconceptions.** Red flags the bank marks ``universal`` ("higher occupancy is always
  better", "just cast to FP8") are wrong on any question: every rubric grades them, counted once
  where one of its own flags says the same.
* **Assertion.** A sentence made only of rubric terms, with no word that connects them into a
  statement ("launch overhead capture replay static shapes"), asserts nothing, and neither does a
  sentence that strings three or more terms together with almost no such word. Their matches are
  reported as "listed, not explained" and earn nothing.
* **Quantities.** A concept with a ``quantity`` (value, unit, relative tolerance) is found where the
  answer states that number in a compatible unit: "265 blocks", "~57 KB", "1.4x" (see
  ``coach.exercises.quantity.mentions``).
* **Wrong numbers.** Graded with the worked answer (``reference``), a number the answer asserts for
  the same quantity as one of the worked answer's (the same unit or counted thing, and the same
  words around it) that is off by a factor is a red flag naming both numbers: "at 4.19 TB/s that is
  about 1.6 ms" where the worked answer has 16.4 ms (``coach.exercises.figures``).

The score is the signals found minus the red flags shown; the ``verdict`` is ``pass`` (no red flag,
no contradiction, at least ``PASS_SHARE`` of the signals), ``fail``, or ``unsure`` where the answer
says something relevant but the grader cannot decide: then the person is asked to mark themselves
against the rubric, and that mark is kept apart from the automatic score.

A concept written as a sentence (a scenario's rubric line) can instead be found by its key words
(``keywords``, ``min_keywords``) or by naming enough of several concepts (``parts``, ``min_parts``);
``coach.exercises.rubric`` builds those.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field, replace
from functools import lru_cache

#: Words allowed between two consecutive words of a synonym phrase (filler words are dropped before
#: counting). Two lets a qualifier in ("shared-memory tile reads" for "shared memory reads"); more
#: starts joining words from unrelated clauses.
MAX_GAP = 2
#: Words allowed between two words of a claim of three words or more said of a named subject (a
#: contrary claim): the subject named in the same argument makes a wider gap safe ("the outputs come
#: back as new tensors" for "outputs are new tensors"); a claim of two words keeps ``MAX_GAP``.
ANCHORED_GAP = 4
#: How far back (in words, same clause) a negation reaches: "is not always", "doesn't really mean".
NEGATION_WINDOW = 4
#: Negations right after a match also flip it: "maximising occupancy is not the goal".
NEGATION_AFTER = 2
#: Share of a loose cue's informative weight an answer sentence must hold for a loose match.
LOOSE_SHARE = 0.55
#: And at least this share of its distinct informative words: two common words of a long cue
#: ("more ... thread") say nothing of its claim.
LOOSE_MIN_WORDS = 0.4
#: A loose match over several clauses is denied when the clauses that deny it hold this share of its weight.
LOOSE_DENIED_SHARE = 0.5
#: A red flag's loose cue must be held almost whole: a strong answer discusses the same words with
#: the opposite claim, and a wrong flag costs more than a missed one.
LOOSE_SHARE_FLAG = 0.85
#: Share of the signals an answer must make (and no red flag, no contradiction) to pass.
PASS_SHARE = 0.4

_STOPWORDS = frozenset(
    "a an the of to is are was were be been being by for in on at it its that this these those and "
    "or as with from into so which there their they we i you your our do does did just very also "
    "here has have had will would should could can may might".split()
)
#: Words that connect terms into a statement: a sentence with none of them (outside its matched
#: terms) is a list. Articles, prepositions, pronouns, auxiliaries, conjunctions, and the symbols of
#: a terse note ("x = y", "a -> b", "fix: SoA").
_CONNECTORS = frozenset(
    "a an the of to in on at by for with from into onto over under than per via about across between "
    "through within after before during because since so if then when while whereas although though "
    "unless until and or but it its they them their this that these those we i you he she which who "
    "what each every all both is are was were be been being am has have had do does did will would can "
    "could should may might must shall need needs not no never only instead rather "
    "as there here how why where make makes made get gets "
    "use uses using keep keeps let lets give gives go goes take takes".split()
) | {"=", "->", "=>", ":", "<", ">", "~", "≈"}
_SENTENCE_END = re.compile(r"(?<![0-9])[.!?;]+(?=\s|$)|\n\s*\n|\n(?=\s*(?:[-*\u2022]|\d+[.)])\s)|(?<=[^a-z,\s])[ \t]*\n")
_CLAUSE_END = re.compile(r",|:(?=\s)|\bbut\b|\bwhereas\b|\balthough\b|\bthough\b|\bbecause\b|\bsince\b|\bwhile\b|\bso\b")
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?|->|=>|[=:<>~≈]")
_CONTRACTIONS = re.compile(
    r"\b(?:doesnt|dont|didnt|isnt|arent|wasnt|werent|wont|wouldnt|cant|cannot|couldnt|shouldnt|hasnt|havent|"
    r"hadnt|neednt|mustnt|aint)\b")


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


#: Words that flip the claim they govern (stemmed like the answer's words).
_NEGATIONS = frozenset(stem(w) for w in "not no never neither nor without instead rather myth misconception "
                       "unlike nothing none needless".split())
#: Words that flip a claim from after it in the same clause, with a negation ("is not relevant",
#: "doesn't matter", "won't help") or on their own ("is irrelevant", "is negligible").
_DISMISS_AFTER_NOT = frozenset(stem(w) for w in (
    "relevant matter matters important issue problem bottleneck help helps apply applies needed necessary "
    "cause reason point change changes affect factor fault limit limiting concern real true thing case "
    "required useful bother").split())
_DISMISS = frozenset(stem(w) for w in (
    "irrelevant negligible unimportant pointless unnecessary useless overrated myth wrong false nonsense "
    "immaterial moot").split())
#: Words before a claim that dismiss it: "ignore X", "forget X" (and "no need for X", written "needless").
_DISMISS_BEFORE = frozenset(stem(w) for w in "ignore forget".split())
#: A denied requirement, after contractions became "not": read as the one word "needless".
_NO_NEED = re.compile(
    r"\b(?:there is |theres )?no (?:real )?need (?:for|to)\b|\bneednt\b|\bwithout needing(?: to)?\b"
    r"|\b(?:do |does |did )?not (?:think|believe) (?:that )?(?:you|we|one|it|they) (?:really )?(?:need|needs|have to|has to)(?: to)?\b"
    r"|\b(?:do |does |did )?(?:not|never) (?:really |even |actually )?(?:need|needs|have to|has to|require|requires)(?: to)?\b")
_MUST = re.compile(r"\b(?:have|has|had|need|needs) to\b")
#: ("assume" and "expect" are not among them: the bank's misconceptions are said with them, "assuming
#: blocks run in order", "expecting racecheck to find global races")
_HEDGES = (r"(?:i (?:would|d) (?:guess|say|think)|id (?:guess|say|think)|i (?:think|believe|guess|suppose|"
           r"reckon)|as far as i (?:know|can tell)|if i (?:remember|recall)(?: (?:correctly|right))?|"
           r"(?:most )?(?:probably|likely)|presumably|i (?:am|m) (?:fairly |pretty |quite )?(?:sure|confident)|"
           r"im (?:fairly |pretty |quite )?(?:sure|confident)|it seems to me|in my experience|honestly|to be honest|"
           r"i suspect)")
_HEDGE_ASIDE = re.compile(r",\s*" + _HEDGES + r"\s*,")
_HEDGE_TAIL = re.compile(r",\s*" + _HEDGES + r"\s*(?=[.!?;]|$)")
_HEDGE = re.compile(r"\b" + _HEDGES + r"\b(?: that)?,?")
_DOUBT = re.compile(r"\bi (?:doubt|do not think|dont think|do not believe|dont believe)(?: that| whether| if)?\b")

# Plain words onto the rubric's terms, applied to both sides before matching (multi-word first).
_PHRASES = [(re.compile(p), r) for p, r in (
    (r"\bon[- ]chip (?:scratch ?pad|buffer|memory)\b", "shared memory"),
    (r"\bscratch ?pad\b", "shared memory"), (r"\bsmem\b", "shared memory"),
    (r"\btmem\b", "tensor memory"),
    (r"\bnsight compute\b", "ncu"), (r"\bnsight systems\b", "nsys"), (r"\bround[- ]trips?\b", "latency"), (r"\bin[- ]flight\b", "inflight"), (r"\boutstanding\b", "inflight"),
    (r"\bmemory (?:speed|rate)\b", "bandwidth"), (r"\bbytes? per second\b", "bandwidth"),
    (r"\bmath (?:units?|rate|throughput)\b", "compute"), (r"\bwarp slots?\b", "occupancy"),
    (r"\bmain memory\b", "dram"), (r"\bdevice memory\b", "dram"), (r"\bglobal memory\b", "dram"),
    (r"\bhbm\b", "dram"), (r"\bhbm(\d+e?)\b", r"dram hbm\1"), (r"\bvram\b", "dram"),  # a generation is specific
    (r"\bgroups? of 32(?: threads)?\b", "warp"), (r"\b32 threads\b", "warp"),
    (r"\bfloat4\b", "vector 16 byte"), (r"\bint4 vector\b", "vector"),
    (r"\b(?:the )?cpu(?: side)?\b", "host"),
    (r"\bfused?\b", "fuse"), (r"\bmerg(?:e|ed|ing)\b", "combine"),
    (r"\bone (?:at a time|after (?:another|the other))\b", "serialise"), (r"\bin (?:turn|sequence)\b", "serialise"),
    (r"\b(?:lots|a lot|plenty|loads) of\b", "many"), (r"\blocations?\b", "address"),
    (r"\b(?:by itself|on its own|all alone|lone|lonely)\b", "alone"),
    (r"\bdo(?:es|ing)? nothing\b", "idle"), (r"\bcompute units?\b", "sm"),
    (r"\brounds?\b(?! (?:up|down|off|to|robin)\b)", "wave"),
    (r"\b(?:at the same time|simultaneously|side by side)\b", "concurrently"),
    (r"\b(?:the )?(?:gpu|card|video|off[- ]chip)(?:s)? (?:big |main )?memory\b", "dram"),
    # plain words for GPU terms: a lane "switched off" is masked, a kernel's "start-up cost" its launch
    # overhead, an ordered "queue" of GPU work a stream, "keys and values" the KV cache's contents
    (r"\b(?:switched|turned|shut) off\b|\bdisabled\b|\bsit(?:s|ting)? out\b", "masked"),
    (r"\b(?:start[- ]?up|starting|launch(?:ing)?) (?:cost|overhead|time)s?\b", "launch overhead"),
    (r"\bcost of (?:starting|launching) (?:a |each |the )?kernels?\b", "launch overhead"),
    (r"\bkeys? and values?\b", "kv"), (r"\btpot\b", "tpot decode"),
    # counting and giving said plainly: "how many streams" is "the number of streams", "hands you
    # memory" or "gives back memory" is "returns memory", "spread over two nodes" is "across nodes"
    # "every call", "each time", "whenever it is called": how often something happens is one word,
    # and in a misconception it is the claim ("recompiles every call" is not "after 8 recompiles")
    (r"\b(?:on |at )?(?:every|each) (?:single )?(?:time|call|run|step|iteration|invocation)\b|\bwhenever (?:you call|it is called|its called|called)\b", "everytime"),
    # an absolute said in other words is "always": "no matter what", "in every case", "whatever the
    # batch", "at any size", "regardless of the load" (the words stay; "always" joins them)
    # ("no matter what X, Y" is one claim, as "whatever X, Y" is)
    (r"\bno matter (?:what|how|which)\b", "whatever always"),
    (r"\b(?:no matter the|in (?:all|every|each) cases?|without exception|invariably|"
     r"unconditionally|across the board|(?:under|in) (?:all|any) (?:circumstances|conditions))\b", "always"),
    (r"\b((?:(?:at|for|with|on|across) (?:any|every|all)|(?:regardless|irrespective) of(?: the)?|whatever the) "
     r"(?:batch|size|context|sequence|load|shape|length|scale|model|workload)s?)\b", r"always \1"),
    # time said plainly: "right away" is "immediately" (and a "knob" is a "setting", below)
    (r"\b(?:right away|straight away|instantly|without delay)\b", "immediately"),
    (r"\bhow many\b", "number of"), (r"\b(?:hands?|gives?|handing|giving) (?:you |back |us |them )", "returns "),
    (r"\b(?:over|spanning|between|on) (?:two|several|multiple|many|\d+) (?:nodes|machines|hosts)\b", "across nodes"),
)]
_CANON = {stem(a): stem(b) for a, b in (
    ("bigger", "larger"), ("greater", "larger"), ("big", "large"), ("huge", "large"), ("massive", "large"),
    ("concurrent", "concurrently"), ("transfer", "copy"), ("transfers", "copy"), ("transferred", "copy"),
    ("limited", "bound"), ("calculation", "compute"), ("calculations", "compute"), ("wider", "wide"), ("widest", "wide"), ("raise", "increase"),
    ("raising", "increase"), ("higher", "increase"), ("boost", "increase"), ("grow", "increase"),
    ("grows", "increase"), ("rises", "increase"), ("rise", "increase"), ("more", "increase"),
    ("lower", "reduce"), ("decrease", "reduce"), ("cut", "reduce"), ("fewer", "reduce"), ("less", "reduce"),
    ("shrink", "reduce"), ("drop", "reduce"), ("smaller", "small"), ("tiny", "small"),
    ("every", "each"), ("lane", "thread"), ("lanes", "thread"), ("adjacent", "consecutive"), ("neighbouring", "consecutive"),
    ("neighboring", "consecutive"), ("successive", "consecutive"),
    ("sequential", "consecutive"),
    ("chunk", "sector"), ("piece", "sector"), ("pieces", "sector"),
    ("math", "compute"), ("arithmetic", "compute"), ("flops", "flop"), ("flop", "flop"),
    ("fast", "speed"), ("faster", "speed"), ("quicker", "speed"), ("speedup", "speed"), ("slow", "slow"),
    ("slower", "slow"), ("serialize", "serialise"), ("serialized", "serialise"), ("serialised", "serialise"),
    ("queue", "stream"), ("queues", "stream"), ("turns", "serialise"),
    ("privatize", "privatise"), ("privatized", "privatise"), ("minimize", "minimise"), ("maximize", "maximise"),
    ("optimize", "optimise"), ("optimized", "optimise"), ("synchronize", "synchronise"),
    ("synchronizes", "synchronise"), ("synchronization", "synchronisation"), ("initialized", "initialise"),
    ("uninitialized", "uninitialise"), ("uninitialised", "uninitialise"), ("quantize", "quantise"),
    ("quantized", "quantise"), ("quantization", "quantisation"), ("vectorized", "vectorise"),
    ("utilization", "utilisation"), ("behavior", "behaviour"), ("specialization", "specialisation"),
    ("amortize", "amortise"), ("materialize", "materialise"), ("materializes", "materialise"),
    ("wait", "wait"), ("waits", "wait"), ("stall", "wait"), ("stalls", "wait"), ("idle", "idle"), ("idles", "idle"),
    ("empty", "idle"), ("busy", "busy"), ("reuse", "reuse"), ("reused", "reuse"),
    ("multiprocessor", "sm"), ("multiprocessors", "sm"), ("sms", "sm"),
    ("weights", "weight"), ("parameters", "parameter"), ("params", "parameter"), ("param", "parameter"),
    ("delay", "latency"), ("delays", "latency"), ("record", "capture"), ("recorded", "capture"),
    ("resubmit", "replay"), ("rerun", "replay"), ("launch", "launch"), ("submission", "launch"),
    ("mask", "mask"), ("masked", "mask"),
    ("anything", "any"), ("knob", "setting"), ("knobs", "setting"), ("option", "setting"), ("outputs", "output"), ("results", "output"), ("errors", "error"),
)}


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lower-case ASCII text: accents gone, micro sign as "u", apostrophes dropped."""
    text = text.replace("µ", "u").replace("μ", "u")
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = text.casefold()
    # a possessive is its noun ("an op's CPU time" says "op"); "it's", "that's" are contractions
    text = _POSSESSIVE.sub(lambda m: m.group(1) if m.group(1) not in _NOT_POSSESSIVE else m.group(0), text)
    text = re.sub(r"['\u2019`]", "", text)
    return text


_POSSESSIVE = re.compile(r"\b([a-z0-9_]+)['\u2019]s\b")
_NOT_POSSESSIVE = frozenset("it that there here what where who he she let how why when".split())


@lru_cache(maxsize=4096)
def _normalise(text: str) -> str:
    """Folded text with contractions as "not" and the thesaurus's phrases replaced."""
    text = _CONTRACTIONS.sub("not", fold(text))
    text = re.sub(r"\b(?:not|never) forget\b", "remember", text)
    # a requirement denied is a requirement dismissed: "you don't need X", "no need for X", "I don't
    # think you need X", "X needn't ..." say X does not apply, as "X is not needed" does
    text = _NO_NEED.sub(lambda m: " needless must " if m.group().endswith(" to") else " needless ", text)
    text = _MUST.sub("must", text)  # "have to", "need to": one modal, as "must"
    # a hedge asserts what it hedges: "X, I would guess, is Y" and "I think X is probably Y" say "X is
    # Y", so the hedge goes (with the commas that set it off); "I doubt X" denies X
    text = _HEDGE_ASIDE.sub(" ", text)
    text = _HEDGE_TAIL.sub("", text)
    text = _HEDGE.sub("", text)
    text = _DOUBT.sub("not ", text)
    text = re.sub(r"\bnon[- ](?=[a-z])", "non", text)  # "non-sticky" is one word, not "none" and "sticky"
    for pattern, repl in _PHRASES:
        text = pattern.sub(repl, text)
    return text


def canon(word_stem: str) -> str:
    return _CANON.get(word_stem, word_stem)


@dataclass(frozen=True)
class _Word:
    stem: str
    start: int  # character offsets in the sentence text, to quote the answer back
    end: int
    clause: int  # index of the clause within the sentence
    connector: bool  # a word that connects terms into a statement
    joined: bool = False  # the tail of a compound ("bound" in "memory-bound"): it belongs to the word before
    #: index of the claim the word belongs to: its clause, or the clause before where its own clause
    #: goes on about the same subject ("local memory, which is on chip", "ring is optimal, so it's ...")
    claim: int = 0
    #: index of the argument the word belongs to: its claim with the reasons and consequences said
    #: for it ("X will fix it, since Y", "since X, Y", "X, so Y")
    argument: int = 0


@dataclass(frozen=True)
class _Sentence:
    text: str  # normalised, symbols spaced out
    words: tuple[_Word, ...]  # stop words removed
    all_words: tuple[_Word, ...]  # every word and connector symbol
    raw: str = ""  # normalised, symbols kept (for numbers and units)

    @property
    def connectors(self) -> tuple[_Word, ...]:
        return tuple(w for w in self.all_words if w.connector)

    @property
    def stems(self) -> dict[str, tuple[int, ...]]:
        """Each stem of ``words`` with the indices where it occurs (worked out once per sentence)."""
        index = self.__dict__.get("_stems")
        if index is None:
            acc: dict[str, list[int]] = {}
            for i, w in enumerate(self.words):
                acc.setdefault(w.stem, []).append(i)
            index = {k: tuple(v) for k, v in acc.items()}
            object.__setattr__(self, "_stems", index)
        return index


@lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[_Sentence, ...]:
    """The text split into sentences of stemmed words (cached: an answer is graded against many concepts)."""
    out = []
    for part in _SENTENCE_END.split(_normalise(text)):
        part = " ".join(part.split())
        spaced = re.sub(r"[-_/+*()\[\]{}\"|^]", " ", part)  # same length as part: offsets hold in both
        # an aside in brackets does not end the clause around it: "cudaMalloc (and so torch.empty) returns ..."
        cuts = [m.start() for m in _CLAUSE_END.finditer(spaced) if not _in_brackets(part, m.start())]
        claims = _claims(spaced, cuts)
        arguments = _arguments(spaced, cuts, claims)
        words, every = [], []
        for m in _WORD.finditer(spaced):
            raw = m.group()
            if raw == ":" and m.end() >= len(spaced.rstrip()):
                continue
            clause = sum(c <= m.start() for c in cuts)
            # the tail of a compound belongs to its head, unless the head is a filler word: "on-chip"
            # and "in-place" say "chip" and "place" as plainly as "on chip" does
            head = re.search(r"([a-z0-9]+)[-_/]$", part[:m.start()])
            joined = head is not None and head.group(1) not in _STOPWORDS
            w = _Word(canon(stem(raw)), m.start(), m.end(), clause, raw in _CONNECTORS, joined, claims[clause],
                      arguments[clause])
            every.append(w)
            if raw not in _STOPWORDS and not re.fullmatch(r"[=:<>~≈]|->|=>", raw):
                words.append(w)
        if words:
            out.append(_Sentence(spaced, tuple(words), tuple(every), part))
    return tuple(out)


#: A clause that starts (after a conjunction) with one of these goes on about the clause before.
_REFERRING = frozenset("it its they theyre them this that thats these those which who".split())
_CONJUNCTIONS = frozenset("so and but because since while though although whereas".split())
#: A clause that starts with one of these is the condition of the next: "if X, Y" ("whatever
#: stall dominates, fix it") is one claim.
_CONDITIONS = frozenset("if when once whenever unless whatever whichever wherever".split())


def _claims(text: str, cuts: list[int]) -> list[int]:
    """For each clause of a sentence (split at ``cuts``), the index of the claim it belongs to."""
    bounds = [0, *cuts, len(text)]
    out: list[int] = []
    condition = False  # the clause before is a condition ("if X, Y" is one claim)
    for i in range(len(bounds) - 1):
        words = re.findall(r"[a-z0-9]+", text[bounds[i]:bounds[i + 1]])
        ws = [w for w in words if w not in _CONJUNCTIONS]
        if out and not words:  # nothing between two cuts (", so it is"): no clause of its own
            out.append(out[-1])
            continue
        out.append(out[-1] if out and ws and (ws[0] in _REFERRING or condition) else i)
        condition = bool(ws) and ws[0] in _CONDITIONS
    return out


#: A clause that starts with one of these gives the reason for a claim: of the clause before, or
#: of the one after where it opens the sentence ("since blocks start in order, block t-1 is running").
_REASONS = frozenset("because since as".split())
#: A clause that starts with one of these is a consequence of the clause before.
_CONSEQUENCES = frozenset("so therefore hence thus".split())


def _arguments(text: str, cuts: list[int], claims: list[int]) -> list[int]:
    """For each clause, the index of the argument it belongs to: its claim, joined with the clauses
    that give a reason for it or draw a consequence from it."""
    bounds = [0, *cuts, len(text)]
    firsts = [next(iter(re.findall(r"[a-z0-9]+", text[bounds[i]:bounds[i + 1]])), "") for i in range(len(bounds) - 1)]
    out = list(claims)
    opening = [f for f in firsts if f][:1] == ["because"] or [f for f in firsts if f][:1] == ["since"]
    seen_main = False  # a clause of the sentence other than an opening reason
    for i in range(1, len(out)):
        if not firsts[i] or firsts[i] in _REASONS or firsts[i] in _CONSEQUENCES or claims[i] == claims[i - 1] or (
                opening and not seen_main):
            seen_main = seen_main or bool(firsts[i] and firsts[i] not in _REASONS and claims[i] != claims[i - 1])
            out[i] = out[i - 1]
        else:
            seen_main = True
    return out


@lru_cache(maxsize=8192)
def phrase_stems(phrase: str) -> tuple[str, ...]:
    """The stems a phrase is matched by: normalised, filler words dropped, each word stemmed."""
    return tuple(w.stem for s in _sentences(phrase) for w in s.words)


#: Words of a rubric line or label that frame the claim rather than make it: never loose cue words.
FRAMING = frozenset(phrase_stems(
    "believing believes thinking thinks assuming assumes treating treats expecting expects calling calls "
    "reading reads saying says claims claiming proposing proposes concluding concludes sees checks knows "
    "notices explains names finds uses tries adds reaches blames looks compares estimates predicts "
    "answering answer making idea always something someone thing things kernel kernels gpu gpus code "
    "candidate whole just only even also such other another without every each way ways means mean "
    "actually really basically simply"
)) - {"without"}


@dataclass(frozen=True)
class Quantity:
    """A number a claim states: value in ``unit`` (see ``coach.exercises.quantity``), within a relative tolerance."""

    value: float
    unit: str = ""
    tolerance: float = 0.1


@dataclass(frozen=True)
class Concept:
    """One claim to look for in an answer."""

    id: str
    label: str  # how feedback names it: "coalesced global access"
    explain: str  # why it matters (a signal) or why it is wrong (a red flag)
    synonyms: tuple[str, ...] = ()  # phrases, matched as described in the module docstring
    patterns: tuple[str, ...] = ()  # regular expressions over the normalised sentence text
    #: Key words for a concept written as a sentence (a scenario rubric line that names no concept of
    #: the bank): it is found when at least ``min_keywords`` of them occur in asserted sentences.
    keywords: tuple[str, ...] = ()
    min_keywords: int = 0
    #: Concepts of which at least ``min_parts`` must be found (a rubric line that names several).
    parts: tuple[Concept, ...] = ()
    min_parts: int = 0
    #: Plain-language sentences that make the same claim, matched loosely (see the module docstring).
    paraphrases: tuple[str, ...] = ()
    example: str = ""  # a red flag: a sentence that states the misconception (also matched loosely)
    polarity: str = "positive"  # "negative": found only where the answer denies the phrases
    quantity: Quantity | None = None
    loose_label: bool = True  # whether the label itself is a loose cue
    #: A claim said of a subject: matched only where one of these phrases names the subject in the
    #: same sentence, or in the sentence before where the claim refers back to it ("it", "they").
    anchor: tuple[str, ...] = ()
    #: A signal's contrary claims: what a half-right answer says instead of the fact (a wrong
    #: consequence, mechanism, direction or number), each a red flag anchored to the fact's subject.
    #: Every rubric that holds the signal grades them.
    contrary: tuple[Concept, ...] = ()

    def __post_init__(self) -> None:
        if not (self.synonyms or self.patterns or self.keywords or self.parts or self.paraphrases or self.quantity):
            raise ValueError(f"concept {self.id!r} has neither synonyms, patterns, keywords nor parts")
        if self.keywords and not 0 < self.min_keywords <= len(self.keywords):
            raise ValueError(f"concept {self.id!r}: min_keywords must be between 1 and {len(self.keywords)}")
        if self.parts and not 0 < self.min_parts <= len(self.parts):
            raise ValueError(f"concept {self.id!r}: min_parts must be between 1 and {len(self.parts)}")
        if self.polarity not in ("positive", "negative"):
            raise ValueError(f"concept {self.id!r}: polarity must be 'positive' or 'negative'")
        for p in self.patterns:
            re.compile(p)
        for s in self.synonyms:
            if not phrase_stems(s):
                raise ValueError(f"concept {self.id!r}: synonym {s!r} has no words left after folding")

    def find(self, text: str, *, honour_negation: bool = False) -> str | None:
        """The words of ``text`` that assert this concept, or None.

        ``honour_negation=False`` (the old behaviour for signals) also accepts a negated mention.
        """
        m = best(_analyse(text, (self,)), self, asserted_only=False)
        if m is None or (honour_negation and m.negated):
            return None
        return m.quote


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    quote: str  # the answer's own words
    sentence: int
    lo: int  # character span in the sentence
    hi: int
    negated: bool = False
    dismissed: bool = False  # negated by "not relevant", "doesn't matter", "irrelevant"
    loose: bool = False
    words: frozenset[int] = frozenset()  # word indices (in sentence.all_words) the match covers
    own_negation: bool = False  # the form holds a negation of its own ("costs nothing"), met by the answer's


@lru_cache(maxsize=1)
def _weights() -> dict[str, float]:
    """Informativeness of a stem: inverse document frequency over the bank's concept texts."""
    from coach.exercises.bank import load_bank  # noqa: PLC0415 - the bank imports this module

    try:
        bank = load_bank()
    except Exception:  # noqa: BLE001 - without a bank every word weighs the same
        return {}
    docs = [set(phrase_stems(" ".join((c.label, c.explain, *c.synonyms)))) for c in bank.concepts.values()]
    n = len(docs)
    df: dict[str, int] = {}
    for d in docs:
        for s in d:
            df[s] = df.get(s, 0) + 1
    return {s: math.log((n + 1) / (k + 0.5)) for s, k in df.items()}


@lru_cache(maxsize=None)
def _weight(s: str) -> float:
    w = _weights()
    if not w:
        return 1.0
    return max(0.3, w.get(s, math.log((len(w) + 1) / 0.5) if w else 1.0))


#: Words that make a claim absolute: in a misconception they are the claim ("shared memory is
#: *always* faster"), not framing, and a loose match must hold them.
_ABSOLUTE = frozenset(stem(w) for w in "always everytime".split())


#: Framing words that, in a misconception, carry the claim: its absolute words, and "gpu" ("NVTX
#: ranges measure GPU time" is wrong because of whose time it names).
_CLAIM_WORDS = _ABSOLUTE | {stem("gpu")}


@lru_cache(maxsize=8192)
def _cue(text: str, absolute: bool = False) -> tuple[str, ...]:
    """A loose cue's informative stems, in order, without framing words and repeats (keeping the
    absolute words, with ``absolute``: a misconception's cue)."""
    return tuple(dict.fromkeys(s for s in phrase_stems(text)
                               if (s not in FRAMING or (absolute and s in _CLAIM_WORDS)) and len(s) > 1))


_CUES: dict[int, tuple[Concept, list[tuple[tuple[str, ...], float]]]] = {}


def _cues(concept: Concept) -> list[tuple[tuple[str, ...], float]]:
    """The loose cues of a concept (worked out once per concept object)."""
    hit = _CUES.get(id(concept))
    if hit is not None and hit[0] is concept:
        return hit[1]
    cues = _work_out_cues(concept)
    _CUES[id(concept)] = (concept, cues)
    return cues


def _work_out_cues(concept: Concept) -> list[tuple[tuple[str, ...], float]]:
    """The loose cues of a concept, each with the share of its weight a sentence must hold."""
    flag = concept.id.startswith("rf-") or "-flag-" in concept.id or concept.example != ""
    share = LOOSE_SHARE_FLAG if flag else LOOSE_SHARE
    texts = list(concept.paraphrases)
    if concept.example:
        texts.append(concept.example)
    if flag:  # a strong answer uses a red flag's words to reject it: only its stated forms count, a clause at a time
        clauses = [p for t in texts for p in re.split(r"[,;:]|\bso\b|\bbecause\b|\bwhich\b|\bbut\b", t)]
        return [(c, share) for c in dict.fromkeys(_cue(t, True) for t in clauses) if len(c) >= 3]
    if concept.loose_label:
        label = concept.label
        texts += [p for p in re.split(r"[:;()]", label) if p.strip()]
        if not flag:  # the explanation says the claim again in other words, a clause at a time
            texts += [p for p in re.split(r"[:;,.]|\bso\b|\bbut\b|\bwhich\b", concept.explain) if len(p.split()) >= 3]
    texts += [s for s in concept.synonyms if len(phrase_stems(s)) >= 3]
    return [(c, share) for c in dict.fromkeys(_cue(t) for t in texts) if len(c) >= 2]


def _clause_bounds(sent: _Sentence, lo: int, hi: int) -> tuple[int, int]:
    clauses = {w.clause for w in sent.all_words if lo <= w.start < hi}
    first, last = (min(clauses), max(clauses)) if clauses else (0, 0)
    return first, last


_DENIAL = re.compile(r"\b(?:not true|untrue|false|wrong|a myth|not the case|a misconception|incorrect|nonsense)"
                     r"(?: to say)? that\b")


def _negation(sent: _Sentence, lo: int, hi: int, own: set[str], cue_negations: int = 0) -> tuple[bool, bool]:
    """(negated, dismissed) for the match at characters lo..hi of the sentence.

    Negations are counted: two cancel ("it is not true that X cannot ..."), and a cue that holds a
    negation itself ("cannot profile Triton") is asserted where the answer holds as many.
    """
    c_lo, c_hi = _clause_bounds(sent, lo, hi)
    words = sent.words
    clause_before = [w.stem for w in words if w.clause == c_lo and w.end <= lo]
    before = clause_before[-NEGATION_WINDOW:]
    inside = [w.stem for w in words if lo <= w.start and w.end <= hi and w.stem not in own]
    after_all = [w.stem for w in words if w.clause == c_hi and w.start >= hi]
    after = after_all[:NEGATION_AFTER]
    dismissed = (_predicate_dismissal(sent, c_hi, lo, own) or any(s in _DISMISS_BEFORE for s in before)
                 # a denied requirement governs the whole clause after it ("you don't need A before X or
                 # before Y"), unless the cue itself says "no need"
                 or ("needless" in clause_before and not cue_negations % 2))
    for i, s in enumerate(after_all):
        if s in ("not", "never") and any(t in _DISMISS_AFTER_NOT for t in after_all[i + 1: i + 4]):
            dismissed = True
    count = sum(s in _NEGATIONS for s in before + inside + after)
    if _DENIAL.search(sent.raw[:lo]) and not any(s in _NEGATIONS for s in before):
        count += 1  # "it is not true that ...", "it's a myth that ..." deny the rest of the sentence
    # "X instead of Y" / "X rather than Y": X is asserted, though "instead" follows it.
    if set(after) & {"instead", "rather"} and not _NEGATIONS & set(before + inside):
        count = 0
    negated = dismissed or (count % 2) != (cue_negations % 2)
    return negated, dismissed


#: Words that make a dismissal a predicate: "X is irrelevant", "X's negligible", "X seems pointless".
_COPULAS = frozenset("is are was were be been being its thats seem seems seemed remain remains become becomes "
                     "stay stays totally completely entirely basically mostly quite pretty".split())


def _predicate_dismissal(sent: _Sentence, clause: int, lo: int, own: set[str]) -> bool:
    """Whether the clause, from the match on, calls it irrelevant: a dismissal word said of it
    ("... is irrelevant", "... are negligible"), not one qualifying a noun ("nonsense locations",
    "wrong results", "negligible overhead" after a preposition)."""
    ws = [w for w in sent.all_words if w.clause == clause and w.start >= lo]
    for i, w in enumerate(ws):
        if w.stem in _DISMISS and w.stem not in own and any(v.stem in _COPULAS or fold(sent.raw[v.start:v.end]) in _COPULAS
                                      for v in ws[max(0, i - 3):i]):
            return True
    return False


def _phrase_spans(words: tuple[_Word, ...], phrase: tuple[str, ...], tight: frozenset[int] = frozenset(),
                  gap: int = MAX_GAP):
    """Every (start, end) word-index span where ``phrase`` occurs in order with gaps <= MAX_GAP.

    A compound is one word: the tail of one in the answer ("bound" of "memory-bound") continues a
    phrase only right after the phrase's previous word, and a compound in the phrase (``tight``: the
    indices of its tails, "weight-only") must be written together in the answer too."""
    stems = [w.stem for w in words]
    for start, s in enumerate(stems):
        if not phrase or s != phrase[0]:
            continue
        pos = start
        for k, p in enumerate(phrase[1:], 1):
            window = stems[pos + 1: pos + 2 + gap]
            if p not in window:
                break
            nxt = pos + 1 + window.index(p)
            if nxt != pos + 1 and (words[nxt].joined or k in tight):
                break
            pos = nxt
        else:
            yield start, pos


@lru_cache(maxsize=8192)
def _tight(phrase: str) -> frozenset[int]:
    """The indices (in ``phrase_stems``) of a phrase's words joined to the word before by a hyphen."""
    return frozenset(i for i, w in enumerate(w for s in _sentences(phrase) for w in s.words) if w.joined)


def _covered(sent: _Sentence, lo: int, hi: int) -> frozenset[int]:
    return frozenset(i for i, w in enumerate(sent.all_words) if lo <= w.start and w.end <= hi)


def _exact(sentences: tuple[_Sentence, ...], concept: Concept) -> list[Match]:
    out = []
    for k, sent in enumerate(sentences):
        index = sent.stems
        for syn in concept.synonyms:
            phrase = phrase_stems(syn)
            if not all(p in index for p in phrase):  # a word of the phrase is missing: no span
                continue
            gap = ANCHORED_GAP if concept.anchor and len(phrase) >= 3 else MAX_GAP
            for i, j in _phrase_spans(sent.words, phrase, _tight(syn), gap):
                if sent.words[i].claim != sent.words[j].claim:  # a phrase is said in one claim
                    continue
                lo, hi = sent.words[i].start, sent.words[j].end
                neg, dis = _negation(sent, lo, hi, set(phrase))
                out.append(Match(sent.raw[lo:hi].strip(), k, lo, hi, neg, dis, False, _covered(sent, lo, hi),
                                 bool(_NEGATIONS & set(phrase))))
        for pat in concept.patterns:
            for m in re.finditer(pat, sent.raw):
                if m.group().strip():
                    # a pattern holds its own negations ("can ?not ... triton"): only what is around it counts
                    neg, dis = _negation(sent, m.start(), m.end(), {w.stem for w in sent.words
                                                                    if m.start() <= w.start and w.end <= m.end()})
                    neg = neg or bool(_DENIAL.search(m.group()))
                    out.append(Match(m.group().strip(), k, m.start(), m.end(), neg, dis, False,
                                     _covered(sent, m.start(), m.end())))
    return out


def _shortest(matches: list[Match]) -> list[Match]:
    """Of matches that end at the same word, the shortest: "not true that cannot X" is "cannot X", denied."""
    keep: dict[tuple[int, int], Match] = {}
    for m in matches:
        key = (m.sentence, m.hi)
        if key not in keep or m.lo > keep[key].lo:
            keep[key] = m
    return list(keep.values())


#: The cue words a negation inside a cue governs: this many before it ("costs nothing") and after it.
SCOPE_BEFORE = 2
SCOPE_AFTER = 3


@lru_cache(maxsize=None)
def _cue_plan(full: tuple[str, ...], share: float, strict: bool):
    """What matching one loose cue needs, worked out once per cue: (cue without negations, its
    negation count, the words those negations govern, the weight to reach, the numbers it states,
    the widest span)."""
    cue = tuple(s for s in full if s not in _NEGATIONS)
    negs = len(full) - len(cue)
    # the cue words a cue's own negation governs ("no other thread can interleave", "costs
    # nothing"): only a match that holds one of them must hold the negation too
    scoped = frozenset(full[j] for i, st in enumerate(full) if st in _NEGATIONS
                       for j in range(max(0, i - SCOPE_BEFORE), min(len(full), i + 1 + SCOPE_AFTER))
                       if full[j] not in _NEGATIONS)
    total = sum(_weight(s) for s in cue)
    need = total * share
    numbers = frozenset(s for s in cue if s[0].isdigit())  # a number is the claim: it must be there
    if strict and numbers:
        need = total  # a misconception with a number ("2 bytes per parameter") is stated whole
    if strict:  # and so is the "always" of an absolute one
        numbers |= frozenset(s for s in cue if s in _ABSOLUTE)
    return cue, negs, scoped, need, numbers, max(8, 3 * len(cue))


def _strict(concept: Concept) -> bool:
    """Whether a concept is a misconception (a red flag): matched strictly, and only where asserted."""
    return concept.id.startswith("rf-") or "-flag-" in concept.id or concept.example != ""


#: A misconception's claim that refers back to its subject ("it", "they", "their length") takes the
#: rest of its cue from what came before: the earlier claims of its sentence and the sentence
#: before, where they affirm their words. The claim must hold this share of the cue's weight and
#: every word that makes it wrong (its numbers, "always", "gpu", "every"); a cue of fewer than four
#: words is its claim and takes nothing from elsewhere.
CONTEXT_OWN_SHARE = 0.5
#: The words that refer back to a subject said before.
_ANAPHORA = frozenset("it its they them their this these those".split())


def _context_stems(sentences: tuple[_Sentence, ...], k: int, claim: int) -> set[str]:
    """The stems a claim of sentence k can take its subject from: the affirmed words of the earlier
    claims of the sentence and of the sentence before."""
    sent = sentences[k]
    first = min((w.start for w in sent.words if w.claim == claim), default=0)

    def affirmed(s: _Sentence, keep) -> set[str]:  # a claim that denies its words does not supply them
        denied = {w.claim for w in s.all_words if w.stem in _NEGATIONS or w.stem in _DISMISS}
        return {w.stem for w in s.words if keep(w) and w.claim not in denied}

    out = affirmed(sent, lambda w: w.claim != claim and w.start < first)
    if k > 0:
        out |= affirmed(sentences[k - 1], lambda w: True)
    return out


@lru_cache(maxsize=None)
def _truth(concept_id: str) -> frozenset[str]:
    """The stems of the model answers of the bank's questions that list red flag ``concept_id``."""
    from coach.exercises.bank import load_bank  # noqa: PLC0415 - the bank imports this module

    try:
        answers = [q.answer for q in load_bank().questions if any(c.id == concept_id for c in q.red_flags)]
    except Exception:  # noqa: BLE001 - without a bank no word is known to be shared with the truth
        return frozenset()
    return frozenset(phrase_stems(" ".join(answers))) if answers else frozenset()


def _loose(sentences: tuple[_Sentence, ...], concept: Concept) -> list[Match]:
    out = []
    strict = _strict(concept)
    in_text = set().union(*(sent.stems for sent in sentences)) if sentences else set()
    for full, share in _cues(concept):
        if sum(st in in_text for st in full) < 2:  # fewer than two of its words anywhere: no match
            continue
        cue, negs, scoped, need, numbers, span = _cue_plan(full, share, strict)
        if len(cue) < 2:
            continue
        min_words = max(2, math.ceil(LOOSE_MIN_WORDS * len(cue)))
        # what makes a misconception wrong said in any order must be there: its words that the model
        # answers of its questions do not use (all its words where it belongs to no question)
        truth = _truth(concept.id) if strict else frozenset()
        distinct = (frozenset(st for st in cue if st not in truth) if truth else frozenset(cue)) if strict else frozenset()
        for k, sent in enumerate(sentences):
            before = len(out)
            _loose_in(sent, k, cue, negs, scoped, need, numbers | distinct, span, min_words, strict, out)
            if strict and len(out) == before:
                _loose_in_context(sentences, k, cue, negs, scoped, need, numbers, span, out)
    return out


def _loose_in_context(sentences, k, cue, negs, scoped, need, numbers, span, out) -> None:
    """A misconception's cue in one claim of sentence k whose missing words its context supplies
    (see ``CONTEXT_OWN_SHARE``): "FP4 E2M1 has 16 codes, so like INT4 it covers its range in equal
    steps" states "FP4 values are evenly spaced" though "FP4" is in the clause before."""
    sent = sentences[k]
    if len(cue) < 4:  # a short cue is its claim: none of it comes from elsewhere
        return
    total = sum(_weight(s) for s in cue)
    by_claim: dict[int, dict[str, int]] = {}
    for i, w in enumerate(sent.words):
        if w.stem in cue and not _foreign_tail(sent.words, i, cue):
            by_claim.setdefault(w.claim, {}).setdefault(w.stem, i)
    for claim, got in by_claim.items():
        own = sum(_weight(s) for s in got)
        # the words that make the claim wrong (its numbers, "always", "gpu", "every") are the claim's own
        required = numbers | {s for s in cue if s in _CLAIM_WORDS or s == "each"}
        if len(got) < 2 or not required <= set(got) or own < CONTEXT_OWN_SHARE * total or own >= need:
            continue
        if max(got.values()) - min(got.values()) > span:
            continue
        if any(w.claim == claim and (w.stem in _NEGATIONS or w.stem in _DISMISS) for w in sent.all_words):
            continue  # a claim that holds a denial is judged on its own words
        first = sent.words[min(got.values())].start
        if not any(w.claim == claim and w.start < first and fold(sent.raw[w.start:w.end]) in _ANAPHORA
                   for w in sent.all_words):
            continue  # the claim refers back ("it", "this", "they") before it says anything of the cue
        context = _context_stems(sentences, k, claim)
        supplied = [s for s in cue if s not in got and s in context]
        if own + sum(_weight(s) for s in supplied) < need:
            continue
        words = [sent.words[i] for i in sorted(got.values())]
        lo, hi = words[0].start, words[-1].end
        own_negs = negs if scoped & set(got) else 0
        neg, dis = _loose_negation(sent, words, set(cue), own_negs)
        out.append(Match(sent.raw[lo:hi].strip(), k, lo, hi, neg, dis, True, _covered(sent, lo, hi), bool(own_negs)))


def _loose_in(sent, k, cue, negs, scoped, need, required, span, min_words, strict, out) -> None:
    """The loose matches of one cue in sentence k, appended to ``out``; ``required``: the words an
    order-free match must hold (the cue's numbers and absolutes, and what makes it wrong)."""
    index = sent.stems
    present = [st for st in cue if st in index]
    numbers = frozenset(s for s in required if s[0].isdigit() or s in _ABSOLUTE)
    if len(present) < 2 or not numbers <= set(present):
        return
    idx = sorted(i for st in present for i in index[st])
    # "bound" of "memory-bound" is not the "bound" of "compute bound": a compound's tail counts
    # only with its head
    idx = [i for i in idx if not _foreign_tail(sent.words, i, cue)]
    # (a cue of three words, in any order, only where a word of it is one the model answers do not
    # use, or a word that carries a misconception's claim: "always", "gpu")
    if strict and not negs and (len(cue) >= 4 or (len(cue) == 3 and (required or _CLAIM_WORDS & set(cue)))):
        # enough of a misconception's words (every one that makes it wrong among them), close
        # together in one affirmative claim, state it in whatever order: "an op's CPU time is the time
        # its kernel took on the GPU", "doubling the FLOP rate is what decode needs", a passive; a
        # cue of three words only whole and close together ("padding is the fix in every case")
        short = len(cue) == 3
        whole = _whole_claim(sent, idx, cue, len(cue) if short else 2 * len(cue),
                             sum(_weight(s) for s in cue) if short else need, required)
        if whole is not None:
            lo, hi = min(w.start for w in whole), max(w.end for w in whole)
            neg, dis = _loose_negation(sent, whole, set(cue), 0)  # "it is not true that ..." still denies it
            out.append(Match(sent.raw[lo:hi].strip(), k, lo, hi, neg, dis, True, _covered(sent, lo, hi)))
            return
    for a in range(len(idx)):
        got: dict[str, int] = {}
        for b in range(a, len(idx)):
            if idx[b] - idx[a] > span:
                break
            w = sent.words[idx[b]]
            if strict and (w.claim != sent.words[idx[a]].claim  # a misconception is stated in one claim,
                           or (got and cue.index(w.stem) < max(cue.index(x) for x in got))):  # in its order
                continue
            got.setdefault(w.stem, idx[b])
            if len(got) >= min_words and sum(_weight(s) for s in got) >= need:
                lo = sent.words[idx[a]].start
                hi = sent.words[idx[b]].end
                own_negs = negs if scoped & set(got) else 0
                neg, dis = _loose_negation(sent, [sent.words[i] for i in got.values()], set(cue), own_negs)
                out.append(Match(sent.raw[lo:hi].strip(), k, lo, hi, neg, dis, True, _covered(sent, lo, hi),
                                 bool(own_negs)))
                break


#: A misconception of at most this many words is read where its words are closest together.
SHORT_CLAIM = 4


def _whole_claim(sent: _Sentence, idx: list[int], cue: tuple[str, ...], span: int, need: float,
                 required: frozenset[str]) -> list[_Word] | None:
    """The words of one claim of the sentence that hold ``need`` of the weight of ``cue``, and every
    stem of ``required``, within ``span`` words, if any."""
    by_claim: dict[int, list[int]] = {}
    for i in idx:
        by_claim.setdefault(sent.words[i].argument, []).append(i)
    for claim, where in by_claim.items():
        # the closest-together words that hold a short claim: a word said twice counts where it is
        # nearest the rest (a long cue's words, spread over a wide span, only where each is first said)
        if len(cue) > SHORT_CLAIM:
            firsts: dict[str, int] = {}
            for i in where:
                firsts.setdefault(sent.words[i].stem, i)
            where = sorted(firsts.values())
        for a in range(len(where)):
            got: dict[str, int] = {}
            for b in range(a, len(where)):
                if where[b] - where[a] > span:
                    break
                got.setdefault(sent.words[where[b]].stem, where[b])
                if not (sum(_weight(s) for s in got) >= need and required <= set(got) and len(got) >= 3):
                    continue
                clauses = {sent.words[i].clause for i in got.values()}  # a denial in a clause of the
                if not any(w.clause in clauses and (w.stem in _NEGATIONS or w.stem in _DISMISS)  # argument that
                           for w in sent.all_words):  # holds some of it denies it
                    return [sent.words[i] for i in sorted(got.values())]
                break
    return None


def _foreign_tail(words: tuple[_Word, ...], i: int, cue: tuple[str, ...]) -> bool:
    """Whether word i is the tail of a compound whose head (a content word) the cue does not hold."""
    if not words[i].joined or i == 0:
        return False
    head = words[i - 1]
    return head.stem not in cue and not head.connector and head.stem not in FRAMING


def _loose_negation(sent: _Sentence, got: list[_Word], own: set[str], cue_negations: int) -> tuple[bool, bool]:
    """(negated, dismissed) for a loose match: judged in the clause that holds most of its cue words.

    A loose match can span clauses ("all-gather doesn't concatenate, and reduce-scatter doesn't
    leave a shard"): two negations in two clauses deny two claims, they do not cancel."""
    by_clause: dict[int, list[_Word]] = {}
    for w in got:
        by_clause.setdefault(w.clause, []).append(w)
    if len(by_clause) == 1:
        return _negation(sent, min(w.start for w in got), max(w.end for w in got), own, cue_negations)
    verdicts = []
    for ws in by_clause.values():
        weight = sum(_weight(w.stem) for w in ws)
        verdicts.append((weight, _negation(sent, min(w.start for w in ws), max(w.end for w in ws), own, 0)))
    total = sum(v[0] for v in verdicts)
    negated_weight = sum(v[0] for v in verdicts if v[1][0])
    dismissed = any(v[1][1] for v in verdicts)
    if cue_negations % 2:  # the cue holds a negation itself: asserted where the answer denies it
        return negated_weight < total / 2, False
    # one claim, partly denied ("blocks ... don't run in any order, they run in sequence"): a clause
    # that holds a third of the cue's weight and denies it denies the claim
    return dismissed or negated_weight >= total * LOOSE_DENIED_SHARE, dismissed


def _quantities(text: str, concept: Concept) -> list[Match]:
    from coach.exercises.quantity import mentions  # noqa: PLC0415

    q = concept.quantity
    out = []
    for k, sent in enumerate(_sentences(text)):
        for value, unit, lo, hi in mentions(sent.raw):
            if unit and q.unit and not _same_unit(unit, q.unit):
                continue
            if q.value and abs(value - q.value) <= q.tolerance * abs(q.value):
                out.append(Match(sent.raw[lo:hi].strip(), k, lo, hi, *_negation(sent, lo, hi, set())))
    return out


def _same_unit(a: str, b: str) -> bool:
    from coach.exercises.quantity import dimension  # noqa: PLC0415

    return dimension(a) == dimension(b)


@dataclass(frozen=True)
class _Analysis:
    text: str
    sentences: tuple[_Sentence, ...]
    matches: dict[str, list[Match]]  # concept id -> every match, negated or not
    listed: frozenset[int]  # sentences that assert nothing (bare lists of terms)


#: What makes a misconception someone else's: a third party who holds it ("people assume X", "some
#: engineers put X"), a name for it ("a common mistake is X", "the naive reading"), a thought the
#: candidate sets up to knock down ("you might think X"), or a premise of something else ("the
#: kernel assumes X"). A candidate's own hedge ("I think X", "I'd guess X") is still an assertion.
_ATTRIBUTION = re.compile(
    r"\b(?:(?:some|many|most|a lot of|plenty of) )?(?:people|folks|beginners|newcomers|novices|colleagues?|juniors?|"
    r"everyone|everybody|someone|somebody|others|(?:some|many|most) (?:engineers|developers|candidates|teams|users|"
    r"tutorials|guides))\b"
    r"|\b(?:common|classic|typical|frequent|usual|naive|tempting|popular|widespread|old)\s+(?:\w+\s+)?"
    r"(?:mistake|misconception|error|trap|pitfall|assumption|belief|myth|misreading|reading|intuition|view|idea|"
    r"expectation)s?\b"
    r"|\b(?:mistake|misconception|trap|pitfall|myth|fallacy)\s+(?:is|here|would be)\b"
    r"|\b(?:you|one)\s+(?:might|may|could|would)\s+(?:\w+\s+)?(?:think|assume|expect|guess|believe)\b"
    r"|\btempt(?:ed|ing)\b|\b(?:wrongly|mistakenly|naively|falsely|incorrectly)\b"
    r"|\b(?:assumes|assumed|believes|believed|presumes)\b")
#: What rejects the claim just made: a short next sentence ("People assume X; it doesn't.") or a
#: tail of the same one ("..., which is wrong").
_REJECTION_NEXT = re.compile(r"^(?:(?:it|that|this|they|which)\s+(?:\w+\s+)?(?:not|never|wrong|false|untrue)|"
                             r"(?:wrong|false|not true|not so|nope|no)\b)")
_REJECTION_TAIL = re.compile(r"\b(?:which|that|this|thats)\s+(?:is\s+|was\s+)?(?:simply\s+|just\s+|plain\s+)?"
                             r"(?:wrong|false|a myth|not true|untrue|a mistake|incorrect|a misconception)\b")


def _attributed(sentences: tuple[_Sentence, ...], m: Match) -> bool:
    """Whether a match of a misconception is said as someone else's, or rejected right after: then
    the candidate does not assert it ("People often assume the atomic is a fence; it isn't")."""
    sent = sentences[m.sentence]
    if _ATTRIBUTION.search(sent.raw[:m.lo]) or _REJECTION_TAIL.search(sent.raw[m.hi:]):
        return True
    if m.sentence + 1 < len(sentences):
        nxt = sentences[m.sentence + 1].raw.strip(" ()-")
        return len(nxt.split()) <= 5 and bool(_REJECTION_NEXT.match(nxt))
    return False


#: What makes a claim a supposition rather than an assertion: a counterfactual ("it would be 8x
#: that", "that would have cost ...") or a condition supposed ("what if", "if we had", "if it were",
#: "had we"). A plan in the first person ("I would lower the cap", "I'd fix X") still asserts.
_HYPOTHETICAL = re.compile(
    r"\b(?:it|that|this|which|they|there|these|those)\s+would\s+(?:\w+\s+)?(?:be|have|take|need|cost|give|mean|grow)\b"
    r"|\bwhat if\b|\bsuppose\b|\bsupposing\b|\bimagine\b|\bhypothetically\b"
    r"|\bif\s+(?:we|you|one|it|they|the \w+)\s+(?:had|were|used|kept|stored)\b|\bhad (?:we|you|it|they)\b")
#: A question asked before the claim, not answered: "check whether it is compute-bound", "to see if it
#: is memory-bound", or a requirement spoken of ("what the chip needs to be compute-bound").
_ASKED = re.compile(r"\b(?:check|checks|checking|see|tell|find out|ask|asks|asking|decide|determine|know|test|measure|"
                    r"question is|depends on)\s+(?:if|whether)\b"
                    r"|\bwhat\b[^,]*\bmust be\b")


def _hypothetical(sent: _Sentence, m: Match) -> bool:
    """Whether a match sits in a claim that is only supposed ("with all 64 heads it would be 8x that"),
    or is said of only a few."""
    claims = {sent.all_words[i].claim for i in m.words} if m.words else set()
    if not claims:
        return False
    ws = [w for w in sent.all_words if w.claim in claims]
    return bool(_HYPOTHETICAL.search(sent.raw[ws[0].start:ws[-1].end])
                or _FEW.search(sent.raw[ws[0].start:m.lo]) or _ASKED.search(sent.raw[ws[0].start:m.lo]))


#: A claim said of a few ("only a few thousand atomics on the address, which is cheap") is not the
#: general claim a misconception makes ("atomics are cheap").
_FEW = re.compile(r"\bonly (?:a )?(?:few|handful|couple|small number)\b|\ba (?:few|handful of) (?:thousand|hundred|dozen)\b")


def _all_matches(text: str, sentences: tuple[_Sentence, ...], concept: Concept) -> list[Match]:
    found = _shortest(_exact(sentences, concept))
    if concept.quantity is not None:
        found += _quantities(text, concept)
    if not any(not m.negated for m in found):
        found += _loose(sentences, concept)
    if concept.anchor:  # a claim said of a subject: only where the subject is named
        found = [m for m in found if _anchored(sentences, m, concept.anchor)]
    if _strict(concept):  # a misconception named to be rejected, or only supposed, is not stated
        found = [replace(m, negated=True) if not m.negated and (_attributed(sentences, m)
                                                                or _hypothetical(sentences[m.sentence], m)) else m
                 for m in found]
    if concept.polarity == "positive":
        # the same words cannot both deny and assert one claim: where overlapping matches disagree
        # ("switching isn't free either, it costs ..."), the denial holds
        denied = [(m, _denied_clauses(sentences[m.sentence], m)) for m in found if m.negated and m.words]
        # and a synonym denied outright outweighs a loose match in the same sentence ("shared memory
        # isn't programmer managed, the hardware caches it")
        found = [m for m in found if m.negated or m.own_negation
                 or not any(d.sentence == m.sentence and (any(sentences[m.sentence].all_words[i].clause in cl
                                                              for i in d.words & m.words)
                                                          or (cl and m.loose and not d.loose))
                            for d, cl in denied)]
    return found


def _names_subject(sent: _Sentence, anchor: tuple[str, ...], keep=lambda w: True) -> bool:
    """Whether the sentence names one of the subject phrases with a first word that ``keep`` accepts."""
    index = sent.stems
    for phrase in anchor:
        stems = phrase_stems(phrase)
        if not stems or not all(p in index for p in stems):
            continue
        if any(keep(sent.words[i]) for i, _ in _phrase_spans(sent.words, stems, _tight(phrase))):
            return True
    return False


def _anchored(sentences: tuple[_Sentence, ...], m: Match, anchor: tuple[str, ...]) -> bool:
    """Whether a claim's subject is named where the claim is said: in its argument (its clause, with
    the conditions, reasons and consequences said with it), or before it where the claim refers back
    to it ("FlexAttention ... . It materialises ..."). A contrast ("eager runs op by op, while graph
    mode ...") is another argument: the subject of one is not the other's."""
    sent = sentences[m.sentence]
    own = [w for w in sent.all_words if m.lo <= w.start < m.hi]
    if not own:
        return False
    argument = own[0].argument
    if _names_subject(sent, anchor, lambda w: w.argument == argument):
        return True
    # a phrase put in front of the claim ("Past the recompile limit, it ..."): a clause with no verb
    before = next((w.argument for w in sent.all_words if w.clause == argument - 1), None) if argument else None
    fronted = [w for w in sent.all_words if w.argument == before] if before is not None else []
    if fronted and fronted[0].clause == 0 and not any(w.stem in _VERBS for w in fronted) and _names_subject(
            sent, anchor, lambda w: w.argument == before) and sent.raw[fronted[-1].end:m.lo].lstrip()[:1] == ",":
        return True
    first = min(w.start for w in sent.all_words if w.argument == argument)
    refers = any(first <= w.start < m.lo and fold(sent.raw[w.start:w.end]) in _ANAPHORA for w in sent.all_words)
    if not refers:
        return False
    return (_names_subject(sent, anchor, lambda w: w.start < first)
            or (m.sentence > 0 and _names_subject(sentences[m.sentence - 1], anchor)))


#: Matches already worked out, per answer and concept: an answer is graded against many rubrics
#: (the classic misconceptions are the same concepts in all of them). Bounded; cleared when full.
_MATCHES: dict[tuple[str, int], tuple[Concept, list[Match]]] = {}
_MATCHES_MAX = 200_000


def _matches(text: str, sentences: tuple[_Sentence, ...], in_text: frozenset[str], concept: Concept) -> list[Match]:
    key = (text, id(concept))
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is concept:
        return hit[1]
    found = [] if _cannot_match(in_text, concept) else _all_matches(text, sentences, concept)
    if len(_MATCHES) >= _MATCHES_MAX:
        _MATCHES.clear()
    _MATCHES[key] = (concept, found)
    return found


def _cannot_match(in_text: frozenset[str], concept: Concept) -> bool:
    """Whether no synonym and no loose cue of a plain concept can match: the answer lacks a word of
    every synonym and holds fewer than two words of every cue (a quick test before the real one)."""
    if concept.anchor and not any(all(p in in_text for p in phrase_stems(a)) for a in concept.anchor):
        return True
    if concept.patterns or concept.quantity is not None:
        return False
    if any(all(p in in_text for p in phrase_stems(syn)) for syn in concept.synonyms):
        return False
    return not any(sum(st in in_text for st in full) >= 2 for full, _ in _cues(concept))


def _denied_clauses(sent: _Sentence, m: Match) -> set[int]:
    """The clauses in which a denied match is denied: where a negation stands in it or just before it
    ("not free", "no need for X"), or all of it if dismissed. A denial only in what follows a term
    ("small messages will not reach it") denies the predicate, not the term: no clause."""
    if m.dismissed:
        return {sent.all_words[i].clause for i in m.words}
    first = min(m.words)
    clause = sent.all_words[first].clause
    out = {sent.all_words[i].clause for i in m.words if sent.all_words[i].stem in _NEGATIONS}
    if any(w.stem in _NEGATIONS and w.clause == clause for w in sent.all_words[max(0, first - NEGATION_WINDOW):first]):
        out.add(clause)
    return out


def _analyse(text: str, concepts: tuple[Concept, ...]) -> _Analysis:
    sentences = _sentences(text)
    leaves: dict[str, Concept] = {}

    def collect(c: Concept) -> None:
        leaves.setdefault(c.id, c)
        for p in c.parts:
            collect(p)

    for c in concepts:
        collect(c)
    in_text = frozenset().union(*(sent.stems for sent in sentences)) if sentences else frozenset()
    matches = {cid: _matches(text, sentences, in_text, c) for cid, c in leaves.items()}
    if _is_list(text):
        return _Analysis(text, sentences, matches, frozenset(range(len(sentences))))
    listed = set()
    for k, sent in enumerate(sentences):
        exact = [m for ms in matches.values() for m in ms if m.sentence == k and not m.loose]
        covered = set().union(*(m.words for m in exact)) if exact else set()
        connectors = [i for i, w in enumerate(sent.all_words) if w.connector and i not in covered]
        distinct = {frozenset(m.words) for m in exact}
        spans = _disjoint(distinct)
        content = [w for w in sent.all_words if not w.connector]
        # a matched phrase with a verb in it is a statement ("triton has warp shuffles, just use tl.shfl")
        stated = any(sent.all_words[i].connector and sent.all_words[i].stem in _VERBS for i in covered)
        if spans >= 2 and not any(w.connector for w in sent.all_words):
            listed.add(k)
        elif spans >= 3 and 2 * len(connectors) < spans and len(connectors) <= 1 and not stated:
            listed.add(k)
        elif spans >= 2 and not stated and not [i for i in connectors
                                                if not _in_brackets(sent.raw, sent.all_words[i].start)]:
            listed.add(k)
        elif _fragments_bare(sent.raw):
            listed.add(k)
    return _Analysis(text, sentences, matches, frozenset(listed))


#: Connecting words that are verbs: a term phrase holding one says something ("X has Y", "use Z").
_VERBS = frozenset(stem(w) for w in "is are was were be has have had do does did use uses using make makes get gets "
                   "keep keeps give gives go goes take takes need needs can could will would should must may might "
                   "let lets".split())


@lru_cache(maxsize=4096)
def _is_list(text: str) -> bool:
    """Whether a whole answer is a list of short terms: three or more fragments (between commas,
    semicolons, line ends and full stops), none longer than five words, and at most one connecting
    word for every two fragments."""
    text = re.sub(r"\([^()]*\)", " ", _normalise(text))
    frags = [f.split() for f in re.split(r"[,;\n]|(?<![0-9])[.!?]+(?=\s|$)", text)]
    frags = [f for f in frags if any(re.search(r"[a-z]", w) for w in f)]
    if len(frags) < 3 or any(len(f) > 5 for f in frags):
        return False
    joins = sum(w in _CONNECTORS for f in frags for w in f)
    return joins <= len(frags) / 2


def _in_brackets(text: str, pos: int) -> bool:
    return text.count("(", 0, pos) > text.count(")", 0, pos)


def _fragments_bare(text: str) -> bool:
    """Whether a sentence is a comma list of bare terms: four or more fragments (asides in brackets
    and bare numbers aside), three quarters of them without a connecting word."""
    text = re.sub(r"\([^()]*\)", " ", text)
    frags = [f for f in text.split(",") if re.search(r"[a-z]", f)]
    if len(frags) < 4:
        return False
    bare = sum(not any(w in _CONNECTORS for w in re.findall(r"[a-z]+|[=:<>~]|->", f)) for f in frags)
    return bare >= 0.75 * len(frags)


def _disjoint(spans: set[frozenset[int]]) -> int:
    """How many non-overlapping term spans a sentence holds."""
    taken: set[int] = set()
    n = 0
    for s in sorted(spans, key=lambda s: (min(s) if s else 0, -len(s))):
        if s and not (s & taken):
            taken |= s
            n += 1
    return n


def best(analysis: _Analysis, concept: Concept, *, asserted_only: bool = True) -> Match | None:
    """The match that best asserts ``concept``: asserted before negated, exact before loose; with
    ``asserted_only``, none from a sentence that asserts nothing."""
    ms = [m for m in _leaf_matches(analysis, concept, asserted_only)
          if not (asserted_only and m.sentence in analysis.listed)]
    if not ms:
        return None
    return sorted(ms, key=lambda m: (m.negated, m.loose, m.sentence, m.lo))[0]


def _leaf_matches(analysis: _Analysis, concept: Concept, asserted_only: bool = True) -> list[Match]:
    ms = list(analysis.matches.get(concept.id, []))
    if concept.polarity == "negative":  # found where the phrases are denied
        ms = [Match(m.quote, m.sentence, m.lo, m.hi, not m.negated, False, m.loose, m.words) for m in ms]
    if concept.keywords:
        asserted = [(k, w) for k, s in enumerate(analysis.sentences)
                    if not (asserted_only and k in analysis.listed) for w in s.words]
        hits = []
        for key in concept.keywords:
            st = canon(stem(key))
            for k, w in asserted:
                if w.stem == st:
                    sent = analysis.sentences[k]
                    neg, _ = _negation(sent, w.start, w.end, {st})
                    if not neg:
                        hits.append((key, k, w))
                        break
        if len(hits) >= concept.min_keywords:
            k, w = hits[0][1], hits[0][2]
            ms.append(Match(", ".join(h[0] for h in hits), k, w.start, w.end))
    if concept.parts:
        quotes = [m for p in concept.parts
                  if (m := best(analysis, p, asserted_only=asserted_only)) is not None and not m.negated]
        if len(quotes) >= concept.min_parts:
            ms.append(Match("; ".join(dict.fromkeys(q for m in quotes for q in m.quote.split("; "))), quotes[0].sentence, quotes[0].lo,
                            quotes[0].hi, False, False, all(m.loose for m in quotes)))
        else:
            denied = [m for p in concept.parts
                      if (m := best(analysis, p, asserted_only=asserted_only)) is not None and m.dismissed]
            ms += denied
    return ms


def find_in(sentences: tuple[_Sentence, ...], concept: Concept, *, honour_negation: bool) -> str | None:
    """Kept for callers of the first version: the quote that names ``concept`` in already split text."""
    text = "\n\n".join(s.text for s in sentences)
    return concept.find(text, honour_negation=honour_negation)


# --------------------------------------------------------------------------------------------
# Grades
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    concept: Concept
    quote: str  # the answer's own words that matched
    loose: bool = False  # matched by its plain-language cue, not by a term


@dataclass(frozen=True)
class Grade:
    """The result of grading one answer against a rubric."""

    found: tuple[Hit, ...]
    missed: tuple[Concept, ...]
    flags: tuple[Hit, ...]
    notes: tuple[str, ...] = field(default=())  # extra feedback lines from the caller
    contradicted: tuple[Hit, ...] = ()  # signals the answer dismisses or denies
    listed: tuple[Hit, ...] = ()  # signals only listed, in a sentence that asserts nothing
    words: int = 0  # length of the answer

    @property
    def score(self) -> int:
        """Strong signals asserted minus red flags shown."""
        return len(self.found) - len(self.flags)

    @property
    def max_score(self) -> int:
        return len(self.found) + len(self.missed)

    @property
    def fraction(self) -> float:
        """The score as a share of the best possible, clipped to 0..1 (for progress and plans)."""
        return max(0, self.score) / self.max_score if self.max_score else 0.0

    @property
    def needed(self) -> int:
        """Signals an answer must assert to pass."""
        return max(1, math.ceil(PASS_SHARE * self.max_score)) if self.max_score else 0

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` or ``unsure`` (the grader cannot tell: the person marks themselves)."""
        if self.flags or self.contradicted:
            return "fail"
        if len(self.found) >= self.needed:
            return "pass"
        near = len(self.found) + len(self.listed)
        if self.found and len(self.found) == self.needed - 1 and self.words >= 25 and near >= self.needed:
            return "unsure"
        return "fail"

    def feedback(self) -> list[str]:
        """One line per concept: what was asserted (quoted) or missed, and why it matters; no sentence twice."""
        said: set[str] = set()

        def why(c: Concept) -> str:
            fresh = [s for s in _split_sentences(c.explain) if s not in said]
            said.update(fresh)
            return " ".join(fresh)

        def label(c: Concept) -> str:
            return c.label.rstrip(".")

        lines = [f"+ {label(h.concept)}: you said \"{h.quote}\". {why(h.concept)}".rstrip() for h in self.found]
        listed = {h.concept.id for h in self.listed}
        contradicted = {h.concept.id for h in self.contradicted}
        for c in self.missed:
            if c.id in listed:
                lines.append(f"- listed, not explained: {label(c)}. Say what it is and why it applies here.")
            elif c.id not in contradicted:
                lines.append(f"- missing: {label(c)}. {why(c)}".rstrip())
        lines += [f"! contradiction: {label(h.concept)}: you said \"{h.quote}\", but it matters here. "
                  f"{why(h.concept)}".rstrip() for h in self.contradicted]
        lines += [f"! red flag: {label(h.concept)}: you said \"{h.quote}\". {why(h.concept)}".rstrip() for h in self.flags]
        lines += list(self.notes)
        if self.verdict == "unsure":
            lines.append("? The grader cannot tell whether this answer makes enough of the points above: mark "
                         "yourself against the rubric (your mark is kept apart from this score).")
        lines.append(f"score {self.score}/{self.max_score} ({_count(len(self.found), 'signal')} found, "
                     f"{_count(len(self.flags), 'red flag')}): {self.verdict}")
        return lines


def _split_sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


@lru_cache(maxsize=1)
def _classic() -> tuple[Concept, ...]:
    """The bank's classic misconceptions (``universal`` red flags), graded on every answer."""
    from coach.exercises.bank import load_bank  # noqa: PLC0415 - the bank imports this module

    try:
        return load_bank().classic
    except Exception:  # noqa: BLE001 - without a bank there are none
        return ()


def _needless(sent: _Sentence, m: Match) -> bool:
    """Whether a match is dismissed as a denied requirement ("no need for X", "X doesn't have to ...")."""
    first = min(m.words) if m.words else 0
    clause = sent.all_words[first].clause if m.words else 0
    near = [w for w in sent.all_words[:first] if w.clause == clause]  # "needless" governs its whole clause
    return any(w.stem == "needless" for w in near)


def _contraries(signals) -> tuple[Concept, ...]:
    """The contrary claims of the signals and of the concepts they are made of, once each."""
    out: dict[str, Concept] = {}

    def walk(c: Concept) -> None:
        for x in c.contrary:
            out.setdefault(x.id, x)
        for p in c.parts:
            walk(p)

    for c in signals:
        walk(c)
    return tuple(out.values())


def _ids(c: Concept) -> set[str]:
    return {c.id}.union(*(_ids(p) for p in c.parts))


def grade(answer: str, signals: tuple[Concept, ...] | list[Concept], red_flags: tuple[Concept, ...] | list[Concept],
          *, classic: bool = True, reference: str = "", given: str = "") -> Grade:
    """Grade ``answer``: which strong signals it asserts, which it contradicts, which red flags it states.

    With ``classic``, the bank's classic misconceptions (red flags marked ``universal``: "higher
    occupancy is always better", "just cast to FP8") are red flags of every rubric too. With a
    ``reference`` (the worked answer) and what the question ``given``s, a number the answer states
    that is off by a factor from the worked one of the same quantity is a red flag too
    (``coach.exercises.figures``)."""
    own = tuple(red_flags)
    named_own = {c.id for c in own}
    own += tuple(c for c in _contraries(signals) if c.id not in named_own)
    red_flags = own
    if classic:
        named = set().union(*(_ids(c) for c in own)) if own else set()
        red_flags = own + tuple(c for c in _classic() if c.id not in named)
    analysis = _analyse(answer, tuple(signals) + tuple(red_flags))
    found, missed, flags, contra, listed = [], [], [], [], []
    for c in signals:
        m = best(analysis, c)
        # a requirement denied by a term of its own ("the modes don't have to agree") is contradicted,
        # whatever else names the claim ("a mismatch just runs slower")
        d = next((x for x in _leaf_matches(analysis, c) if x.dismissed and not x.loose
                  and x.sentence not in analysis.listed and _needless(analysis.sentences[x.sentence], x)), None)
        if d is not None:
            missed.append(c)
            contra.append(Hit(c, d.quote, d.loose))
            continue
        if m is not None and not m.negated:
            found.append(Hit(c, m.quote, m.loose))
            continue
        missed.append(c)
        if m is not None and m.dismissed:
            contra.append(Hit(c, m.quote, m.loose))
        elif any(not x.negated for x in _leaf_matches(analysis, c)):
            q = next(x.quote for x in _leaf_matches(analysis, c) if not x.negated)
            listed.append(Hit(c, q))
    shown: list[Match] = []
    for k, c in enumerate(red_flags):
        m = best(analysis, c)
        if m is None or m.negated:
            continue
        # a classic misconception said in the words of one of the rubric's own red flags is that red flag
        if k >= len(own) and any(x.sentence == m.sentence and x.lo < m.hi and m.lo < x.hi for x in shown):
            continue
        shown.append(m)
        flags.append(Hit(c, m.quote, m.loose))
    flags += _wrong_numbers(answer, reference, given, analysis.listed)
    return Grade(tuple(found), tuple(missed), tuple(flags), contradicted=tuple(contra), listed=tuple(listed),
                 words=len(answer.split()))


def _wrong_numbers(answer: str, reference: str, given: str, listed: frozenset[int]) -> list[Hit]:
    """A red flag for each number of ``answer`` off by a factor from the worked answer's."""
    if not reference:
        return []
    from coach.exercises.figures import wrong_numbers  # noqa: PLC0415 - figures reads this module's sentences

    out = []
    for i, (stated, worked, clause) in enumerate(wrong_numbers(answer, reference, given=given, listed=listed)):
        c = Concept(f"wrong-number-{i + 1}", f"a number off by a factor ({worked.quote} in the worked answer)",
                    f'The worked answer has {worked.quote} for it: "{clause}".', (stated.quote,), loose_label=False)
        out.append(Hit(c, stated.quote))
    return out


def self_mark(concepts: tuple[Concept, ...] | list[Concept], ask, show=print) -> list[str] | None:
    """Where the grader cannot tell: the person marks which rubric points their answer made.

    Shows the points numbered, reads "1 3" (or nothing, to skip) through ``ask``, and returns the ids
    of the points marked, or None if skipped. The caller records them apart from the automatic score.
    """
    if not concepts:
        return None
    show("Mark yourself against the rubric: which of these did your answer make?")
    for i, c in enumerate(concepts, 1):
        show(f"  {i}) {c.label.rstrip('.')}")
    reply = ask("Numbers of the points you made (e.g. '1 3'), or empty to skip:", multiline=False)
    picked = sorted({int(n) for n in re.findall(r"\d+", reply) if 1 <= int(n) <= len(concepts)})
    return [concepts[i - 1].id for i in picked] if reply.strip() else None
