"""Garbage-collector policy (pure): which memories move tier, get archived, deleted or merged.

The rules, per memory, in this order (scores without a query, so at most 0.6):
  1. idle longer than its tier's max age AND score ≤ 0.25 → one tier down
     (an old but important memory is never demoted for age alone);
  2. score ≥ 0.45 → one tier up;
  3. score < 0.10 → archived; score < 0.05 and already archived → deleted.
Then tier capacity: each tier's token limit per namespace (TIER_CAPACITY) is enforced:
while a tier holds more tokens than its capacity, its lowest-scored memory moves one tier down
(judged before this run's merges). And near-duplicates found by `consolidation` are merged
into the better-scored copy.

`plan()` is the whole decision; `service.gc_run` applies exactly the plan `gc_preview` shows.
`Prediction` makes the same decision for one memory from the memories that score higher
(`inspect`), and `gc_score` is the one score every GC decision uses.

A whole-namespace `gc_preview` plans ~100k memories, so `plan` works column by column, not
memory by memory: scores, rule codes and target tiers as lists (`_Columns`); capacity as running
sums of tokens per tier (`_cascade`), sorting only the best-scored memories (`_placed`); a
reason's words once per outcome (`_outcome`: rule, tier, final tier), so per memory only its
score and idle hours are formatted, when its GCDecision is made. Plain lists, not numpy: the
hooks' bounded GC runs in the hook process, which must not load it. `Prediction` decides with
the same functions, so `inspect` and the plan cannot disagree.

The collector scores with its own weights, `WEIGHTS` (the default 0.4/0.3/0.2/0.1), whatever
PMA_WEIGHTS says: those shape recall. The thresholds above were set for those weights;
under a weighting whose query-less maximum is low (PMA_WEIGHTS=1,0,0,0 gives every memory 0
without a query) the same rules would archive and then delete the whole store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from itertools import accumulate, compress, repeat
from operator import attrgetter

from pma_mcp.core.models import (
    TIER_ORDER,
    GCAction,
    GCDecision,
    GCPreview,
    MemoryType,
    MergePair,
    Planned,
    ScoreBreakdown,
    Tiered,
    tier_down,
    tier_up,
)
from pma_mcp.core.scoring import Weights, access_frequency, combine, recency
from pma_mcp.core.scoring import score as composite_of
from pma_mcp.core.text import lexicon

WEIGHTS = Weights()
"""What the collector scores with (see the module docstring)."""
DEMOTION_THRESHOLD = 0.25
PROMOTION_THRESHOLD = 0.45
ARCHIVE_THRESHOLD = 0.10
DELETE_THRESHOLD = 0.05

MAX_IDLE_HOURS: Mapping[MemoryType, float] = {
    MemoryType.WORKING: 4.0,
    MemoryType.EPISODIC: 72.0,
    MemoryType.SEMANTIC: 30 * 24.0,
}
TIER_CAPACITY: Mapping[MemoryType, int] = {
    MemoryType.WORKING: 2_000,
    MemoryType.EPISODIC: 8_000,
    MemoryType.SEMANTIC: 32_000,
}
ACTIVE_TIERS = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.SEMANTIC)
PREVIEW_CHARS = 80

# Tiers as codes: the index in TIER_ORDER (hottest first, so "one tier down" is +1), and
# _GONE for a deleted memory. The active tiers are the codes below _ARCHIVED.
_WORKING, _EPISODIC, _SEMANTIC, _ARCHIVED, _GONE = range(5)
_CODE = {tier: i for i, tier in enumerate(TIER_ORDER)}
_TIER_OF: tuple[MemoryType | None, ...] = (*TIER_ORDER, None)
_CAPACITY = tuple(TIER_CAPACITY[tier] for tier in ACTIVE_TIERS)
_MAX_IDLE = tuple(MAX_IDLE_HOURS.get(tier, math.inf) for tier in TIER_ORDER)

# The rules' outcomes, in the order they are tried (see `_rule`).
SUPERSEDED, IDLE_DEMOTE, PROMOTE, DELETE, ARCHIVE, IDLE_KEEP, KEEP = range(7)
_OWN = tuple(range(len(TIER_ORDER)))
_RULE_TARGET: tuple[tuple[int, ...], ...] = (
    _OWN,
    tuple(_CODE[tier_down(tier)] for tier in TIER_ORDER),
    tuple(_CODE[tier_up(tier)] for tier in TIER_ORDER),
    (_GONE,) * len(TIER_ORDER),
    (_ARCHIVED,) * len(TIER_ORDER),
    _OWN,
    _OWN,
)
"""The tier each rule sends a memory to, by its tier's code."""

_TYPE, _SEQ, _TOKENS = (attrgetter("memory_type"), attrgetter("seq"),
                        attrgetter("token_count"))
_IMPORTANCE, _ACCESSES = attrgetter("importance"), attrgetter("access_count")
_CREATED, _ACCESSED = attrgetter("created_epoch"), attrgetter("accessed_epoch")
_SUPERSEDED_BY, _ID, _CONTENT = (attrgetter("superseded_by"), attrgetter("id"),
                                 attrgetter("content"))


@dataclass(frozen=True)
class Rule:
    """The outcome of the per-memory rules, before capacity is considered."""

    action: GCAction
    to_tier: MemoryType | None
    reason: str


def gc_score(memory: Tiered, now: float, weights: Weights) -> ScoreBreakdown:
    """The query-less score every GC decision uses: the one place GC asks for a score."""
    return composite_of(memory.importance, memory.created_epoch, memory.access_count, now,
                        weights)


@dataclass(frozen=True, slots=True)
class _Scores:
    """`gc_score` of a batch, term by term: the same floats, bit for bit (the recency and
    access terms come from scoring's own functions, summed in scoring's order), without a
    ScoreBreakdown per memory until a decision needs one."""

    importance: list[float]
    ages: list[float]
    recency: list[float]
    access: list[float]
    composites: list[float]

    @classmethod
    def of(cls, memories: Sequence[Tiered], now: float, weights: Weights) -> _Scores:
        importance = list(map(_IMPORTANCE, memories))
        ages = [(now - created) / 3600.0 for created in map(_CREATED, memories)]
        recencies = list(map(recency, ages))
        counts = list(map(_ACCESSES, memories))
        access_of = {count: access_frequency(count) for count in set(counts)}
        access = list(map(access_of.__getitem__, counts))
        composites = [combine(weights, 0.0, i, r, a)
                      for i, r, a in zip(importance, recencies, access, strict=True)]
        return cls(importance, ages, recencies, access, composites)

    def breakdowns(self) -> list[ScoreBreakdown]:
        """Each memory's ScoreBreakdown, equal to `gc_score`'s, made by filling its slots:
        a frozen dataclass's __init__ sets every field through object.__setattr__, 0.07 s
        of a 100k plan against 0.03 s this way (`_BREAKDOWN_SLOTS` are checked at import)."""
        new = ScoreBreakdown.__new__
        semantic, importance, recency_, access, composite, age = _BREAKDOWN_SLOTS
        made = []
        for i, r, a, c, g in zip(self.importance, self.recency, self.access,
                                 self.composites, self.ages, strict=True):
            breakdown = new(ScoreBreakdown)
            semantic(breakdown, 0.0)
            importance(breakdown, i)
            recency_(breakdown, r)
            access(breakdown, a)
            composite(breakdown, c)
            age(breakdown, g)
            made.append(breakdown)
        return made


_BREAKDOWN_FIELDS = ("semantic_similarity", "importance", "recency", "access_frequency",
                     "composite", "age_hours")
if (tuple(f.name for f in fields(ScoreBreakdown)) != _BREAKDOWN_FIELDS
        or hasattr(ScoreBreakdown, "__post_init__")):
    raise TypeError("ScoreBreakdown changed: update collector._Scores.breakdowns")
_BREAKDOWN_SLOTS: tuple[Callable[[ScoreBreakdown, float], None], ...] = tuple(
    getattr(ScoreBreakdown, name).__set__ for name in _BREAKDOWN_FIELDS)
"""The slot setters of ScoreBreakdown's fields, in order."""


def idle_hours(memory: Tiered, now: float) -> float:
    return (now - memory.accessed_epoch) / 3600.0


def _rule(tier: int, composite: float, idle: float, superseded: bool) -> int:
    """The three rules, in order: which one applies to a memory."""
    if superseded:
        return SUPERSEDED
    idle_long = idle > _MAX_IDLE[tier]
    if idle_long and composite <= DEMOTION_THRESHOLD:
        return IDLE_DEMOTE
    if composite >= PROMOTION_THRESHOLD and tier != _WORKING:
        return PROMOTE
    if composite < DELETE_THRESHOLD and tier == _ARCHIVED:
        return DELETE
    if composite < ARCHIVE_THRESHOLD and tier != _ARCHIVED:
        return ARCHIVE
    return IDLE_KEEP if idle_long else KEEP


@dataclass(frozen=True, slots=True)
class _Columns:
    """A batch of memories as the rules see them, one list per field."""

    types: list[MemoryType]
    tiers: list[int]
    seqs: list[int]
    tokens: list[int]
    superseded_by: list[str | None]
    idle: list[float]
    scores: _Scores
    codes: list[int]
    targets: list[int]

    @classmethod
    def of(cls, memories: Sequence[Tiered], now: float, weights: Weights) -> _Columns:
        types = list(map(_TYPE, memories))
        tiers = list(map(_CODE.__getitem__, types))
        superseded_by = list(map(_SUPERSEDED_BY, memories))
        idle = [(now - accessed) / 3600.0 for accessed in map(_ACCESSED, memories)]
        scores = _Scores.of(memories, now, weights)
        codes = list(map(_rule, tiers, scores.composites, idle,
                         [by is not None for by in superseded_by]))
        targets = [_RULE_TARGET[code][tier] for code, tier in zip(codes, tiers, strict=True)]
        return cls(types, tiers, list(map(_SEQ, memories)), list(map(_TOKENS, memories)),
                   superseded_by, idle, scores, codes, targets)

    def best_first(self, indices: list[int]) -> list[int]:
        """Capacity order: higher score first, the newer memory (higher seq) first on a
        tie, then input order. Two stable sorts (seq, then score) cost a fifth of one on
        (score, seq) tuples."""
        order = sorted(indices, key=self.seqs.__getitem__, reverse=True)
        order.sort(key=self.scores.composites.__getitem__, reverse=True)
        return order


def _cascade(
    order: Sequence[int], targets: Sequence[int], tokens: Sequence[int], held: Sequence[int]
) -> tuple[list[int], list[int]]:
    """Tier capacity: each memory's final tier, and the tokens each active tier then holds.

    `order` lists memories best first (`_Columns.best_first`); `held` is what the active
    tiers hold before them. A tier holds the tokens of every memory that arrives in it,
    including those that then move on, so a memory stays while the tier's running sum, its
    own tokens included, is within capacity; otherwise it arrives in the next tier down,
    among the better-scored memories that moved there before it. Judging memories best first
    is the same as repeatedly moving a full tier's lowest-scored memory down, and it lets
    `Prediction` stop once the tiers a memory could stay in are full, without looking at
    lower-scored memories.
    """
    final, held = list(targets), list(held)
    for tier in (_WORKING, _EPISODIC, _SEMANTIC):
        arrivals = [i for i in order if final[i] == tier]
        if not arrivals:
            continue
        room, moved_on = _CAPACITY[tier], tier + 1
        sums = accumulate((tokens[i] for i in arrivals), initial=held[tier])
        total = next(sums)
        for i, total in zip(arrivals, sums, strict=True):
            if total > room:
                final[i] = moved_on
        held[tier] = total
    return final, held


def _full_from(held: Sequence[int]) -> int:
    """The hottest tier from which every active tier down is past its capacity (_ARCHIVED
    when the coldest is not): a memory bound for it, or below, can then only end archived,
    whatever scores lower, as held tokens only grow."""
    tier = _ARCHIVED
    while tier > _WORKING and held[tier - 1] > _CAPACITY[tier - 1]:
        tier -= 1
    return tier


_SAMPLE_EVERY = 16
"""Every 16th memory's score and tokens estimate where the tiers fill (`_fill_estimate`)."""


def _fill_estimate(bound: list[int], columns: _Columns, held: Sequence[int]) -> float:
    """A score above which the memories probably hold four times the tiers' room, from a
    sample of them (minus infinity if they do not)."""
    composites, tokens = columns.scores.composites, columns.tokens
    sample = sorted(bound[::_SAMPLE_EVERY], key=composites.__getitem__, reverse=True)
    enough = 4 * sum(max(room - h, 0) for room, h in zip(_CAPACITY, held, strict=True))
    sums = accumulate(_SAMPLE_EVERY * tokens[i] for i in sample)
    for i, total in zip(sample, sums, strict=True):
        if total > enough:
            return composites[i]
    return -math.inf


def _placed(columns: _Columns, held: Sequence[int]) -> list[int]:
    """Each memory's final tier: `_cascade` over those bound for an active tier.

    Only the best-scored need sorting. Memories scoring above `_fill_estimate` are placed
    first, best first; once that leaves every tier from some tier T down full
    (`_full_from`), a lower-scored memory reaching T ends archived whatever its rank, so of
    the rest only those bound for a tier above T are sorted and placed (behind the first
    ones, as they score lower). A poor estimate costs time, never exactness. With a
    negative token count (held tokens could shrink) everything is sorted.
    """
    targets, composites, tokens = columns.targets, columns.scores.composites, columns.tokens
    bound = [i for i, t in enumerate(targets) if t < _ARCHIVED]
    cut = _fill_estimate(bound, columns, held) if min(tokens, default=0) >= 0 else -math.inf
    head = [i for i in bound if composites[i] > cut]
    finals, held = _cascade(columns.best_first(head), targets, tokens, held)
    if len(head) == len(bound):
        return finals
    full = _full_from(held)
    rest = [i for i in bound if not composites[i] > cut]
    finals, _ = _cascade(columns.best_first([i for i in rest if targets[i] < full]), finals,
                         tokens, held)
    for i in rest:
        if full <= finals[i] < _ARCHIVED:
            finals[i] = _ARCHIVED
    return finals


_NO_PREFIX, _IDLE_PREFIX, _SUPERSEDED_PREFIX = range(3)
"""What a reason starts with: nothing, "idle 12.3", or "superseded by 0123abcd"."""


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What rule and capacity make of a memory: its action, the tier it moves to, and its
    reason's words (a prefix kind, and the text around each mention of the score)."""

    action: GCAction
    to_tier: MemoryType | None
    prefix: int
    segments: tuple[str, ...]


def _rule_text(code: int, tier: int) -> tuple[int, tuple[str, ...]]:
    """Why rule `code` applies to a memory in `tier` (see `_Outcome`)."""
    if code == IDLE_DEMOTE:
        memory_type = TIER_ORDER[tier]
        return _IDLE_PREFIX, (f" h > {MAX_IDLE_HOURS[memory_type]:g} h max for {memory_type} "
                              "and score ", f" ≤ {DEMOTION_THRESHOLD}")
    if code == KEEP:
        return _NO_PREFIX, ("score ", " within thresholds")
    if code == IDLE_KEEP:
        return _IDLE_PREFIX, (" h but score ",
                              f" > {DEMOTION_THRESHOLD}: important enough to stay")
    if code == ARCHIVE:
        return _NO_PREFIX, ("score ", f" < {ARCHIVE_THRESHOLD}")
    if code == DELETE:
        return _NO_PREFIX, ("archived and score ", f" < {DELETE_THRESHOLD}")
    if code == PROMOTE:
        return _NO_PREFIX, ("score ", f" ≥ {PROMOTION_THRESHOLD}")
    return _SUPERSEDED_PREFIX, (": stays archived",)


_OVER_CAPACITY = {
    _CODE[tier]: (f"{tier.value} over capacity ({TIER_CAPACITY[tier]:,} tokens held by "
                  "higher scores): score ", f" moves to {tier_down(tier).value}")
    for tier in ACTIVE_TIERS
}


def _action(tier: int, code: int, final: int) -> GCAction:
    if final == _GONE:
        return "delete"
    if final == tier:
        return "keep"
    if final < tier:
        return "promote"
    if code == ARCHIVE and final == _ARCHIVED:
        return "archive"
    return "demote"


@cache
def _outcome(code: int, tier: int, final: int) -> _Outcome:
    """The outcome for a memory in `tier` that rule `code` sent on and capacity left in
    `final`. The reason is the rule's, then a note per tier capacity passed it through,
    each after "; then ", except that its own tier's note replaces what came before
    (capacity, not the rule, moved it). A 100k plan has a few dozen outcomes, hence the
    cache."""
    action = _action(tier, code, final)
    prefix, segments = _rule_text(code, tier)
    passed, joint = range(_RULE_TARGET[code][tier], final), "; then "
    if tier in passed:
        prefix, segments, joint = _NO_PREFIX, ("",), ""
        passed = passed[passed.index(tier):]
    for t in passed:
        head, tail = _OVER_CAPACITY[t]
        segments = (*segments[:-1], segments[-1] + joint + head, tail)
        joint = "; then "
    to_tier = None if action in ("keep", "delete") else _TIER_OF[final]
    return _Outcome(action, to_tier, prefix, segments)


def _reason(outcome: _Outcome, shown: str, idle: float, superseded_by: str | None) -> str:
    """A decision's reason, `shown` being its score as printed (3 decimals)."""
    words = shown.join(outcome.segments)
    if outcome.prefix == _NO_PREFIX:
        return words
    if outcome.prefix == _IDLE_PREFIX:
        return f"idle {idle:.1f}{words}"
    return f"superseded by {(superseded_by or '')[:8]}{words}"


def apply_rules(memory: Tiered, score: ScoreBreakdown, now: float) -> Rule:
    """The three rules for one memory, before capacity."""
    tier, idle = _CODE[memory.memory_type], idle_hours(memory, now)
    code = _rule(tier, score.composite, idle, memory.superseded_by is not None)
    outcome = _outcome(code, tier, _RULE_TARGET[code][tier])
    return Rule(outcome.action, outcome.to_tier,
                _reason(outcome, f"{score.composite:.3f}", idle, memory.superseded_by))


def _decision(
    memory: Planned,
    action: GCAction,
    to_tier: MemoryType | None,
    reason: str,
    score: ScoreBreakdown,
    merge_into: str | None = None,
) -> GCDecision:
    return GCDecision(
        memory_id=memory.id,
        action=action,
        from_tier=memory.memory_type,
        to_tier=to_tier,
        reason=reason,
        breakdown=score,
        token_count=memory.token_count,
        content_preview=lexicon.preview(memory.content, PREVIEW_CHARS),
        merge_into=merge_into,
    )


def _merge_decision(memory: Planned, pair: MergePair, score: ScoreBreakdown) -> GCDecision:
    why = (f"restatement of {pair.keep.id[:8]} (content terms {pair.overlap:.2f} alike, "
           f"same numbers, names and negations; cosine {pair.similarity:.3f})"
           if pair.overlap is not None else
           f"near-duplicate of {pair.keep.id[:8]} (cosine {pair.similarity:.2f})")
    return _decision(memory, "merge", None, f"{why}; the better-scored copy is kept", score,
                     merge_into=pair.keep.id)


def _held(outside: Mapping[MemoryType, int] | None) -> list[int]:
    return [(outside or {}).get(tier, 0) for tier in ACTIVE_TIERS]


def plan(
    namespace: str,
    memories: Sequence[Planned],
    now: float,
    weights: Weights,
    *,
    merges: Sequence[MergePair] = (),
    outside_tokens: Mapping[MemoryType, int] | None = None,
) -> GCPreview:
    """Decide every memory's fate. `outside_tokens`: per-tier tokens of memories of the
    namespace that were not passed in (a bounded run), counted toward capacity.

    Capacity is judged on the tiers before this run's merges (a memory merged away still
    holds its place; the room it frees is used by the next run), so one memory's fate never
    depends on which others are near-duplicates: `inspect` can predict it from the memories
    that score higher alone.
    """
    columns = _Columns.of(memories, now, weights)
    finals = _placed(columns, _held(outside_tokens))
    outcomes = list(map(_outcome, columns.codes, columns.tiers, finals))
    shown = [f"{c:.3f}" for c in columns.scores.composites]
    reasons = list(map(_reason, outcomes, shown, columns.idle, columns.superseded_by))
    breakdowns = columns.scores.breakdowns()
    ids = list(map(_ID, memories))
    previews = list(map(lexicon.preview, map(_CONTENT, memories), repeat(PREVIEW_CHARS)))
    decisions = [
        GCDecision(memory_id=memory_id, action=outcome.action, from_tier=from_tier,
                   to_tier=outcome.to_tier, reason=reason, breakdown=breakdown,
                   token_count=token_count, content_preview=preview)
        for memory_id, outcome, from_tier, reason, breakdown, token_count, preview
        in zip(ids, outcomes, columns.types, reasons, breakdowns, columns.tokens, previews,
               strict=True)
    ]
    merged_away = {pair.gone.id: pair for pair in merges}
    if merged_away:
        for i in compress(range(len(ids)), map(merged_away.__contains__, ids)):
            decisions[i] = _merge_decision(memories[i], merged_away[ids[i]], breakdowns[i])
    preview = GCPreview(namespace=namespace)
    groups = {"merge": preview.to_merge.append, "delete": preview.to_delete.append,
              "keep": preview.to_keep.append, "promote": preview.to_promote.append,
              "archive": preview.to_archive.append, "demote": preview.to_demote.append}
    for decision in decisions:
        groups[decision.action](decision)
    preview.token_delta = _token_delta(preview)
    preview.summary = _summary(preview)
    return preview


class Prediction:
    """The decision `plan` would make for one memory, from the memories scoring higher.

    Feed `higher` the namespace's memories in descending score order (those that cannot
    reach an active tier may be left out) until it returns True; then `decision()`. The fed
    memories are weighed BATCH at a time, with the plan's own functions.
    """

    BATCH = 32
    """`higher` may say True up to BATCH - 1 memories after the earliest it could: those
    score higher too, so the decision is the same."""

    def __init__(self, memory: Planned, now: float, weights: Weights) -> None:
        self.memory = memory
        self._now = now
        self._weights = weights
        self.score = gc_score(memory, now, weights)
        self._tier = _CODE[memory.memory_type]
        self._idle = idle_hours(memory, now)
        self._code = _rule(self._tier, self.score.composite, self._idle,
                           memory.superseded_by is not None)
        self._target = _RULE_TARGET[self._code][self._tier]
        self._key = (self.score.composite, memory.seq)
        self._held = _held(None)
        self._fed: list[Tiered] = []

    @property
    def settled(self) -> bool:
        """No memory scoring lower than the ones fed so far can change the outcome: every
        active tier from the memory's target down is past its capacity."""
        self._weigh()
        return self._target >= _full_from(self._held)

    def higher(self, other: Tiered) -> bool:
        """Count one memory that scores higher; True once the outcome is settled."""
        self._fed.append(other)
        return len(self._fed) >= self.BATCH and self.settled

    def _weigh(self) -> None:
        """Place the memories fed since the last call in the tiers, best first."""
        if not self._fed:
            return
        fed, self._fed = self._fed, []
        columns = _Columns.of(fed, self._now, self._weights)
        above = [i for i, key in enumerate(zip(columns.scores.composites, columns.seqs,
                                               strict=True))
                 if key > self._key and columns.targets[i] < _ARCHIVED]
        _, self._held = _cascade(columns.best_first(above), columns.targets, columns.tokens,
                                 self._held)

    def decision(self, merge: MergePair | None = None) -> GCDecision:
        memory = self.memory
        if merge is not None and merge.gone.id == memory.id:
            return _merge_decision(memory, merge, self.score)
        self._weigh()
        (final,), _ = _cascade([0], [self._target], [memory.token_count], self._held)
        outcome = _outcome(self._code, self._tier, final)
        reason = _reason(outcome, f"{self.score.composite:.3f}", self._idle,
                         memory.superseded_by)
        return _decision(memory, outcome.action, outcome.to_tier, reason, self.score)


def _token_delta(preview: GCPreview) -> int:
    """Tokens leaving the active tiers minus tokens entering them (positive = freed)."""
    delta = 0
    for d in preview.changes():
        was_active = d.from_tier in ACTIVE_TIERS
        now_active = d.action != "merge" and d.to_tier in ACTIVE_TIERS
        if was_active and not now_active:
            delta += d.token_count
        elif now_active and not was_active:
            delta -= d.token_count
    return delta


def _summary(p: GCPreview) -> str:
    return (
        f"{len(p.to_promote)} promote, {len(p.to_demote)} demote, {len(p.to_archive)} archive, "
        f"{len(p.to_delete)} delete, {len(p.to_merge)} merge, {len(p.to_keep)} keep; "
        f"{p.token_delta:+,} tokens freed from active tiers"
    )
