"""What two statements must agree on to be one: their specifics (pure).

A restatement says the same thing in other words ("…replica lags; point it at the primary at
02:00." / "…lags, so point it at the primary at 02:00 UTC."). Word overlap alone cannot tell
it from a near miss that changes what is said while sharing almost every word: another
number, time or date, another name, a negation, "before" for "after". So every merge the
collector makes (core/consolidation.py: cosine near-duplicates and overlapping restatements
alike) also requires the two texts' `Specifics` to agree:

- numbers: every digit run (leading zeros dropped, so "02:00" and "2:00" agree) and number
  word ("two" is 2), as a set;
- names: every capitalised word must occur in the other text too, in any case (a
  sentence's first word is capitalised without being a name, so "Point it…" and "point
  it…" agree, while "Caroline: …" and "Melanie: …" do not). UTC and GMT are the default
  zone: "02:00" and "02:00 UTC" agree, "02:00 PST" does not;
- negations: as many (not, no, never, n't, without, …) in both;
- qualifiers: the same set of the stopwords that flip a statement (before/after,
  above/below, more/less, only, until, …), which the content-term overlap ignores;
- speaker: when both are conversation turns ("Nate: Bye Joanna!", lexicon.speaker_of), the
  same one: "Joanna: Bye Nate!" has the same words and names, said by someone else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pma_mcp.core.text import lexicon

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_DIGITS = re.compile(r"\d+")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|cannot|without)\b"
    r"|\w(?:n['’]t)\b")
DEFAULT_ZONES = frozenset({"utc", "gmt"})
"""Time zones a time without one is read in: naming them adds nothing."""
QUALIFIERS = frozenset(
    "before after above below over under up down off against until more most less least "
    "fewer only same".split())
"""Stopwords that flip what a statement says: the content-term overlap ignores stopwords,
so these are compared here."""
NUMBER_WORDS = {
    word: value for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
     "ninety": 90, "hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9,
     "dozen": 12, "half": 0.5, "twice": 2, "once": 1}


@dataclass(frozen=True, slots=True)
class Specifics:
    """What of a text must be equal in a restatement (see the module docstring)."""

    numbers: frozenset[str]
    names: frozenset[str]
    words: frozenset[str]
    negations: int
    qualifiers: frozenset[str]
    speaker: str | None

    def agree(self, other: Specifics) -> bool:
        return (self.numbers == other.numbers and self.negations == other.negations
                and self.qualifiers == other.qualifiers
                and self.names <= other.words and other.names <= self.words
                and (self.speaker is None or other.speaker is None
                     or self.speaker == other.speaker))


def specifics(text: str) -> Specifics:
    """The specifics of `text`."""
    numbers: set[str] = {str(int(d)) for d in _DIGITS.findall(text)}
    names: set[str] = set()
    words: set[str] = set()
    qualifiers: set[str] = set()
    for word in _WORD.findall(text):
        lower = word.lower()
        words.add(lower)
        if lower in NUMBER_WORDS:
            numbers.add(str(NUMBER_WORDS[lower]))
        elif lower in QUALIFIERS:
            qualifiers.add(lower)
        elif any(c.isupper() for c in word) and not (
                re.split("['’]", lower)[0] in lexicon.STOPWORDS or lower in DEFAULT_ZONES):
            names.add(lower)
    speaker = lexicon.speaker_of(text)
    return Specifics(frozenset(numbers), frozenset(names), frozenset(words),
                     len(_NEGATION.findall(text.lower())), frozenset(qualifiers),
                     speaker.lower() if speaker else None)


def agree(a: str, b: str) -> bool:
    """Whether texts `a` and `b` have the same specifics."""
    return specifics(a).agree(specifics(b))
