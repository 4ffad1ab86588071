"""How text is read (pure): query words, stopwords, and who is speaking in a memory.

Shared by retrieval (queries) and the repository (what it indexes at write time), so both sides
agree on word boundaries: letters and digits, as SQLite's unicode61 tokenizer splits them.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

WORD = re.compile(r"[^\W_]+")
MAX_QUERY_WORDS = 32

# NLTK's English list (179 entries, contraction fragments included): measured +0.06 R@5 over
# a 33-word list on the LoCoMo dev split, because questions are full of these words.
STOPWORDS = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
    couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma
    mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
    weren't won won't wouldn wouldn't
    """.split()
)

_SPEAKER = re.compile(r"\s*([^\s:()\[\]][^:\n()\[\]]{0,39}):\s")
MAX_SPEAKER_WORDS = 4


def words(text: str) -> list[str]:
    """Every lower-cased word of `text`, in order."""
    return WORD.findall(text.lower())


def query_words(query: str, limit: int | None = MAX_QUERY_WORDS) -> list[str]:
    """Distinct words of `query` minus stopwords, in order, at most `limit` (None: all)."""
    seen: dict[str, None] = {}
    for word in words(query):
        if word not in STOPWORDS:
            seen.setdefault(word, None)
            if limit is not None and len(seen) >= limit:
                break
    return list(seen)


def speaker_of(content: str) -> str | None:
    """The name in a leading "Name: text" (a conversation turn), or None.

    At most four words and 40 characters before the colon, so "Note: ..." counts but a
    sentence that merely contains a colon does not. No brackets: "payments-service (service):
    ..." is a label with its kind (an imported entity's observation), not someone speaking.
    """
    match = _SPEAKER.match(content)
    if match is None:
        return None
    name = match.group(1).strip()
    return name if len(name.split()) <= MAX_SPEAKER_WORDS else None


def names_speaker(query_tokens: AbstractSet[str], speaker: str | None) -> bool:
    """Whether the query names the speaker (any non-stopword word of the name)."""
    if not speaker:
        return False
    return any(w in query_tokens for w in words(speaker) if w not in STOPWORDS)


def preview(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
