"""Secret redaction applied before anything from a conversation is stored.

Memories outlive the session that produced them and are injected into later prompts, so a
credential pasted once would otherwise resurface forever. The rules lean towards safety (a false
positive costs a few characters of context, a false negative leaks a key) while leaving ordinary
prose and code alone. Three layers: token families with a fixed shape (`secret_rules.py`, data),
structured forms (private key blocks, URLs with credentials, `.netrc` and `.pgpass` lines,
credential columns of CSV exports, a cloud secret key beside its access key id, base64 said to
be a credential, credentials given to known command-line tools), and assignments after
password / secret / token / key words, judged by context and by the value's entropy.

Every pattern is compiled the first time its trigger occurs, starts with a literal or a small
character set where possible, and uses bounded or possessive quantifiers, so a multi-megabyte
transcript is scanned in linear time on the hook fast path. Standard library only.

The service's intake door (service/intake.py) applies these to every string it stores: `scrub`
to text from any source, `sanitize_for_storage` (which adds `<private>` stripping) to captured
conversation.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pma_mcp.core.patterns import Lazy
from pma_mcp.core.secret_rules import FAMILIES

__all__ = ["Redaction", "entropy", "key_like", "redact", "sanitize_for_storage", "scrub",
           "scrub_values", "strip_private"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """Redacted text, how many secrets were replaced, and their distinct kinds (sorted)."""

    text: str
    count: int
    kinds: tuple[str, ...]


# --------------------------------------------------------------------------- <private> blocks

# Opening and closing tags only; `<private/>` and `<privateKey>` are not tags of ours.
_PRIVATE_TAG = Lazy(r"<(/?)private(?:\s[^<>]{0,200})?>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """Remove `<private>…</private>` blocks, nested ones and an unclosed one to the end.

    Depth counting (rather than one lazy regex) keeps text after a nested block private, and an
    unclosed tag hides everything after it: the user asked for privacy, truncation is the safe
    reading. A stray closing tag is dropped and its surrounding text kept.
    """
    if "<" not in text:
        return text
    out: list[str] = []
    depth = 0
    pos = 0
    for match in _PRIVATE_TAG.finditer(text):
        if depth == 0:
            out.append(text[pos : match.start()])
        if match.group(1):
            depth = max(depth - 1, 0)
        else:
            depth += 1
        pos = match.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


# --------------------------------------------------------------------------- rule machinery

# A judge sees the match (possibly against the ASCII-lowercased text) and the original text,
# which has the same length, so spans index both. It returns the spans to replace: none rejects
# the match; a span may reach past the match (an env value to the end of its line).
_Span = tuple[int, int]
_Judge = Callable[[re.Match[str], str], list[_Span]]
_KindOf = Callable[[re.Match[str], str], str]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One secret shape: each accepted match has its secret span(s) replaced by a marker.

    `folded` rules are written in lowercase and run against lowercased text: re.IGNORECASE
    disables the literal-prefix search and made those scans ten times slower. The pattern is
    compiled the first time a trigger occurs, so a hook pays only for the rules its text needs.
    """

    kind: str
    source: str
    triggers: tuple[str, ...]  # lowercase substrings; the rule is skipped unless one occurs
    judge: _Judge | None = None  # default: the `secret` group if it took part, else the match
    folded: bool = False
    kind_of: _KindOf | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.source)


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source, re.VERBOSE)



_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _fold(text: str) -> str:
    """Lowercase without moving any index, so spans found in the result index `text` too.

    str.lower() expands only U+0130 (İ → i̇); mapping it first keeps the lengths equal. The
    length check guards against a future Unicode table (translate is correct but ~100x slower).
    """
    lowered = text.replace("\u0130", "i").lower()
    if len(lowered) == len(text):  # nothing expanded, so every index still lines up
        return lowered
    return text.translate(_ASCII_LOWER)


def _group_span(match: re.Match[str]) -> _Span:
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        return match.span("secret")
    return match.span()


def _when(accept: Callable[[re.Match[str], str], bool]) -> _Judge:
    """A judge that replaces the default span when `accept` holds."""

    def judge(match: re.Match[str], text: str) -> list[_Span]:
        return [_group_span(match)] if accept(match, text) else []

    return judge


# --------------------------------------------------------------------------- value checks

_DIGIT = Lazy(r"[0-9]")
_ALNUM = Lazy(r"[A-Za-z0-9]")
_TOKEN_CHARS = Lazy(r"[A-Za-z0-9+/=_\-.~%]+")
_HEX = Lazy(r"[0-9a-fA-F]+")


def _has_digit(value: str) -> bool:
    return _DIGIT.search(value) is not None


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def key_like(value: str, *, min_len: int = 12) -> bool:
    """A machine-generated value: token characters only, two character classes or more, and
    close to the entropy a random string of its length has (words and names fall short)."""
    if len(value) < min_len or not _TOKEN_CHARS.fullmatch(value):
        return False
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    if not _has_digit(value):
        # Without digits only a random mix of cases counts: CamelCase names have one capital
        # per word (`DHPrivateKeyWithSerialization`), random strings about one in two.
        if len(value) < 16 or not 0.3 <= upper / max(upper + lower, 1) <= 0.7:
            return False
    elif not (upper or lower):
        return len(value) >= 16 and entropy(value) >= 3.0  # a long PIN-like number
    elif not (upper and lower) and not _HEX.fullmatch(value) and len(value) < 16:
        return False
    return entropy(value) >= min(3.0, 0.8 * math.log2(len(value)))


# Words that follow "token:" / "password:" in prose or type hints rather than being a value.
_NOT_A_VALUE_WORDS = """
    a an and are as at be been being but by can cannot could did do does else for from had has
    have here how if in into is it its may might must no not now of on once only or our should
    so such than that the their them then there these they this those to too use used uses using
    very was we were what when where which while who why will with would yes you your
    none null nil true false undefined empty missing unset required optional string str bytes
    int integer bool boolean number any object dict list text value values bearer basic token
    tokens password passwords secret secrets redacted hidden masked placeholder example
    env environ environment see below above credentials creds pass pwd changeme incorrect
    invalid wrong expired reset forgotten protected
"""
_NOT_A_VALUE = frozenset(_NOT_A_VALUE_WORDS.split())

# An env lookup is `${...}`, `$(...)`, `$NAME` or `$name`; `$ecret99` in quotes is a value.
_PLACEHOLDER = Lazy(
    r"^(?:\$\{|\$\(|\$[A-Z_][A-Z0-9_]*$|\$[a-z_]+$|%\(|%[A-Za-z_]+%$|\{\{|<[^>\s]*>?$|\*+$"
    r"|[xX]{3,}$|\.{3}$|…$|\#[0-9A-Fa-f]{3,8}$|\[(?:redacted|REDACTED))"
)
_DOTTED_NAME = Lazy(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
# A call or a subscript: `get_token()`, `os.environ["KEY"]` (a bare value stops at the quote),
# `tokens[0]`; not `wHe32E8LCtx(eYL5A(7Q`, which only contains a parenthesis.
_CODE_EXPR = Lazy(r"^[A-Za-z_][A-Za-z0-9_.]*(?:\([^)]*\)|\[[^\]]*\]|[(\[]$)")
# Digit-free snake_case, ALL_CAPS, CamelCase and camelCase names: variables, constants and
# classes in code, not credentials.
_CODE_NAME = Lazy(
    r"^_*(?:[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)+)_*$"
)
# Docstring fields describe a parameter; what follows is prose.
_DOC_FIELDS = (":param ", ":type ", ":ivar ", ":var ", ":cvar ", "@param ", ":raises ")
_HARMLESS_KEY = Lazy(
    r"tokens|tokeniz|^(?:max|min|num|n)_"
    r"|(?:count|type|len|length|size|limit|budget|usage|ttl|expiry|expires|expires_at|expires_in"
    r"|url|uri|endpoint|path|file|dir|name|field|header|prompt|label|hint|policy|pattern|regex"
    r"|env|var|source|provider|manager|mode|format|version|rotation|required|enabled|[_.\-]id"
    r"|ref|arn)$"
)
_CAMEL_ID = Lazy(r"[a-z]Id$")
# `<qualifier>_key` names that hold a credential (`DD_APP_KEY`, `AccountKey`, `x-api-key`).
_SECRET_KEY_NAME = Lazy(
    r"(?:api|app|application|access|private|auth|signing|encryption|master|session|secret"
    r"|client|account|shared|storage|license|licence|subscription|service|admin|consumer"
    r"|webhook|deploy|integration|ingest|hmac|sas|ssh|gpg|pgp|aes|rsa|crypt|cipher|root"
    r"|write|partner|merchant|developer|dev|prod|live|test|publishable|primary|secondary)"
    r"[_\-]?key"
)
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_TRAILING = ",;.)]}>:"


def _plain_value(value: str) -> bool:
    """Not a word of prose, a placeholder, an env lookup or a mask."""
    return (
        value.lower() not in _NOT_A_VALUE
        and _PLACEHOLDER.match(value) is None
        and _ALNUM.search(value) is not None
    )


# --------------------------------------------------------------------------- assignments


def _full_key(match: re.Match[str], text: str) -> str:
    """The whole identifier around the matched keyword (`DB_PASSWORD`, `max_tokens`)."""
    start = match.start("key")
    floor = max(start - 64, 0)
    while start > floor and text[start - 1] in _IDENT_CHARS:
        start -= 1
    return text[start : match.end("key")]


def _at_line_start(text: str, start: int) -> bool:
    """Only indentation, a list dash, `export`/`set` or an opening quote before `start`."""
    line = text[text.rfind("\n", 0, start) + 1 : start].strip(" \t\"'")
    return line in ("", "-", "export", "set", "$env:", "- export")


def _value_span(match: re.Match[str], text: str, key_start: int) -> tuple[_Span, bool]:
    """The value's span and whether it was bare (unquoted).

    A bare value runs to the next whitespace, so `,` `&` `;` `#` `@` inside an env value stay
    in it; trailing punctuation is prose (`password=x.`). After `key:` at the start of a line
    (YAML, INI, a pasted config) the value is the rest of the line, spaces included.
    """
    for name in ("dq", "edq", "sq"):
        if match.group(name) is not None:
            return match.span(name), False
    start, end = match.span("bare")
    if match.group("sep") == ":" and _at_line_start(text, key_start):
        line_end = text.find("\n", start)
        end = len(text) if line_end < 0 else line_end
        end = start + len(text[start:end].rstrip())
    else:
        while end > start + 1 and text[end - 1] in _TRAILING:
            end -= 1
    return (start, end), True


def _judge_assignment(match: re.Match[str], text: str) -> list[_Span]:
    """Skip counts, type hints, placeholders, env lookups, code expressions and prose words.

    People choose passwords, so any remaining value of a password key counts. Tokens, keys and
    secrets are machine-generated: they carry a digit, are long, or look random (entropy),
    which keeps lexer code (`token = Operator`) and colour tables (`Token: "#fff"`) intact.
    """
    key = _full_key(match, text)
    lowered_key = key.lower()
    if _HARMLESS_KEY.search(lowered_key) or _CAMEL_ID.search(key):
        return []
    key_start = match.end("key") - len(key)
    if text[max(key_start - 8, 0) : key_start].endswith(_DOC_FIELDS):
        return []
    word = match.group("word")
    spans = _judge_value(match, text, key_start, lowered_key, word)
    return spans or _quoted_on_line(match, text, word)


def _judge_value(
    match: re.Match[str], text: str, key_start: int, lowered_key: str, word: str
) -> list[_Span]:
    (start, end), bare = _value_span(match, text, key_start)
    value = text[start:end].strip()
    if bare and _BLOCK_SCALAR.fullmatch(value) and word.startswith(("pass", "secret", "token")):
        block = _block_scalar(text, key_start, end)
        if block is None or text.startswith("[REDACTED", block[0]):
            return []
        return [block]
    first = value.split(None, 1)[0] if value else ""
    if first == value or not bare:
        return [(start, end)] if _accepted_value(match, text, value, lowered_key, word,
                                                 bare=bare) else []
    # The rest of a `password:` line: prose when its first word is one (`password: must be
    # rotated`), a value otherwise, spaces and all (`password: X= word`).
    if word.startswith(("pass", "_pass", "_pwd")):
        head = first.strip(_TRAILING).lower()
        if _PLACEHOLDER.match(first) or not _ALNUM.search(first) or _CODE_EXPR.match(first):
            return []
        if head in _NOT_A_VALUE and not _phrase_password(value[len(first):]):
            return []
        return [(start, end)]
    if _accepted_value(match, text, first, lowered_key, word, bare=True):
        return [(start, end)]
    return []


def _phrase_password(rest: str) -> bool:
    """After a prose-like first word, the rest of a `password:` line is still a chosen phrase
    when it mixes in a capital and a digit or symbol (`an Apple a Day 7!`), which a sentence
    about passwords (`must be rotated`, `at least 12 characters`) does not."""
    return re.search(r"[A-Z]", rest) is not None and re.search(r"[^A-Za-z\s]", rest) is not None


_BLOCK_SCALAR = Lazy(r"[|>][-+]?[1-9]?")


def _block_scalar(text: str, key_start: int, value_end: int) -> _Span | None:
    """The lines of a YAML block scalar (`password: |` or `>-`): those indented deeper than
    the key's line, up to the first that is not."""
    line_start = text.rfind("\n", 0, key_start) + 1
    indent = len(text[line_start:key_start]) - len(text[line_start:key_start].lstrip(" -"))
    pos = text.find("\n", value_end)
    first = end = -1
    for _ in range(100):
        if pos < 0:
            break
        line_end = text.find("\n", pos + 1)
        line = text[pos + 1 : len(text) if line_end < 0 else line_end]
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
            break
        if line.strip():
            first = pos + 1 + len(line) - len(line.lstrip(" ")) if first < 0 else first
            end = pos + 1 + len(line.rstrip())
        pos = line_end
    return (first, end) if first >= 0 else None


_QUOTED = Lazy(r""""((?:[^"\\\r\n]|\\.){6,512}+)"|'([^'\r\n]{6,512}+)'""")


def _quoted_on_line(match: re.Match[str], text: str, word: str) -> list[_Span]:
    """String literals later on the line of a rejected assignment that are credentials:
    `secret: None if debug else "WltM6OFX..."`, `token = os.getenv("T", "ghx9...")`."""
    line_end = text.find("\n", match.start())
    stop = min(len(text) if line_end < 0 else line_end, match.start() + 400)
    password = word.startswith(("pass", "_pass", "_pwd"))
    spans: list[_Span] = []
    for found in _QUOTED.finditer(text, match.end("key"), stop):
        group = 1 if found.group(1) is not None else 2
        value = found.group(group)
        if key_like(value, min_len=16) or (
            password and " " not in value and _plain_value(value) and _has_digit(value)
            and not _CODE_NAME.match(value)
        ):
            spans.append(found.span(group))
    return spans


def _accepted_value(
    match: re.Match[str], text: str, value: str, lowered_key: str, word: str, *, bare: bool
) -> bool:
    if word == "key" and not _SECRET_KEY_NAME.search(lowered_key):
        # `key: value`, `primary_key = 5`, `cache_key = ...`: only a random-looking value.
        return (not bare and key_like(value, min_len=20)) or (bare and key_like(value, min_len=24))
    if word == "auth" and not key_like(value):
        return False  # `"auth": "dXNlcjpwYXNz"` in a docker config, not `auth: required`
    if len(value) < (6 if bare else 4) or (value.isdigit() and len(value) < 8):
        return False
    if not _plain_value(value):
        return False
    password = word.startswith(("pass", "_pass", "_pwd"))
    if bare and _looks_like_code(match, value, lowered_key, password=password):
        return False
    if password:
        return True
    if " " in value:
        # A quoted phrase after `secret:` is a passphrase when it carries a digit or a symbol.
        return not bare and re.search(r"[^A-Za-z\s.,'?-]", value) is not None
    if _CODE_NAME.match(value):
        return False  # `private_key: "_EllipticCurvePrivateKey"` is a type, not a key
    return _has_digit(value) or len(value) >= 24 or key_like(value)


def _looks_like_code(
    match: re.Match[str], value: str, lowered_key: str, *, password: bool
) -> bool:
    """A bare value that is a call, a subscript, an attribute chain, a type or a variable.

    A bare word after a password key is only taken for a variable name when it repeats the key:
    `DB_PASSWORD=super_secret` in an env file is a password.
    """
    if _CODE_EXPR.match(value):
        return True  # `token = get_token()`, `api_key = os.environ["KEY"]`
    if _DOTTED_NAME.match(value) and not (password and match.group("sep") == ":"):
        if not _has_digit(value):
            return True  # `secret = settings.secret` (but `ya29.a0AfH6...` is a token)
        if match.group("sep") == ":":
            return True  # `def sign(private_key: ed25519.Ed25519PrivateKey, ...)`
    if not password and _CODE_NAME.match(value):
        return True  # `TOKEN_ENDS = TSPECIALS`, `token = next_token`
    name = value.lower().strip("_")
    return name in (lowered_key.strip("_-"), lowered_key.rpartition(".")[2].strip("_-"))


def _assignment_kind(match: re.Match[str], text: str) -> str:
    word = match.group("word")
    key = _full_key(match, text).lower()
    if word.startswith(("pass", "_pass", "_pwd")):
        return "password"
    if word == "token":
        return "token"
    if "aws" in key:
        return "aws_secret_key"
    if "api" in key:
        return "api_key"
    return "secret"


def _assignment(anchor: str, trigger: str) -> _Rule:
    """`<name containing anchor> <sep> <value>` in code, env files, YAML, JSON and CLI flags.

    One rule per anchor word because a pattern that starts with a single literal is found by a
    fast substring search; an alternation of keywords is tried at every position.
    """
    source = rf"""(?P<key>(?P<word>{anchor})[a-z0-9_.\-]{{0,40}}+)
        (?:\\?["'])?
        (?::[\x20\t]*[a-z_][a-z0-9_.]{{0,40}}+(?:\[[a-z0-9_.,\x20]{{0,40}}\])?
           (?:[\x20\t]*\|[\x20\t]*none)?[\x20\t]+(?==))?    # type hint: `token: str = ...`
        [\x20\t]*(?P<sep>:=|=>|=(?!=)|:)[\x20\t]*          # not `==`: a comparison
        (?!["']?\[redacted)
        (?: "(?P<dq>(?:[^"\\\r\n]|\\[^\r\n]){{1,512}}+)"
          | \\"(?P<edq>(?:[^"\\\r\n]|\\[^"\r\n]){{1,512}}+)\\"
          | '(?P<sq>(?:[^'\r\n]|''){{1,512}}+)'
          | (?P<bare>(?:[^\s"'`\\;&,]|[;&,](?![a-z_][a-z0-9_.\-]{{0,40}}=)){{1,512}}+)
        )"""     # a bare value holds `;` `&` `,` unless the next `name=` starts there
    return _Rule("secret", source, (trigger,), judge=_judge_assignment, folded=True,
                 kind_of=_assignment_kind)


# --------------------------------------------------------------------------- other judges


def _value_of(match: re.Match[str], text: str) -> tuple[str, _Span]:
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        while end > start + 1 and text[end - 1] in _TRAILING:
            end -= 1
    return text[start:end], (start, end)


def _judge_flag(match: re.Match[str], text: str) -> list[_Span]:
    """`--password VALUE` on a command line; not the next flag, an env lookup or a mask."""
    value, span = _value_of(match, text)
    if not value or value.startswith("-") or not _plain_value(value):
        return []
    # People choose passwords; machine tokens carry a digit or are long ("--token flag" is prose).
    if match.group("word").startswith("pass") or _has_digit(value) or len(value) >= 24:
        return [span]
    return []


def _flag_kind(match: re.Match[str], text: str) -> str:
    word = match.group("word")
    if word.startswith("pass"):
        return "password"
    if "token" in word:
        return "token"
    return "api_key" if "api" in word else "secret"


def _accept_opaque(match: re.Match[str], text: str) -> bool:
    """Opaque tokens (bearer, `sk-`) carry a digit; a prose phrase almost never does."""
    start, end = _group_span(match)
    return _has_digit(text[start:end])


def _accept_twilio(match: re.Match[str], text: str) -> bool:
    return any(c.isalpha() for c in text[match.start() + 2 : match.end()])


def _judge_url(match: re.Match[str], text: str) -> list[_Span]:
    """`scheme://user:password@host`: the password runs to the last `@` of the URL, so `@`,
    `/` and `#` inside it stay hidden; `host:8080/path@x` is a port, not a password, and
    documentation that names the field (`user:password@`) is left alone."""
    start, end = match.span("rest")
    at = text.rfind("@", start, end)
    if at <= start:
        return []
    value = text[start:at]
    if re.match(r"\d{1,5}(?:/|$)", value) or not _plain_value(value):
        return []
    return [(start, at)]


def _judge_url_token(match: re.Match[str], text: str) -> list[_Span]:
    """`https://<token>@host`: a user name that is really a credential (Sentry DSNs, PATs)."""
    start, end = match.span("secret")
    return [(start, end)] if key_like(text[start:end], min_len=20) else []


def _accept_auth_header(match: re.Match[str], text: str) -> bool:
    start, end = match.span("secret")
    value = text[start:end]
    if not _plain_value(value):
        return False
    if text[end : end + 1] in ("(", "["):
        return False  # `authorization = base64.decodebytes(authorization)`
    # Base64 credentials and opaque tokens mix cases or carry digits; "Unauthorized" does not.
    return _has_digit(value) or len(value) >= 20 or value[1:] != value[1:].lower()


def _judge_user_password(match: re.Match[str], text: str) -> list[_Span]:
    """`curl -u user:pw`, `smbclient -U user%pw`: the part after the first separator."""
    value, (start, end) = _value_of(match, text)
    sep = ":" if ":" in value else "%"
    user, found, password = value.partition(sep)
    if not found or not password or not _plain_value(password):
        return []
    if user.isdigit() and password.isdigit():
        return []  # `docker run -u 1000:1000` is a uid:gid
    offset = start + len(user) + 1
    return [(offset, end)]


def _judge_prose_password(match: re.Match[str], text: str) -> list[_Span]:
    """`my password is Tr0ub4dor&3`: a quoted value, or a word carrying a digit or a symbol;
    `the prod secret is Zq8w...`: after secret / token / key, only a random-looking value."""
    value, span = _value_of(match, text)
    if not _plain_value(value) or len(value) < 4:
        return []
    if not match.group("word").startswith("p"):
        return [span] if key_like(value.strip("'\"`")) else []
    if match.group("bare") is not None and not (
        _has_digit(value) or re.search(r"[^A-Za-z]", value) or value[1:] != value[1:].lower()
    ):
        return []
    return [span]


# Lower-case words joined by hyphens, underscores or spaces: a placeholder or a phrase.
_WORDY = Lazy(r"[a-z]+(?:[-_\x20][a-z]+)*")


def _judge_bare_prose_password(match: re.Match[str], text: str) -> list[_Span]:
    """`with password Kx9!vPq2`: with no `is` or `:` between, only a value no sentence would
    hold: quoted, or mixed case with a digit or symbol (or a symbol, digit and letter), six
    characters or more, not code."""
    value, span = _value_of(match, text)
    value = value.strip("`")
    if len(value) < 6 or not _plain_value(value) or _WORDY.fullmatch(value):
        return []  # `PASSWORD 'choose-one'` in a how-to is a placeholder
    if match.group("bare") is not None:
        if value.startswith(("(", "[", "{", "<")):
            return []  # `password (base64): ...` opens an aside, not a value
        if _CODE_NAME.match(value) or _CODE_EXPR.match(value) or _DOTTED_NAME.match(value):
            return []
        upper = any(c.isupper() for c in value)
        lower = any(c.islower() for c in value)
        symbol = any(not c.isalnum() and c not in "-_." for c in value)
        if not ((upper and lower and (_has_digit(value) or symbol))
                or (symbol and _has_digit(value) and (upper or lower))):
            return []  # `base64-encoded`, `sha256`, `v2.1`: words and versions, not passwords
    return [span]


def _judge_piped_password(match: re.Match[str], text: str) -> list[_Span]:
    for group in ("dq", "sq", "bare", "hdq", "hsq", "hbare"):
        if match.group(group) is not None:
            start, end = match.span(group)
            value = text[start:end]
            return [(start, end)] if len(value) >= 3 and _plain_value(value) else []
    return []


def _judge_pgpass(match: re.Match[str], text: str) -> list[_Span]:
    start, end = match.span("secret")
    return [(start, end)] if _plain_value(text[start:end]) else []


def _accept_mixed_id(match: re.Match[str], text: str) -> bool:
    """An upper-case id after a fixed prefix mixes digits and letters; a shouted word does not."""
    body = text[match.start() + 2 : match.end()]
    return sum(c.isdigit() for c in body) >= 2 and sum(c.isalpha() for c in body) >= 2


_IPV4 = Lazy(r"\d{1,3}(?:\.\d{1,3}){3}")


def _judge_inline_pgpass(match: re.Match[str], text: str) -> list[_Span]:
    """A `.pgpass` line quoted in a command or a sentence: a host with a letter (or `*`), a
    port, and a password that is not a clock reading (`12:30:00:05:59` has no letters)."""
    start, end = match.span("secret")
    value = text[start:end].rstrip(_TRAILING)
    if len(value) < 4 or not _plain_value(value) or _WORDY.fullmatch(value):
        return []  # `host:5432:db:user:choose-one` in a how-to is a placeholder
    host = text[match.start() : start].split(":", 1)[0]
    if not (host == "*" or re.search(r"[A-Za-z]", host) or _IPV4.fullmatch(host)):
        return []
    return [(start, start + len(value))]


def _judge_cloud_secret(match: re.Match[str], text: str) -> list[_Span]:
    """The secret half of a cloud key pair, written after its access key id without a label
    (`AKIA…,wJalr…` in a CSV row, `AKIA… / wJalr…` or `… with secret wJalr…` in prose)."""
    start, end = match.span("secret")
    value = text[start:end]
    return [(start, end)] if key_like(value, min_len=30) else []


_B64_SECRET_WORD = r"(?:password|passwd|passphrase|secret|token|credentials?|api[\x20_\-]?key)"
_B64_WORD_BEFORE = Lazy(_B64_SECRET_WORD + r"s?\W{0,3}(?:[\x20\t]\S{1,20}){0,3}\W{0,3}$")
_B64_VALUE = Lazy(r"[A-Za-z0-9+/]{12,1024}+={0,2}|[A-Za-z0-9_\-]{12,1024}+={0,2}")


def _judge_base64(match: re.Match[str], text: str) -> list[_Span]:
    """A base64 value said to encode a password, token or credential: padded, or carrying a
    digit, or mixing cases as encoded text does (prose words fail all three)."""
    after = match.group("after")
    if after is None or not re.search(_B64_SECRET_WORD, after):  # or just before `base64`
        line_start = max(text.rfind("\n", 0, match.start()) + 1, match.start() - 60)
        if not _B64_WORD_BEFORE.search(_fold(text[line_start : match.start()])):
            return []
    start, end = match.span("secret")
    value = text[start:end]
    if not _B64_VALUE.fullmatch(value) or not _plain_value(value) or _CODE_NAME.match(value):
        return []
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    if value.endswith("=") or _has_digit(value) or (upper >= 2 and lower >= 2):
        return [(start, end)]
    return []


_CSV_SECRET_COLUMN = Lazy(r"password|passwd|secret|token|private[\x20_]?key")
_CSV_HEADER_FIELD = Lazy(r"[A-Za-z][A-Za-z0-9 _./()\-]{0,40}")


def _csv_fields(line: str) -> list[tuple[int, int]]:
    """(start, end) of each field's value in one CSV line: inside its quotes when quoted (a
    quoted field may hold commas and doubled quotes), else the whole field."""
    fields: list[tuple[int, int]] = []
    pos = 0
    while True:
        lead = len(line) - len(line[pos:].lstrip(" "))
        if lead < len(line) and line[lead] == '"':
            end = lead + 1
            while True:
                end = line.find('"', end)
                if end < 0:
                    end = len(line)  # unterminated: the rest of the line
                    break
                if line.startswith('""', end):
                    end += 2
                    continue
                break
            fields.append((lead + 1, end))
            comma = line.find(",", end)
        else:
            comma = line.find(",", pos)
            fields.append((pos, len(line) if comma < 0 else comma))
        if comma < 0:
            return fields
        pos = comma + 1


def _judge_csv(match: re.Match[str], text: str) -> list[_Span]:
    """The credential columns of a CSV export (a cloud console's `credentials.csv`,
    `User name,Password,Access key ID,Secret access key`): the header names the columns, each
    following row with as many fields has those fields replaced, up to a blank line."""
    header = text[match.start() : match.end()].rstrip("\r").split(",")
    if len(header) < 2 or not all(_CSV_HEADER_FIELD.fullmatch(f.strip()) for f in header):
        return []
    columns = [i for i, f in enumerate(header) if _CSV_SECRET_COLUMN.search(f.lower())]
    if not columns:
        return []
    spans: list[_Span] = []
    pos = match.end() + 1
    for _ in range(1000):  # rows of one export; bounded so a huge file stays linear
        if pos >= len(text):
            break
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        line = text[pos:line_end].rstrip("\r")
        fields = _csv_fields(line)
        if len(fields) != len(header) or all(
                _CSV_HEADER_FIELD.fullmatch(line[a:b]) for a, b in fields):
            break  # the export ended, or another header starts (its own match takes over)
        for index in columns:
            start, end = fields[index]
            value = line[start:end].strip()
            if len(value) >= 4 and _plain_value(value):
                lead = start + line[start:end].index(value)
                spans.append((pos + lead, pos + lead + len(value)))
        pos = line_end + 1
    return spans


# Command-line tools that take a credential as an argument, with the flags that carry it.
# Each entry: tool names and the flag pattern (its dq / sq / bare group is the value).
_CLI_VALUE = (r"""(?:"(?P<dq>[^"\r\n]{1,256}+)"|'(?P<sq>[^'\r\n]{1,256}+)'"""
              r"""|(?P<bare>[^\s"'`|;&]{1,256}+))""")
_CLI_TOOLS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlsh", "mariadb", "mariadb-dump",
      "mysqlcheck", "mysqlslap"), rf"(?<=\s)-p{_CLI_VALUE}"),  # `-pPW`: attached, or it prompts
    (("sshpass", "mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport",
      "influx", "az"), rf"(?<=\s)-p(?:[\x20\t]+)?{_CLI_VALUE}"),
    (("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "regctl",
      "cf", "oc"), rf"(?<=\s)-p[\x20\t]+{_CLI_VALUE}"),
    (("7z", "7za", "7zr", "rar", "unrar"), rf"(?<=\s)-p{_CLI_VALUE}"),
    (("zip", "unzip", "sqlcmd", "bcp", "isql"), rf"(?<=\s)-P[\x20\t]*{_CLI_VALUE}"),
    (("redis-cli", "keydb-cli"), rf"(?<=\s)(?:-a|--pass)[\x20\t]+{_CLI_VALUE}"),
    (("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldappasswd", "ldapwhoami",
      "ldapcompare", "ldapmodrdn"), rf"(?<=\s)-w[\x20\t]+{_CLI_VALUE}"),
    (("keytool", "jarsigner"),
     rf"(?<=\s)-(?:src|dest|new)?(?:storepass|keypass)[\x20\t]+{_CLI_VALUE}"),
    (("openssl",),
     rf"(?:(?<=\s)-k[\x20\t]+|(?<=\s)-pass(?:in|out)?[\x20\t]+pass:|(?<=\s)pass:){_CLI_VALUE}"),
    (("xfreerdp", "wlfreerdp"), rf"(?<=\s)/p:{_CLI_VALUE}"),
    (("htpasswd",), rf"(?<=\s)-[a-zA-Z]*b[a-zA-Z]*\s(?:.*\s)?{_CLI_VALUE}[\x20\t]*$"),
    (("cf",), rf"(?<=\s)auth[\x20\t]+\S+[\x20\t]+{_CLI_VALUE}"),
)
_CLI_NEEDS_LOGIN = frozenset(("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras",
                              "crane", "regctl", "az", "cf", "oc"))
@functools.cache
def _cli_flags(tool: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(flag, re.VERBOSE) for tools, flag in _CLI_TOOLS if tool in tools)


def _judge_cli(match: re.Match[str], text: str) -> list[_Span]:
    """Credentials given to a known tool as an argument, up to the end of that command."""
    tool = match.group("tool")
    start = match.end()
    stop = re.compile(r"\n|\|\||&&|(?<!\\)[|;]").search(text, start, start + 2000)
    segment_end = stop.start() if stop else min(len(text), start + 2000)
    segment = text[:segment_end]
    if tool in _CLI_NEEDS_LOGIN and not re.search(r"\blogin\b|\bauth\b|registry|repo\s+add",
                                                  segment[start:]):
        return []  # `docker run -p 8080:80` publishes a port
    spans: list[_Span] = []
    for flag in _cli_flags(tool):
        for found in flag.finditer(segment, start):
            value, span = _value_of(found, segment)
            if len(value) >= 3 and not value.startswith("-") and _plain_value(value):
                spans.append(span)
    return sorted(spans)


_CLI_NAMES = sorted({name for tools, _ in _CLI_TOOLS for name in tools}, key=len, reverse=True)


# --------------------------------------------------------------------------- the rules

# Separators between the lines of a PEM body: real newlines or JSON-escaped "\n".
_PEM_SEP = r"(?:\s|\\[nr])++"
_PEM_HEADER = r"(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\r\n\\]{0,200}+"
_PEM_BEGIN = r"-----BEGIN[A-Z0-9\x20]{0,40}PRIVATE\x20KEY(?:\x20BLOCK)?-----"
_PEM_END = r"-----END[A-Z0-9\x20]{0,40}PRIVATE\x20KEY(?:\x20BLOCK)?-----"
# A truncated body only takes lines that look like key material (long, or padded), so the
# prose after a cut-off paste survives; a bare BEGIN line mentioned in prose is left alone.
_PEM_LINE = r"(?:[A-Za-z0-9+/]{16,}+={0,2}|[A-Za-z0-9+/]{1,15}+={1,2}|=[A-Za-z0-9+/]{4})"
_VALUE = r"""(?: "(?P<dq>[^"\r\n]{1,512}+)" | '(?P<sq>[^'\r\n]{1,512}+)'
              | (?P<bare>[^\s"'`]{1,512}+) )"""
_HERE_VALUE = _VALUE.replace("(?P<", "(?P<h")  # the same value after `<<<` (hdq, hsq, hbare)


# `(?<![A-Za-z0-9_])literal...`: a leading lookbehind hides the literal from the regex
# engine's prefix search (every position is tried, ~10x slower); checking the character
# before the literal after it (`literal(?<![A-Za-z0-9_]literal)...`) means the same.
_LEADING_GUARD = re.compile(
    r"^\(\?<!\[A-Za-z0-9_\]\)(?P<lit>(?:[A-Za-z0-9_\-]|\\\.)+)(?P<rest>.*)$", re.DOTALL
)


def _literal_first(source: str) -> str:
    found = _LEADING_GUARD.match(source)
    if found is None or found.group("rest").startswith(("{", "*", "+", "?")):
        return source
    lit = found.group("lit")
    return f"{lit}(?<![A-Za-z0-9_]{lit}){found.group('rest')}"


def _family(kind: str, triggers: tuple[str, ...], source: str) -> _Rule:
    source = _literal_first(source)
    judge = None
    if kind in ("twilio_key",):
        judge = _when(_accept_twilio)
    elif kind == "plivo_auth_id":
        judge = _when(_accept_mixed_id)
    elif kind == "openai_key":
        judge = _when(_accept_opaque)
    return _Rule(kind, source, triggers, judge=judge)


# Order matters: whole blocks and structured forms first, specific token shapes next, generic
# assignments last. Later rules never match inside a marker (`[` is outside their value sets or
# excluded by a lookahead), so each secret is counted once.
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        rf"""{_PEM_BEGIN}
        (?: (?:{_PEM_SEP}(?:{_PEM_HEADER}|[A-Za-z0-9+/=]++))*+ (?:{_PEM_SEP})? {_PEM_END}
          | (?:{_PEM_SEP}(?:{_PEM_HEADER}|{_PEM_LINE}))++
        )""",
        ("private key",),
    ),
    _Rule(  # SSH.com / Tectia: `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`
        "private_key",
        rf"""----\x20BEGIN\x20SSH2[A-Z\x20]{{0,20}}PRIVATE\x20KEY\x20----
        (?:{_PEM_SEP}(?:[A-Za-z\-]{{1,40}}:[^\r\n\\]{{0,200}}+|{_PEM_LINE}))*+
        (?:{_PEM_SEP}----\x20END\x20SSH2[A-Z\x20]{{0,20}}PRIVATE\x20KEY\x20----)?""",
        ("begin ssh2",),
    ),
    _Rule(  # PuTTY .ppk: the private lines and their MAC
        "private_key",
        rf"""(?:Private-Lines:[\x20\t]*\d{{1,4}}(?:{_PEM_SEP}{_PEM_LINE})++
             (?:{_PEM_SEP}Private-(?:MAC|Hash):[\x20\t]*[0-9a-fA-F]{{20,128}}+)?
           | Private-(?:MAC|Hash):[\x20\t]*[0-9a-fA-F]{{20,128}}+)""",
        ("private-lines", "private-mac", "private-hash"),
    ),
    _Rule(
        "url_password",
        r"""://[^\s:/?\#@"'<>\[\]]{0,256}+:(?P<rest>[^\s"'<>`]{1,512}+)""",
        ("://",),
        judge=_judge_url,
    ),
    _Rule(
        "url_token",
        r"""://(?P<secret>[A-Za-z0-9_\-]{20,256}+)@""",
        ("://",),
        judge=_judge_url_token,
    ),
    _Rule(  # a CSV header naming credential columns, then its rows
        "csv_credential",
        r"(?m)^[a-z][a-z0-9\x20_./()\-]{0,40}(?:,[a-z][a-z0-9\x20_./()\-]{0,40}){1,20}\r?$",
        ("password,", ",password", "secret", "token,", ",token"),
        judge=_judge_csv,
        folded=True,
    ),
    _Rule(  # an access key id, then within the line its secret key without a label
        "aws_secret_key",
        r"""(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])[^\r\n]{0,80}?
        (?<![A-Za-z0-9+/])(?P<secret>[A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])""",
        ("akia", "asia"),
        judge=_judge_cloud_secret,
    ),
    _Rule(  # Alibaba Cloud: `LTAI…` and a 30-character AccessKey secret
        "alibaba_secret_key",
        r"""LTAI[A-Za-z0-9]{20}(?![A-Za-z0-9])[^\r\n]{0,80}?
        (?<![A-Za-z0-9+/])(?P<secret>[A-Za-z0-9]{30})(?![A-Za-z0-9+/=])""",
        ("ltai",),
        judge=_judge_cloud_secret,
    ),
    *(_family(kind, triggers, source) for kind, triggers, source in FAMILIES),
    _Rule(
        "bearer_token",
        r"""authorization["']?[\x20\t]*[:=][\x20\t]*["']?
        (?:(?:bearer|basic|token|bot|digest|apikey|sso-key|key)[\x20\t]+)?
        (?P<secret>(?!\[redacted)[a-z0-9\-._~+/=:]{8,}+)""",
        ("authorization",),
        judge=_when(_accept_auth_header),
        folded=True,
    ),
    _Rule(
        "bearer_token",
        r"(?:bearer|token)(?<![a-z0-9]bearer)(?<![a-z0-9_\-]token)[\x20\t]+"
        r"(?P<secret>[a-z0-9\-._~+/]{16,}+=*)",
        ("bearer", "token "),
        judge=_when(_accept_opaque),
        folded=True,
    ),
    _Rule(  # NuGet / .NET config: <add key="ClearTextPassword" value="..." />
        "password",
        r"""key=["'][^"'<>]{0,60}(?:password|secret|token|apikey|api_key|connectionstring)
        [^"'<>]{0,60}["'][\x20\t]+value=["'](?P<secret>[^"'<>]{1,512}+)["']""",
        ("key=",),
        judge=_when(lambda m, t: _plain_value(t[m.start("secret") : m.end("secret")])),
        folded=True,
    ),
    _Rule(  # <password>...</password>, <db:secret>...</db:secret>
        "password",
        r"""<(?P<tag>[a-z_:.\-]{0,40}(?:password|passwd|secret|token|apikey|api_key)[a-z_:.\-]{0,40})>
        (?P<secret>[^<\r\n]{1,512}+)</(?P=tag)>""",
        ("password>", "passwd>", "secret>", "token>", "apikey>", "api_key>"),
        judge=_when(lambda m, t: _plain_value(t[m.start("secret") : m.end("secret")])),
        folded=True,
    ),
    _Rule(
        "netrc_password",
        r"""(?:\blogin|\baccount)[\x20\t\r\n]+\S{1,256}+[\x20\t\r\n]+
        (?:account[\x20\t\r\n]+\S{1,256}+[\x20\t\r\n]+)?
        password[\x20\t]+(?P<secret>\S{1,512}+)""",
        ("password",),
        judge=_when(lambda m, t: _plain_value(t[m.start("secret") : m.end("secret")])),
        folded=True,
    ),
    _Rule(  # .pgpass: hostname:port:database:username:password
        "pgpass_password",
        r"""(?m)^[\x20\t]*(?:[^:\s\\]|\\.){1,255}+:(?:\d{1,5}|\*):(?:[^:\s\\]|\\.){1,255}+
        :(?:[^:\s\\]|\\.){1,255}+:(?P<secret>[^\r\n]{1,512}+)""",
        (":",),
        judge=_judge_pgpass,
    ),
    _Rule(  # the same line inside a sentence, quotes or an `echo ... >> ~/.pgpass`
        "pgpass_password",
        r"""(?<=[\s`'"(=])(?:[A-Za-z0-9_.\-]{1,253}+|\*):(?:\d{1,5}|\*):[^:\s`'"\\]{1,63}+
        :[^:\s`'"\\]{1,63}+:(?!\[REDACTED)(?P<secret>[^\s`'"]{1,512}+)""",
        (":",),
        judge=_judge_inline_pgpass,
    ),
    *(
        _Rule(  # `password (base64): cGFzc...`, `base64-encoded token: ZGVw...`
            "base64_credential",
            rf"""{word}(?:[\x20\-]?encoded)?
            (?P<after>(?:[\x20\t(,]{{1,2}}[a-z_\-]{{1,20}}){{1,3}})?
            [^\sa-z0-9+/]{{0,3}}(?:[\x20\t]+(?:is|of|was|reads))?[\x20\t:=(),\-]{{1,4}}["'`]?
            (?!\[redacted)(?P<secret>[a-z0-9+/_\-]{{12,1024}}+={{0,2}})""",
            (word,),
            judge=_judge_base64,
            folded=True,
        )
        for word in ("base64", "b64")
    ),
    _Rule(
        "password",
        rf"""(?<![a-z0-9_-])(?:-u|--user|--proxy-user|-U)(?:[\x20\t]++|=)?{_VALUE}""",
        ("-u", "-U"),
        judge=_judge_user_password,
    ),
    *(
        _Rule(  # one rule per tool: a literal start is found by a fast substring search
            "password",
            rf"(?P<tool>{re.escape(name)})(?<![A-Za-z0-9_./\-]{re.escape(name)})(?=[\x20\t])",
            (f"{name} ",),
            judge=_judge_cli,
        )
        for name in _CLI_NAMES
    ),
    _Rule(  # `echo 'PW' | docker login --password-stdin`, `... --password-stdin <<< 'PW'`
        "password",
        rf"""(?:(?:echo|printf)[\x20\t]+(?:-[a-z]{{1,3}}[\x20\t]+)?{_VALUE}[\x20\t]*\|
             (?=[^\r\n|]{{0,200}}(?:--password-stdin|--pass-stdin|--stdin|chpasswd))
           | (?:--password-stdin|--stdin)[^\r\n]{{0,200}}?<<<[\x20\t]*{_HERE_VALUE})""",
        ("-stdin", "chpasswd"),
        judge=_judge_piped_password,
    ),
    _Rule(
        "secret",
        rf"""(?<![a-z0-9_-])--(?P<word>pass(?:word|wd|phrase)?|token|secret|api[-_]?key
            |access[-_]?token|auth[-_]?token|client[-_]?secret|key|private[-_]?key
            |http[-_]?password|ftp[-_]?password)[\x20\t]++
        (?!["']?\[redacted){_VALUE}""",
        ("--",),
        judge=_judge_flag,
        folded=True,
        kind_of=_flag_kind,
    ),
    _Rule(
        "password",
        rf"""(?P<word>password|passphrase|passcode|passwd|pwd|secret|token|key)s?
        (?:[\x20\t]+(?:for|of|on)[\x20\t]+\S{{1,64}})?
        [\x20\t]+(?:is|was|are|to|becomes|reads)[\x20\t]+(?:now[\x20\t]+|set[\x20\t]+to[\x20\t]+|still[\x20\t]+)?
        (?!\[redacted){_VALUE}""",
        ("pass", "pwd", "secret", "token", "key"),
        judge=_judge_prose_password,
        folded=True,
    ),
    _Rule(  # `password for the staging box: blue-Mango-77`
        "password",
        rf"""(?P<word>pass(?:word|phrase|code))s?[\x20\t]+(?:for|of|on)
        (?:[\x20\t]+[^\s:=]{{1,40}}+){{1,4}}+[\x20\t]*[:=][\x20\t]*
        (?!["']?\[redacted){_VALUE}""",
        ("pass",),
        judge=_judge_prose_password,
        folded=True,
    ),
    _Rule(  # `log in with password Kx9!vPq2`, `use the passphrase "…"`
        "password",
        r"""(?P<word>pass(?<![a-z0-9_\-]pass)(?:word|phrase|code))[\x20\t]+
        (?!["']?\[redacted)(?: "(?P<dq>[^"\r\n]{1,512}+)" | '(?P<sq>[^'\r\n]{1,512}+)'
          | (?P<bare>[a-z]{0,64}+[^\sa-z"'`][^\s"'`]{0,511}+) )""",
        ("pass",),
        judge=_judge_bare_prose_password,
        folded=True,
    ),
    _assignment(r"pass(?:word|wd|phrase|code)", "pass"),
    _assignment(r"_pass(?![a-z])", "_pass"),  # REDIS_PASS=, DB_PASS:
    _assignment(r"_pwd", "_pwd"),
    _assignment(r"secret", "secret"),
    _assignment(r"token", "token"),
    _assignment(r"key", "key"),
    _assignment(r"(?<![a-z])_?auth(?![a-z])", "auth"),
    _assignment(r"credentials?(?![a-z])", "credential"),
    _assignment(r"signature", "signature"),
)


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _apply(rule: _Rule, text: str, found: list[str]) -> str:
    haystack = _fold(text) if rule.folded else text
    pieces: list[str] = []
    pos = 0
    for match in rule.pattern.finditer(haystack):
        if match.start() < pos:
            continue  # inside a value an earlier match of this rule already replaced
        spans = rule.judge(match, text) if rule.judge is not None else [_group_span(match)]
        if not spans:
            continue
        kind = rule.kind_of(match, text) if rule.kind_of is not None else rule.kind
        for start, end in spans:
            if start < pos or end <= start:
                continue
            pieces.append(text[pos:start])
            pieces.append(_marker(kind))
            pos = end
            found.append(kind)
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def redact(text: str) -> Redaction:
    """Replace every recognised secret with `[REDACTED:<kind>]`, keeping the text around it."""
    # Replacements only remove text or add markers, so triggers absent now stay absent.
    lowered = text.lower()
    found: list[str] = []
    for rule in _RULES:
        if any(trigger in lowered for trigger in rule.triggers):
            text = _apply(rule, text, found)
    return Redaction(text=text, count=len(found), kinds=tuple(sorted(set(found))))


def scrub(text: str) -> str:
    """Every recognised secret replaced by its marker: the rule for secrets in text entering
    the store from any source (applied by the service's intake door)."""
    return redact(text).text


def sanitize_for_storage(text: str, *, redact_secrets: bool = True) -> str:
    """Captured conversation (hooks, other tools' records): `<private>` blocks removed, then
    `scrub`.

    Only captured conversation drops `<private>` blocks: a `remember` or `update` call, a
    seeded doc or an export file holds text someone chose to store, where the tag may be the
    subject (the docs explain it) and an unclosed one would hide the rest of the document.
    """
    text = strip_private(text)
    return scrub(text) if redact_secrets else text


def scrub_values(value: Any, clean: Callable[[str], str] = scrub) -> Any:
    """`value` (JSON-like metadata) with every string in it, keys included, passed to `clean`."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): scrub_values(v, clean) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_values(v, clean) for v in value]
    return value

