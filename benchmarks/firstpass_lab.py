"""Offline first-pass lab: recall's lexical first pass rebuilt in pure Python over the LoCoMo
turns (no store, no server), so changes to WHAT the first pass scores can be measured in
seconds, each followed by the shipped second pass (core/rerank.order) over its top DEPTH.

    uv run python -m benchmarks.firstpass_lab --data locomo_dev.json

The rebuild follows the store: every turn "<speaker>: <text>" stored in order (one namespace
per conversation, one session id per LoCoMo session); its content vector, its context vector
(the content of up to relevance.CONTEXT_RADIUS turns of its session on each side) and its
length (content + context); per namespace the own-text document counts and the total length;
store-wide the content document counts (the row budget, relevance.within_budget). Each
question is scored by core.text.bm25 with relevance's column weights and speaker boost, over
every turn of its conversation that matches a searched term (the product's FTS5 picks its
top relevance.CANDIDATES of those first; the top DEPTH re-scored match either way). Importance,
recency and access are left out: equal importance, no access (`touch=False`), and recency
differs by minutes between turns, so ties fall to the newer turn as in the product.

Candidates change the first-pass score (session-level BM25 fused in, a session field,
store-derived query expansion, ...); each is scored with the weight chosen leave-one-
conversation-out (chosen on four conversations, scored on the fifth) beside its best weight
on all five (`--joint`: the priors and the second pass's weights fitted together, held out
the same way). The hyponym candidates read WordNet from Debian's `wordnet-base`
(/usr/share/wordnet; skipped without it): a lab measurement, not a dependency. Figures:
docs/BENCHMARKS.md, "Third round". LoCoMo is CC BY-NC 4.0: keep the data and anything
derived from it out of the repository.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locomo import CATEGORIES, KS, load
from pma_mcp.core import rerank
from pma_mcp.core.text import analysis, bm25, lexicon, relevance

DEPTH = rerank.DEPTH


# ------------------------------------------------------------------ the store, rebuilt


@dataclass
class Turn:
    seq: int
    dia_id: str
    session: str
    speaker: str | None
    content: Counter[str]
    context: Counter[str]
    vector: str
    length: int
    asks: bool = False
    """The turn holds a question mark (a dialogue-act cue for `prior`)."""
    proper: bool = False
    """The turn names something: a capitalised word inside a sentence that is not a
    speaker's name nor "I" (`proper_prior`)."""


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conv:
    name: str
    turns: list[Turn]
    questions: list[Question]
    df: dict[str, int]
    total_length: int
    sessions: dict[str, list[int]]
    docs: list[bm25.Document] = field(default_factory=list)
    postings: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Store:
    convs: list[Conv]
    total_docs: int
    term_df: dict[str, int]


INNER_CAPITAL = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+)")


def names_something(text: str, speakers: set[str]) -> bool:
    return any(m.lower() not in speakers and m not in ("I", "Im")
               for m in INNER_CAPITAL.findall(text.strip()))


def build(data: Path) -> Store:
    loaded = load(data)
    convs: list[Conv] = []
    term_df: Counter[str] = Counter()
    seq = 0
    for conv in loaded:
        texts = [t.content for t in conv.turns]
        seqs = analysis.term_sequences(texts)
        contents = [Counter(s) for s in seqs]
        sessions: dict[str, list[int]] = {}
        for i, t in enumerate(conv.turns):
            sessions.setdefault(conv.session_id(t), []).append(i)
        speakers = {w for t in conv.turns for w in lexicon.words(t.speaker)}
        turns: list[Turn] = []
        for i, t in enumerate(conv.turns):
            sid = conv.session_id(t)
            members = sessions[sid]
            at = members.index(i)
            around = members[max(0, at - relevance.CONTEXT_RADIUS):at] + \
                members[at + 1:at + 1 + relevance.CONTEXT_RADIUS]
            ctx: Counter[str] = Counter()
            for j in around:
                ctx.update(contents[j])
            seq += 1
            turns.append(Turn(seq, t.dia_id, sid, lexicon.speaker_of(t.content), contents[i],
                              ctx, bm25.encode(contents[i]),
                              sum(contents[i].values()) + sum(ctx.values()), "?" in t.text,
                              names_something(t.text, speakers)))
        df: Counter[str] = Counter()
        for counts in contents:
            df.update(counts.keys())
        term_df.update(df)
        questions = [Question(q.text, q.category, q.evidence) for q in conv.questions]
        built = Conv(conv.sample_id, turns, questions, dict(df), sum(t.length for t in turns),
                     sessions)
        built.docs = [bm25.Document(t.vector, "", bm25.encode(t.context), t.length)
                      for t in turns]
        for i, turn in enumerate(turns):
            for term in set(turn.content) | set(turn.context):
                built.postings.setdefault(term, []).append(i)
        convs.append(built)
    return Store(convs, seq, dict(term_df))


# ------------------------------------------------------------------ the first pass


@dataclass
class Asked:
    """One question as the first pass sees it: its analysed terms and per-turn raw scores."""

    conv: Conv
    q: Question
    analysed: relevance.AnalysedQuery
    x: list[float]
    """Per turn: BM25 (speaker-boosted) over the ideal score, 0 for no match."""


def ask(store: Store, conv: Conv, q: Question) -> Asked:
    terms = relevance.query_terms(q.text)
    index = relevance.term_stats(store.total_docs, {t: store.term_df.get(t, 0) for t in terms})
    scope = relevance.ScopeStats(len(conv.turns), conv.total_length,
                                 {t: conv.df.get(t, 0) for t in terms})
    a = relevance.analysed(q.text, terms, index, scope)
    x = [0.0] * len(conv.turns)
    if a.searched:
        own = set(a.own_text_only)
        hit: set[int] = set()
        for t in a.searched:
            for i in conv.postings.get(t, ()):
                if t not in own or conv.turns[i].content.get(t):
                    hit.add(i)
        idx = sorted(hit)
        qq = a.bm25_query
        raws = bm25.score_many((conv.docs[i] for i in idx), qq.keys, qq.avg_length,
                               relevance.COLUMN_WEIGHTS)
        for i, r in zip(idx, raws, strict=True):
            boost = relevance.SPEAKER_BOOST if lexicon.names_speaker(
                a.tokens, conv.turns[i].speaker) else 1.0
            x[i] = r * boost / a.ideal if a.ideal > 0 else 0.0
    return Asked(conv, q, a, x)


def ranked(conv: Conv, score: Sequence[float]) -> list[int]:
    """Turns with a positive score, best first; ties to the newer turn."""
    return sorted((i for i, s in enumerate(score) if s > 0),
                  key=lambda i: (-score[i], -conv.turns[i].seq))


def second_pass(asked: Asked, order: list[int], score: Sequence[float]) -> list[int]:
    conv = asked.conv
    entries = [rerank.entry(conv.turns[i].seq, score[i], conv.turns[i].session,
                            conv.turns[i].speaker, conv.turns[i].vector) for i in order[:DEPTH]]
    q = rerank.question(asked.q.text, list(asked.analysed.words))
    top = [order[j] for j in rerank.order(entries, q)]
    return top + order[DEPTH:]


# ------------------------------------------------------------------ evaluation


Scorer = Callable[[Asked], list[float]]
"""A question → per-turn first-pass score (the second pass then runs on its top DEPTH)."""


def recall_at(asked: Asked, order: Sequence[int]) -> tuple[float, ...]:
    ids = [asked.conv.turns[i].dia_id for i in order]
    ev = asked.q.evidence
    return tuple(len(ev & set(ids[:k])) / len(ev) for k in KS)


Result = dict[int | None, tuple[float, ...]]


def mean_by_category(rows: Sequence[tuple[Asked, tuple[float, ...]]]) -> Result:
    per: dict[int | None, list[tuple[float, ...]]] = {}
    for a, r in rows:
        per.setdefault(None, []).append(r)
        per.setdefault(a.q.category, []).append(r)
    return {c: tuple(statistics.fmean(col) for col in zip(*rs, strict=True))
            for c, rs in per.items()}


def run(items: Sequence[Asked], scorer: Scorer, second: bool = True,
        ) -> list[tuple[Asked, tuple[float, ...]]]:
    out = []
    for a in items:
        s = scorer(a)
        order = ranked(a.conv, s)
        if second:
            order = second_pass(a, order, s)
        out.append((a, recall_at(a, order)))
    return out


def r5(items: Sequence[Asked], scorer: Scorer) -> float:
    return statistics.fmean(r[1] for _, r in run(items, scorer))


def r5_first(items: Sequence[Asked], scorer: Scorer) -> float:
    return statistics.fmean(r[1] for _, r in run(items, scorer, second=False))


def fmt(res: Result) -> str:
    parts = [" ".join(f"{v:.3f}" for v in res[None])]
    parts += [" ".join(f"{v:.3f}" for v in res.get(c, ())) for c in CATEGORIES]
    return " | ".join(parts)


HEADER = "overall R@1 R@5 R@10 | " + " | ".join(f"{c} {n}" for c, n in CATEGORIES.items())


def held_out(items: Sequence[Asked], family: Callable[[Any], Scorer],
             grid: Sequence[Any]) -> tuple[Result, Result, Any, list[Any], str]:
    """(best weight's figures on all five, leave-one-conversation-out figures, the best
    weight, the weight each fold chose, R@5 at every weight). Per fold the grid point with
    the best R@5 on the other four conversations is scored on the fifth."""
    by_weight = {w: run(items, family(w)) for w in grid}
    def mean5(rows: Sequence[tuple[Asked, tuple[float, ...]]]) -> float:
        return statistics.fmean(r[1] for _, r in rows) if rows else 0.0
    best = max(grid, key=lambda w: (mean5(by_weight[w]), -grid.index(w)))
    convs = sorted({a.conv.name for a in items})
    chosen = []
    held: list[tuple[Asked, tuple[float, ...]]] = []
    for name in convs:
        w = max(grid, key=lambda w: (mean5([r for r in by_weight[w] if r[0].conv.name != name]),
                                     -grid.index(w)))
        chosen.append(w)
        held += [r for r in by_weight[w] if r[0].conv.name == name]
    curve = " ".join(f"{w}:{mean5(by_weight[w]):.3f}" for w in grid)
    return mean_by_category(by_weight[best]), mean_by_category(held), best, chosen, curve


# ------------------------------------------------------------------ candidates


def baseline(a: Asked) -> list[float]:
    return a.x


@dataclass
class SessionIndex:
    """Each session as one document: its turns' content summed (for session-level BM25)."""

    vectors: dict[str, Counter[str]]
    df: dict[str, int]
    avg: float


_sessions: dict[str, SessionIndex] = {}


def session_index(conv: Conv) -> SessionIndex:
    if conv.name not in _sessions:
        vectors: dict[str, Counter[str]] = {}
        for sid, members in conv.sessions.items():
            total: Counter[str] = Counter()
            for i in members:
                total.update(conv.turns[i].content)
            vectors[sid] = total
        df: Counter[str] = Counter()
        for v in vectors.values():
            df.update(v.keys())
        avg = statistics.fmean(sum(v.values()) for v in vectors.values())
        _sessions[conv.name] = SessionIndex(vectors, dict(df), avg)
    return _sessions[conv.name]


def session_scores(a: Asked) -> dict[str, float]:
    """BM25 of each session (its whole text) for the query, over the best session's score."""
    cache = a.__dict__.setdefault("_sess", {})
    if "v" in cache:
        return dict(cache["v"])
    si = session_index(a.conv)
    n = len(si.vectors)
    out: dict[str, float] = {}
    for sid, v in si.vectors.items():
        length = sum(v.values())
        norm = bm25.K1 * (1 - bm25.B + bm25.B * length / si.avg)
        s = 0.0
        for t in a.analysed.words:
            tf = v.get(t, 0)
            if tf:
                s += bm25.idf(n, si.df.get(t, 0)) * tf * (bm25.K1 + 1) / (tf + norm)
        out[sid] = s
    top = max(out.values(), default=0.0)
    v2 = {k: (s / top if top > 0 else 0.0) for k, s in out.items()}
    cache["v"] = v2
    return dict(v2)


def session_multiplicative(w: float) -> Scorer:
    """(a) x · (1 + w · session score): reorders matched turns toward the best sessions."""
    def f(a: Asked) -> list[float]:
        ss = session_scores(a)
        return [x * (1 + w * ss[t.session]) for x, t in zip(a.x, a.conv.turns, strict=True)]
    return f


def session_additive(w: float, top_sessions: int = 3) -> Scorer:
    """(a) x + w · session score · turn prior, for the turns of the best `top_sessions`
    sessions: unmatched turns of a well-matched session enter the pool. The prior is the
    turn's share of its session's best x (0 → a floor of 0.1), so the session's own best
    turns lead."""
    def f(a: Asked) -> list[float]:
        ss = session_scores(a)
        best = sorted(ss, key=lambda s: -ss[s])[:top_sessions]
        out = list(a.x)
        for sid in best:
            members = a.conv.sessions[sid]
            peak = max(a.x[i] for i in members) or 1.0
            for i in members:
                out[i] += w * ss[sid] * max(a.x[i] / peak, 0.1) * peak
        return out
    return f


def rrf(w: float, k: float = 60.0) -> Scorer:
    """(a) reciprocal-rank fusion of the turn order and the session order (each turn ranked
    by its session's score, ties by the turn's own x), weight w on the session list."""
    def f(a: Asked) -> list[float]:
        ss = session_scores(a)
        n = len(a.x)
        turn_order = ranked(a.conv, a.x)
        turn_rank = {i: r for r, i in enumerate(turn_order)}
        sess_order = sorted(range(n), key=lambda i: (-ss[a.conv.turns[i].session], -a.x[i]))
        sess_rank = {i: r for r, i in enumerate(sess_order)}
        out = []
        for i in range(n):
            s = (1 / (k + turn_rank[i]) if i in turn_rank else 0.0)
            if ss[a.conv.turns[i].session] > 0:
                s += w / (k + sess_rank[i])
            out.append(s)
        return out
    return f


def dense_bm25(a: Asked, frequency: Callable[[int, Turn, str, bool], float]) -> list[float]:
    """The first pass over every turn with another per-term frequency (`frequency(index, turn,
    term, searched beyond own text)`), the saturation, speaker boost and ideal unchanged."""
    q = a.analysed.bm25_query
    own = set(a.analysed.own_text_only)
    out = []
    for i, t in enumerate(a.conv.turns):
        norm = bm25.K1 * (1 - bm25.B + bm25.B * t.length / q.avg_length)
        s = 0.0
        for term, idf in q.idf.items():
            fr = frequency(i, t, term, term not in own)
            if fr > 0:
                s += idf * fr * (bm25.K1 + 1) / (fr + norm)
        if lexicon.names_speaker(a.analysed.tokens, t.speaker):
            s *= relevance.SPEAKER_BOOST
        out.append(s / q.ideal if q.ideal > 0 else 0.0)
    return out


def session_field(w: float) -> Scorer:
    """(b) a third indexed field: the turn's session text (its turns' content summed) at
    column weight w beside content 1.0 and context 0.5, BM25-saturated per term, the
    document length unchanged (the field's own length normalised by the average session)."""
    def f(a: Asked) -> list[float]:
        si = session_index(a.conv)

        def frequency(_: int, t: Turn, term: str, wide: bool) -> float:
            fr = float(t.content.get(term, 0))
            if wide:
                sv = si.vectors[t.session]
                fr += 0.5 * t.context.get(term, 0) + w * sv.get(term, 0) * si.avg / sum(
                    sv.values())
            return fr
        return dense_bm25(a, frequency)
    return f


# (c) query expansion from store-derived term association


@dataclass
class Association:
    """Per conversation: for each term, the units (sessions or turn windows) holding it."""

    units: dict[str, set[int]]
    n: int


_assoc: dict[tuple[str, str], Association] = {}


def association(conv: Conv, unit: str) -> Association:
    key = (conv.name, unit)
    if key not in _assoc:
        units: dict[str, set[int]] = {}
        if unit == "session":
            groups = list(conv.sessions.values())
        else:  # a turn and its context window
            groups = [[i] for i in range(len(conv.turns))]
        for u, members in enumerate(groups):
            for i in members:
                t = conv.turns[i]
                terms = set(t.content) | (set(t.context) if unit == "window" else set())
                for term in terms:
                    units.setdefault(term, set()).add(u)
        _assoc[key] = Association(units, len(groups))
    return _assoc[key]


def expansion_terms(a: Asked, unit: str, k: int, min_units: int = 2) -> dict[str, float]:
    """The k terms most associated with the query's terms: Σ_q idf(q)·P(t|q)·log(P(t|q)/P(t))
    (a PMI weighted by how often t follows q), stopwords, names and query terms excluded,
    normalised to the best = 1."""
    cache = a.__dict__.setdefault("_exp", {})
    key = (unit, k)
    if key in cache:
        return dict(cache[key])
    assoc = association(a.conv, unit)
    qterms = set(a.analysed.words)
    speakers = {s for _, s in analysis.stems(sorted(
        {w for t in a.conv.turns if t.speaker for w in lexicon.words(t.speaker)}))}
    score: dict[str, float] = {}
    idf = a.analysed.bm25_query.idf
    for q in sorted(qterms):
        uq = assoc.units.get(q)
        if not uq:
            continue
        wq = idf.get(q, 1.0)
        for t, ut in assoc.units.items():
            if t in qterms or t in speakers or len(ut) < min_units or t.isdigit():
                continue
            if t in STOP_TERMS:
                continue
            both = len(uq & ut)
            if both < 2:
                continue
            p_tq = both / len(uq)
            p_t = len(ut) / assoc.n
            pmi = math.log(p_tq / p_t)
            if pmi > 0:
                score[t] = score.get(t, 0.0) + wq * p_tq * pmi
    top = dict(sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
    best = max(top.values(), default=1.0)
    v = {t: s / best for t, s in top.items()}
    cache[key] = v
    return dict(v)


STOP_TERMS = frozenset(t for _, t in analysis.stems(sorted(lexicon.STOPWORDS)))


def expanded(w: float, unit: str = "session", k: int = 10) -> Scorer:
    """(c) x + w · BM25 of the turn for the expansion terms (each at its association weight
    × its idf), over the same ideal: a second cheap lookup at low weight."""
    def f(a: Asked) -> list[float]:
        exp = expansion_terms(a, unit, k)
        if not exp:
            return a.x
        conv = a.conv
        q = a.analysed.bm25_query
        df = conv.df
        n = len(conv.turns)
        keys = tuple((f" {t}:", bm25.idf(n, df.get(t, 0)) * s, True) for t, s in exp.items())
        raws = bm25.score_many(conv.docs, keys, q.avg_length, relevance.COLUMN_WEIGHTS)
        ideal = q.ideal or 1.0
        return [x + w * r / ideal if x > 0 or r > 0 else 0.0
                for x, r in zip(a.x, raws, strict=True)]
    return f


def expanded_session(w: float, k: int = 10) -> Scorer:
    """(c) like `expanded`, but the expansion terms come from the query's best sessions
    only (a store-level relevance model: the top-3 sessions by session BM25)."""
    def f(a: Asked) -> list[float]:
        ss = session_scores(a)
        best = sorted(ss, key=lambda s: -ss[s])[:3]
        si = session_index(a.conv)
        qterms = set(a.analysed.words)
        n = len(si.vectors)
        weight: dict[str, float] = {}
        for sid in best:
            v = si.vectors[sid]
            total = sum(v.values()) or 1
            for t, tf in v.items():
                if t in qterms or t in STOP_TERMS or t.isdigit():
                    continue
                weight[t] = weight.get(t, 0.0) + ss[sid] * tf / total * bm25.idf(
                    n, si.df.get(t, 0))
        top = dict(sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        if not top:
            return a.x
        peak = max(top.values())
        conv = a.conv
        q = a.analysed.bm25_query
        keys = tuple((f" {t}:", bm25.idf(len(conv.turns), conv.df.get(t, 0)) * s / peak, True)
                     for t, s in top.items())
        raws = bm25.score_many(conv.docs, keys, q.avg_length, relevance.COLUMN_WEIGHTS)
        ideal = q.ideal or 1.0
        return [x + w * r / ideal for x, r in zip(a.x, raws, strict=True)]
    return f


def offsets(conv: Conv, radius: int) -> list[dict[int, int]]:
    """Per turn: offset (−radius … +radius, not 0) → the turn at that place in its session."""
    out: list[dict[int, int]] = [{} for _ in conv.turns]
    for members in conv.sessions.values():
        for at, i in enumerate(members):
            for off in range(-radius, radius + 1):
                if off and 0 <= at + off < len(members):
                    out[i][off] = members[at + off]
    return out


_offsets: dict[str, list[dict[int, int]]] = {}


def context_by_offset(weights: Mapping[int, float]) -> Scorer:
    """(d) the context column with a weight per neighbour offset (the product: 0.5 at −2 … +2)
    — the turn after a question is its answer, so the earlier side may count more. The
    document length stays the product's (content + ±2 context)."""
    def f(a: Asked) -> list[float]:
        conv = a.conv
        if conv.name not in _offsets:
            _offsets[conv.name] = offsets(conv, 3)
        near = _offsets[conv.name]

        def frequency(i: int, t: Turn, term: str, wide: bool) -> float:
            fr = float(t.content.get(term, 0))
            if wide:
                fr += sum(weights.get(off, 0.0) * conv.turns[j].content.get(term, 0)
                          for off, j in near[i].items())
            return fr
        return dense_bm25(a, frequency)
    return f


def sided(earlier: float, later: float, far: float = 1.0, radius: int = 2) -> Scorer:
    """context_by_offset with `earlier` on the preceding turns, `later` on the following ones,
    the outer ring(s) × `far`."""
    w: dict[int, float] = {}
    for off in range(1, radius + 1):
        ring = far ** (off - 1)
        w[-off], w[off] = earlier * ring, later * ring
    return context_by_offset(w)


# (d) hyponym expansion from WordNet (Debian's wordnet-base: /usr/share/wordnet)

WORDNET = Path("/usr/share/wordnet")


@dataclass
class WordNet:
    """Nouns only: lemma → synset offsets (most frequent sense first); synset → its
    single-word lemmas and its hyponyms (incl. instances)."""

    senses: dict[str, list[str]]
    lemmas: dict[str, list[str]]
    hyponyms: dict[str, list[str]]


_wordnet: list[WordNet] = []


def wordnet() -> WordNet:
    if not _wordnet:
        senses: dict[str, list[str]] = {}
        for line in (WORDNET / "index.noun").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            parts = line.split()
            n_synsets, n_ptr = int(parts[2]), int(parts[3])
            senses[parts[0]] = parts[4 + n_ptr + 2:4 + n_ptr + 2 + n_synsets]
        lemmas: dict[str, list[str]] = {}
        hyponyms: dict[str, list[str]] = {}
        for line in (WORDNET / "data.noun").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            parts = line.split(" | ")[0].split()
            off, n_words = parts[0], int(parts[3], 16)
            words = parts[4:4 + 2 * n_words:2]
            lemmas[off] = [w.lower() for w in words if "_" not in w and "-" not in w]
            at = 4 + 2 * n_words
            n_ptr = int(parts[at])
            hyp = []
            for k in range(n_ptr):
                sym, target, pos = parts[at + 1 + 4 * k:at + 4 + 4 * k]
                if sym in ("~", "~i") and pos == "n":
                    hyp.append(target)
            hyponyms[off] = hyp
        _wordnet.append(WordNet(senses, lemmas, hyponyms))
    return _wordnet[0]


def noun_lemma(word: str, wn: WordNet) -> str | None:
    for cand in (word, word[:-3] + "y" if word.endswith("ies") else "",
                 word[:-2] if word.endswith("es") else "", word[:-1] if word.endswith("s") else ""):
        if cand and cand in wn.senses:
            return cand
    return None


_hypo: dict[tuple[str, int, int], frozenset[str]] = {}


def hyponym_terms(word: str, senses: int, depth: int) -> frozenset[str]:
    """Index terms of the single-word hyponyms (to `depth` levels) of `word`'s first
    `senses` noun senses."""
    key = (word, senses, depth)
    if key not in _hypo:
        wn = wordnet()
        lemma = noun_lemma(word, wn)
        found: set[str] = set()
        if lemma:
            frontier = list(wn.senses[lemma][:senses])
            for _ in range(depth):
                nxt = []
                for off in frontier:
                    for h in wn.hyponyms.get(off, ()):
                        found.update(wn.lemmas.get(h, ()))
                        nxt.append(h)
                frontier = nxt
        words = sorted(w for w in found if w != word and w not in lexicon.STOPWORDS)
        stems = {t for _, t in analysis.stems(words)} if words else set()
        _hypo[key] = frozenset(t for t in stems if len(t) > 2 and t not in STOP_TERMS)
    return _hypo[key]


def hyponyms(w: float, senses: int = 1, depth: int = 3, cap: int = 400) -> Scorer:
    """(d) x + w · BM25 of the turn for the query nouns' hyponyms (each at its own idf, a
    query word's hyponyms counted once per turn: the best one), over the same ideal:
    "which cities" reaches "Paris", "what sports" reaches "basketball"."""
    def f(a: Asked) -> list[float]:
        conv = a.conv
        q = a.analysed.bm25_query
        names = {w for t in conv.turns[:50] if t.speaker for w in lexicon.words(t.speaker)}
        n = len(conv.turns)
        norm_len = q.avg_length
        out = list(a.x)
        qterms = set(a.analysed.words)
        for word in a.analysed.words.values():
            if word in names:
                continue
            terms = hyponym_terms(word, senses, depth)
            if not terms or len(terms) > cap:
                continue
            best: dict[int, float] = {}
            for t in sorted(terms - qterms):
                posting = conv.postings.get(t)
                if not posting:
                    continue
                idf = bm25.idf(n, conv.df.get(t, 0))
                for i in posting:
                    turn = conv.turns[i]
                    fr = turn.content.get(t, 0) + 0.5 * turn.context.get(t, 0)
                    norm = bm25.K1 * (1 - bm25.B + bm25.B * turn.length / norm_len)
                    v = idf * fr * (bm25.K1 + 1) / (fr + norm)
                    if v > best.get(i, 0.0):
                        best[i] = v
            for i, v in best.items():
                out[i] += w * v / (q.ideal or 1.0)
        return out
    return f


def burstiness(conv: Conv, term: str) -> float:
    """ln(turns holding `term` / sessions holding it), ≥ 0: a topic's words bunch in the
    sessions about it, a generic word ("activities", "things") is spread thin."""
    si = session_index(conv)
    sessions = si.df.get(term, 0)
    return math.log(conv.df.get(term, 0) / sessions) if sessions else 0.0


def general(k1: float = bm25.K1, b: float = bm25.B, w_context: float = 0.5,
            w_name: float = 1.0, w_burst: float = 0.0) -> Scorer:
    """(d) the first pass with other BM25 constants (K1, B: FTS5's defaults in the product),
    another context weight, the query's speaker-name terms at `w_name` × their idf, or each
    query term's idf × (1 + w_burst · burstiness)."""
    def f(a: Asked) -> list[float]:
        conv = a.conv
        q = a.analysed.bm25_query
        own = set(a.analysed.own_text_only)
        names = {t for _, t in analysis.stems(sorted(
            {w for t in conv.turns[:50] if t.speaker for w in lexicon.words(t.speaker)}))}
        total = [0.0] * len(conv.turns)
        ideal = 0.0
        for term, idf in q.idf.items():
            weight = idf * (w_name if term in names else 1.0)
            weight *= 1.0 + w_burst * burstiness(conv, term)
            for i in conv.postings.get(term, ()):
                t = conv.turns[i]
                fr = float(t.content.get(term, 0))
                if term not in own:
                    fr += w_context * t.context.get(term, 0)
                if fr > 0:
                    norm = k1 * (1 - b + b * t.length / q.avg_length)
                    total[i] += weight * fr * (k1 + 1) / (fr + norm)
        for term in a.analysed.words:
            idf = bm25.idf(len(conv.turns), conv.df.get(term, 0))
            ideal += idf * (w_name if term in names else 1.0) * (
                1.0 + w_burst * burstiness(conv, term))
        out = []
        for i, t in enumerate(conv.turns):
            s = total[i]
            if lexicon.names_speaker(a.analysed.tokens, t.speaker):
                s *= relevance.SPEAKER_BOOST
            out.append(s / ideal if ideal > 0 else 0.0)
        return out
    return f


FIRST_PERSON = frozenset({"i", "my", "me", "myself", "we", "our"})


def prior(w_self: float, w_asks: float, w_long: float = 0.0) -> Scorer:
    """(d) a dialogue-act prior on the first-pass score: evidence turns are statements about
    oneself (first person: 79% of evidence turns, 53% of all) more than questions (19% of
    evidence, 30% of all), and long (more than 25 words: 58% of evidence, 35% of all):
    x · exp(w_self · first person − w_asks · question + w_long · ln(own length / 20))."""
    def f(a: Asked) -> list[float]:
        out = []
        for x, t in zip(a.x, a.conv.turns, strict=True):
            if x <= 0:
                out.append(0.0)
                continue
            own = sum(t.content.values())
            out.append(x * math.exp(w_self * (not FIRST_PERSON.isdisjoint(t.content))
                                    - w_asks * t.asks
                                    + w_long * math.log(max(own, 1) / 20)))
        return out
    return f


_informative: dict[str, list[float]] = {}


def informativeness(conv: Conv, rare: int) -> list[float]:
    """Per turn: ln(1 + its distinct non-stopword terms held by at most `rare` turns of the
    conversation) — news brings new words, a reaction ("Wow, that's great!") common ones."""
    key = f"{conv.name}/{rare}"
    if key not in _informative:
        _informative[key] = [math.log1p(sum(1 for term in t.content
                                            if term not in STOP_TERMS
                                            and conv.df.get(term, 0) <= rare))
                             for t in conv.turns]
    return _informative[key]


def informative(w: float, rare: int = 3) -> Scorer:
    """(d) x · exp(w · informativeness): a news prior from the store's own counts."""
    def f(a: Asked) -> list[float]:
        info = informativeness(a.conv, rare)
        return [x * math.exp(w * v) if x > 0 else 0.0 for x, v in zip(a.x, info, strict=True)]
    return f


def proper_prior(w: float, only_lists: bool) -> Scorer:
    """(d) x · e^(w · the turn names something), for every question or only those asking
    for several things (rerank's list questions): "which cities" → Paris, Rome."""
    def f(a: Asked) -> list[float]:
        if only_lists and not rerank.question(a.q.text, []).several:
            return a.x
        return [x * math.exp(w * t.proper) if x > 0 else 0.0
                for x, t in zip(a.x, a.conv.turns, strict=True)]
    return f


_first: dict[tuple[str, bool], dict[str, list[int]]] = {}


def first_mentions(conv: Conv, per_session: bool) -> dict[str, list[int]]:
    """term → the turns that hold it first: in each session, or in the conversation."""
    key = (conv.name, per_session)
    if key not in _first:
        seen: set[tuple[str, str]] = set()
        out: dict[str, list[int]] = {}
        for i, t in enumerate(conv.turns):
            for term in t.content:
                place = (t.session if per_session else "", term)
                if place not in seen:
                    seen.add(place)
                    out.setdefault(term, []).append(i)
        _first[key] = out
    return _first[key]


def first_mention(w: float, per_session: bool = True) -> Scorer:
    """(d) news is where a word first comes up: x · e^(w · the query's non-name terms this
    turn is the first to hold, in its session or in the whole conversation)."""
    def f(a: Asked) -> list[float]:
        firsts = first_mentions(a.conv, per_session)
        names = {t for _, t in analysis.stems(sorted(
            {w for t in a.conv.turns[:50] if t.speaker for w in lexicon.words(t.speaker)}))}
        count = [0] * len(a.x)
        for term in a.analysed.words:
            if term not in names:
                for i in firsts.get(term, ()):
                    count[i] += 1
        return [x * math.exp(w * c) if x > 0 else 0.0 for x, c in zip(a.x, count, strict=True)]
    return f


def session_news(w: float, top_sessions: int = 1, rare: int = 10) -> Scorer:
    """(a)+(d) the best sessions' news: every turn of the `top_sessions` best sessions (by
    session-level BM25) gains w · session score · its informativeness over the session's most
    informative turn, × the pool's best x — an unmatched turn that brings new words to a
    well-matched session enters the pool."""
    def f(a: Asked) -> list[float]:
        ss = session_scores(a)
        info = informativeness(a.conv, rare)
        best = sorted(ss, key=lambda s: -ss[s])[:top_sessions]
        peak = max(a.x, default=0.0)
        out = list(a.x)
        for sid in best:
            members = a.conv.sessions[sid]
            most = max(info[i] for i in members) or 1.0
            for i in members:
                out[i] += w * ss[sid] * info[i] / most * peak
        return out
    return f


def pool_recall(items: Sequence[Asked], scorer: Scorer, depth: int = DEPTH) -> float:
    """First-pass recall at `depth`: what the second pass can reach."""
    hits = []
    for a in items:
        order = ranked(a.conv, scorer(a))[:depth]
        ids = {a.conv.turns[i].dia_id for i in order}
        hits.append(len(a.q.evidence & ids) / len(a.q.evidence))
    return statistics.fmean(hits)


# ------------------------------------------------------------------ joint fit

JOINT: dict[str, tuple[float, ...]] = {
    "info": (0.0, 0.05, 0.1, 0.15, 0.2),
    "asks": (0.0, 0.05, 0.1, 0.15, 0.2),
    "self": (0.0, 0.05, 0.1, 0.15),
    "prev": (0.0, 0.2, 0.4, 0.6),
    "time": (0.4, 0.6, 0.8),
    "cov": (0.0, 0.1, 0.2, 0.3),
    "both": (0.0, 0.2, 0.4),
}
SHIPPED: dict[str, float] = {"info": 0.0, "asks": 0.0, "self": 0.0, **rerank.WEIGHTS}


def priors(info: float, w_self: float, w_asks: float, rare: int = 3) -> Scorer:
    """`informative` and `prior` together."""
    first, second = informative(info, rare), prior(w_self, w_asks)

    def f(a: Asked) -> list[float]:
        base = second(a)
        return [x * y / z if z > 0 else 0.0 for x, y, z in zip(base, first(a), a.x, strict=True)]
    return f


def joint_fit(items: Sequence[Asked]) -> None:
    """The priors' weights and the second pass's refitted together (coordinate ascent on
    R@5, two rounds from the shipped weights), on all five conversations and per fold; each
    configuration is run once over every question and the folds read its rows."""
    memo: dict[tuple[tuple[str, float], ...], list[tuple[Asked, tuple[float, ...]]]] = {}
    shipped = dict(rerank.WEIGHTS)

    def rows(cfg: dict[str, float]) -> list[tuple[Asked, tuple[float, ...]]]:
        key = tuple(sorted(cfg.items()))
        if key not in memo:
            rerank.WEIGHTS.update({k: v for k, v in cfg.items() if k in shipped})
            try:
                memo[key] = run(items, priors(cfg["info"], cfg["self"], cfg["asks"]))
            finally:
                rerank.WEIGHTS.update(shipped)
        return memo[key]

    def score(cfg: dict[str, float], skip: str | None) -> float:
        got = [r[1] for a, r in rows(cfg) if a.conv.name != skip]
        return statistics.fmean(got)

    def ascend(skip: str | None) -> dict[str, float]:
        cfg = dict(SHIPPED)
        best = score(cfg, skip)
        for _ in range(2):
            for name, steps in JOINT.items():
                for v in steps:
                    trial = {**cfg, name: v}
                    got = score(trial, skip)
                    if got > best + 1e-9:
                        best, cfg = got, trial
        return cfg

    full = ascend(None)
    print(f"{'joint fit on all five':<36} {fmt(mean_by_category(rows(full)))}  {full}")
    held: list[tuple[Asked, tuple[float, ...]]] = []
    for name in sorted({a.conv.name for a in items}):
        cfg = ascend(name)
        print(f"  fold {name}: {cfg}", flush=True)
        held += [r for r in rows(cfg) if r[0].conv.name == name]
    print(f"{'  held out':<36} {fmt(mean_by_category(held))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON (dev split)")
    parser.add_argument("--only", help="comma-separated candidate names to run")
    parser.add_argument("--joint", action="store_true",
                        help="also fit the dialogue-act prior and the second pass together")
    args = parser.parse_args()
    store = build(args.data)
    items = [ask(store, c, q) for c in store.convs for q in c.questions]
    print(f"{len(items)} questions, {store.total_docs} turns")
    print(HEADER)
    print(f"{'first pass':<36} {fmt(mean_by_category(run(items, baseline, second=False)))}")
    base = mean_by_category(run(items, baseline))
    print(f"{'+ second pass (shipped)':<36} {fmt(base)}")
    grid = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8)
    small = (0.0, 0.01, 0.02, 0.03, 0.05)
    candidates: dict[str, tuple[Callable[[Any], Scorer], Sequence[Any]]] = {
        "a-session-mult": (session_multiplicative, (0.0, 0.1, 0.2, 0.4, 0.8, 1.5)),
        "a-session-add-top3": (lambda w: session_additive(w, 3), grid),
        "a-session-add-top1": (lambda w: session_additive(w, 1), grid),
        "a-rrf": (rrf, (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)),
        "b-session-field": (session_field, (0.0, 0.02, 0.05, 0.1, 0.2, 0.3)),
        "c-expand-session-pmi": (lambda w: expanded(w, "session"), grid),
        "c-expand-window-pmi": (lambda w: expanded(w, "window"), grid),
        "c-expand-top-sessions": (expanded_session, grid),
        "c-expand-session-pmi-small": (lambda w: expanded(w, "session"), small),
        "c-expand-window-pmi-small": (lambda w: expanded(w, "window"), small),
        "c-expand-top-sessions-small": (expanded_session, small),
        "d-hyponyms": (hyponyms, (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-hyponyms-2senses": (lambda w: hyponyms(w, 2), (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-hyponyms-depth2": (lambda w: hyponyms(w, 1, 2), (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-hyponyms-nocap": (lambda w: hyponyms(w, 1, 4, 100000), (0.0, 0.05, 0.1, 0.2, 0.3)),
        "d-general-check": (lambda p: general(*p), ((1.2, 0.75, 0.5, 1.0),)),
        "d-bm25-k1": (lambda k: general(k1=k), (1.2, 0.6, 0.9, 1.6, 2.0, 3.0)),
        "d-bm25-b": (lambda v: general(b=v), (0.75, 0.3, 0.5, 0.6, 0.9, 1.0)),
        "d-context-weight": (lambda v: general(w_context=v), (0.5, 0.3, 0.4, 0.6, 0.7)),
        "d-name-idf": (lambda v: general(w_name=v), (1.0, 0.0, 0.25, 0.5, 1.5)),
        "d-prior-self": (lambda v: prior(v, 0.0), (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-prior-asks": (lambda v: prior(0.0, v), (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-burstiness": (lambda v: general(w_burst=v), (0.0, 0.1, 0.2, 0.4, 0.8, 1.5)),
        "d-informative-rare3": (informative, (0.0, 0.02, 0.05, 0.1, 0.2)),
        "d-informative-rare10": (lambda w: informative(w, 10), (0.0, 0.02, 0.05, 0.1, 0.2)),
        "d-self-informative10": (lambda p: priors(p[0], p[1], 0.0, 10), tuple(
            (x, y) for x in (0.0, 0.03, 0.05, 0.08) for y in (0.0, 0.05, 0.1, 0.15))),
        "d-proper": (lambda w: proper_prior(w, False), (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-proper-lists": (lambda w: proper_prior(w, True), (0.0, 0.1, 0.2, 0.3, 0.5, 0.8)),
        "d-first-in-session": (first_mention, (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "d-first-in-conversation": (lambda w: first_mention(w, False),
                                    (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "a-session-news-top1": (session_news, (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)),
        "a-session-news-top3": (lambda w: session_news(w, 3), (0.0, 0.05, 0.1, 0.2, 0.3)),
        "d-prior-long": (lambda v: prior(0.0, 0.0, v), (0.0, 0.02, 0.05, 0.1, 0.2)),
        "d-prior-self-asks": (lambda p: prior(*p), tuple(
            (x, y) for x in (0.0, 0.05, 0.1, 0.15) for y in (0.0, 0.05, 0.1, 0.15))),
        "d-context-sided": (lambda p: sided(*p), ((0.5, 0.5), (0.6, 0.4), (0.7, 0.3),
                                                 (0.4, 0.6), (0.7, 0.5), (0.5, 0.3))),
        "d-context-far": (lambda p: sided(*p), ((0.5, 0.5, 1.0), (0.6, 0.6, 0.5),
                                               (0.5, 0.5, 0.5), (0.7, 0.7, 0.5))),
        "d-context-radius3": (lambda p: sided(*p), ((0.5, 0.5, 1.0, 2), (0.5, 0.5, 0.6, 3),
                                                   (0.5, 0.5, 0.8, 3), (0.5, 0.5, 1.0, 3))),
    }
    only = set(args.only.split(",")) if args.only else None
    for name, (family, g) in candidates.items():
        if only and name not in only:
            continue
        if name.startswith("d-hyponyms") and not WORDNET.exists():
            print(f"{name:<36} skipped: no {WORDNET} (Debian's wordnet-base)")
            continue
        fitted, held, best, chosen, curve = held_out(items, family, g)
        print(f"{name:<36} {fmt(fitted)}  best {best}")
        print(f"{'  held out':<36} {fmt(held)}  folds {chosen}")
        print(f"{'  R@5 by weight':<36} {curve}")
        print(f"{'  first pass R@5 / R@50 at best':<36} "
              f"{r5_first(items, family(best)):.3f} / {pool_recall(items, family(best)):.3f}",
              flush=True)
    if args.joint:
        joint_fit(items)


if __name__ == "__main__":
    main()
