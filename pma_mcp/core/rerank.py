"""The second pass over recall's lexical pool (pure): a fixed linear combination of a few
features, the same for every backend because it runs above the store.

For the DEPTH best first-pass candidates:

    rank = ln(match · lift) + Σ_f WEIGHTS[f] · f

`match` is the first pass's semantic_similarity unsaturated back to its BM25 share of the ideal
score (relevance.match_share; near 1.0 similarities differ by too little to add to), `lift` the
first pass's importance/recency/access factor (scoring.relevance_rank ÷ similarity), so a zero
weight vector keeps the first-pass order. Features, each in [0, 1]:

- `prev`: the first-pass match of the turn stored just before this one (the previous seq) if
  it is of the same session and in the pool, over the pool's best (the pool's nearest earlier
  turn of the session instead measured 0.005 R@5 lower: a turn two or more back is no question
  this one answers). A question is answered by
  the turn after the one that asked it ("what got you into running?" → the reason).
- `time`: for a when-question ("when", "what year/month/date", "how long ago"), 1 if the
  turn holds a time expression (a weekday, a month, a season, yesterday, last/next, ago,
  a year).
- `both`: for a question naming two or more of the pool's speakers, 1 if the turn holds two
  of them (as its speaker or in its words).
- `cov`: the share of the query's terms in the turn's own text.

A list question ("what/which <plural>", "how many", "both", "some": its answer is several
turns, often of several sessions) gets no features but session diversification instead: the
pool is taken greedily, each pick's rank lowered by ln(1 − DIVERSIFY) for every turn of its
session already taken, so one session's neighbouring turns stop filling the top.

Weights were fitted on the LoCoMo dev split by coordinate ascent on R@5 and checked with
leave-one-conversation-out folds (docs/BENCHMARKS.md has the figures; benchmarks/rerank_lab.py
reproduces them). The rest of the pool keeps its first-pass order after the DEPTH.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pma_mcp.core.text import analysis, bm25, lexicon

DEPTH = 50
WEIGHTS: dict[str, float] = {"prev": 0.4, "time": 0.6, "both": 0.2, "cov": 0.2}

WHEN = re.compile(r"\b(?:when|what (?:year|month|day|date|time)|how long ago)\b", re.IGNORECASE)
TIME_WORDS = (
    "yesterday today tonight tomorrow ago last next recently weekend week month year monday "
    "tuesday wednesday thursday friday saturday sunday january february march april may june "
    "july august september october november december summer winter spring fall autumn"
).split()
DIVERSIFY = 0.2
LIST = re.compile(r"\b(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(\w+)", re.IGNORECASE)
ALWAYS_LIST = re.compile(r"\b(?:how many|both|some)\b", re.IGNORECASE)
NOT_PLURAL = frozenset("is was does has this his hers its yours".split())


@functools.cache
def _time_terms() -> frozenset[str]:
    return frozenset(term for _, term in analysis.stems(TIME_WORDS))


def _is_year(term: str) -> bool:
    return len(term) == 4 and term[:2] in ("19", "20") and term.isdigit()


@dataclass(frozen=True, slots=True)
class Entry:
    """One first-pass candidate as the second pass sees it."""

    seq: int
    match: float
    """BM25 share of the ideal score, times the first pass's lift (> 0)."""
    session: str | None
    speaker: str | None
    terms: frozenset[str]
    """Its own text's index terms."""


def entry(seq: int, match: float, session: str | None, speaker: str | None,
          vector: str) -> Entry:
    return Entry(seq, max(match, 1e-12), session, speaker, bm25.terms(vector))


@dataclass(frozen=True, slots=True)
class Question:
    terms: tuple[str, ...]
    """The query's index terms."""
    when: bool
    several: bool
    """A list question (see the module docstring)."""
    words: frozenset[str]
    """The query's lower-cased words."""


def question(query: str, terms: Sequence[str]) -> Question:
    return Question(tuple(terms), bool(WHEN.search(query)), _several(query),
                    frozenset(lexicon.words(query)))


def _several(query: str) -> bool:
    if ALWAYS_LIST.search(query):
        return True
    match = LIST.search(query)
    if match is None:
        return False
    word = match.group(1).lower()
    return word in ("are", "were", "have") or (word.endswith("s") and word not in NOT_PLURAL)


def order(entries: Sequence[Entry], q: Question) -> list[int]:
    """Indices of `entries` (first-pass order) in the second pass's order."""
    top = entries[:DEPTH]
    if len(top) < 2:
        return list(range(len(entries)))
    if q.several:
        return _diversified(top) + list(range(len(top), len(entries)))
    names = _names(top, q)
    best = max(e.match for e in top)
    by_seq = {e.seq: e for e in top}
    time_terms = _time_terms()
    scores = []
    for e in top:
        s = math.log(e.match) + WEIGHTS["cov"] * _coverage(e, q)
        before = by_seq.get(e.seq - 1)  # the memory stored just before, of the same session
        if before is not None and e.session is not None and before.session == e.session:
            s += WEIGHTS["prev"] * before.match / best
        if q.when and (not time_terms.isdisjoint(e.terms) or any(map(_is_year, e.terms))):
            s += WEIGHTS["time"]
        if len(names) >= 2:
            speaker = lexicon.words(e.speaker or "")
            held = sum(1 for n, stem in names.items() if stem in e.terms or n in speaker)
            s += WEIGHTS["both"] * (held >= 2)
        scores.append(s)
    ranked = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    return ranked + list(range(len(top), len(entries)))


def _diversified(top: Sequence[Entry]) -> list[int]:
    penalty = math.log(1.0 - DIVERSIFY)
    scores = [math.log(e.match) for e in top]
    taken: dict[str | None, int] = {}
    left = list(range(len(top)))
    out: list[int] = []
    while left:
        pick = max(left, key=lambda i: (scores[i] + penalty * taken.get(top[i].session, 0), -i))
        left.remove(pick)
        out.append(pick)
        session = top[pick].session
        if session is not None:
            taken[session] = taken.get(session, 0) + 1
    return out


def _coverage(e: Entry, q: Question) -> float:
    return len(e.terms.intersection(q.terms)) / len(q.terms) if q.terms else 0.0


def _names(top: Sequence[Entry], q: Question) -> dict[str, str]:
    """Speakers' name words the query holds → their index term."""
    words = {w for e in top if e.speaker for w in lexicon.words(e.speaker)} & q.words
    return dict(analysis.stems(sorted(words)))
