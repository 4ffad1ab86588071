"""Secret redaction applied before anything from a conversation is stored.

Memories outlive the session that produced them and are injected into later prompts, so a
credential pasted once would otherwise resurface forever. The rules lean towards safety (a false
positive costs a few characters of context, a false negative leaks a key) while leaving ordinary
prose and code alone. Every pattern is compiled at import, starts with a literal or a small
character set where possible, and uses bounded or possessive quantifiers, so a multi-megabyte
transcript is scanned in linear time on the hook fast path. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Redaction", "redact", "sanitize_for_storage", "strip_private"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """Redacted text, how many secrets were replaced, and their distinct kinds (sorted)."""

    text: str
    count: int
    kinds: tuple[str, ...]


# --------------------------------------------------------------------------- <private> blocks

# Opening and closing tags only; `<private/>` and `<privateKey>` are not tags of ours.
_PRIVATE_TAG = re.compile(r"<(/?)private(?:\s[^<>]{0,200})?>", re.IGNORECASE)


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

# Callbacks see the match (possibly against the ASCII-lowercased text) and the original text,
# which has the same length, so spans index both.
_Accept = Callable[[re.Match[str], str], bool]
_KindOf = Callable[[re.Match[str], str], str]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One secret shape: each accepted match has its secret group replaced by a marker.

    `folded` rules are written in lowercase and run against lowercased text: re.IGNORECASE
    disables the literal-prefix search and made those scans ten times slower.
    """

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]  # lowercase substrings; the rule is skipped unless one occurs
    groups: tuple[str | int, ...] = (0,)  # the first group that took part is replaced
    folded: bool = False
    accept: _Accept | None = None
    kind_of: _KindOf | None = None


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


_DIGIT = re.compile(r"[0-9]")
_ALNUM = re.compile(r"[A-Za-z0-9]")


def _has_digit(value: str) -> bool:
    return _DIGIT.search(value) is not None


# Words that follow "token:" / "password:" in prose or type hints rather than being a value.
_NOT_A_VALUE_WORDS = """
    a an and are as at be been being but by can cannot could did do does else for from had has
    have here how if in into is it its may might must no not now of on once only or our should
    so such than that the their them then there these they this those to too use used uses using
    very was we were what when where which while who why will with would yes you your
    none null nil true false undefined empty missing unset required optional string str bytes
    int integer bool boolean number any object dict list text value values bearer basic token
    tokens password passwords secret secrets redacted hidden masked placeholder example
    env environ environment see below above credentials creds pass pwd
"""
_NOT_A_VALUE = frozenset(_NOT_A_VALUE_WORDS.split())

_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_]|%\(|\{\{|<[^>]*>$|\*+$|[xX]{3,}$|\.{3}$|…$|\#[0-9A-Fa-f]{3,8}$)"
)
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
# Digit-free snake_case, ALL_CAPS, CamelCase and camelCase names: variables, constants and
# classes in code, not credentials.
_CODE_NAME = re.compile(
    r"^_*(?:[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)+)_*$"
)
# Docstring fields describe a parameter; what follows is prose.
_DOC_FIELDS = (":param ", ":type ", ":ivar ", ":var ", ":cvar ", "@param ", ":raises ")
_HARMLESS_KEY = re.compile(
    r"tokens|tokeniz|^(?:max|min|num|n)_"
    r"|(?:count|type|len|length|size|limit|budget|usage|ttl|expiry|expires|expires_at|expires_in"
    r"|url|uri|endpoint|path|file|dir|name|field|header|prompt|label|hint|policy|pattern|regex"
    r"|env|var|source|provider|manager|mode|format|version|rotation|required|enabled|[_.\-]id)$"
)
_CAMEL_ID = re.compile(r"[a-z]Id$")
_SECRET_KEY_NAME = re.compile(
    r"(?:api|access|private|auth|signing|encryption|master|session|secret|client)[_\-]?key"
)
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _full_key(match: re.Match[str], text: str) -> str:
    """The whole identifier around the matched keyword (`DB_PASSWORD`, `max_tokens`)."""
    start = match.start("key")
    floor = max(start - 64, 0)
    while start > floor and text[start - 1] in _IDENT_CHARS:
        start -= 1
    return text[start : match.end("key")]


def _assignment_value(match: re.Match[str], text: str) -> tuple[str, bool]:
    for name in ("dq", "sq", "bare"):
        if match.group(name) is not None:
            return text[match.start(name) : match.end(name)], name == "bare"
    return "", True


def _accept_assignment(match: re.Match[str], text: str) -> bool:
    """Skip counts, type hints, placeholders, env lookups, code expressions and prose words.

    People choose passwords, so any remaining value of a password key counts. Tokens, keys and
    secrets are machine-generated: they carry a digit or are long, which keeps lexer code
    (`token = Operator`) and colour tables (`Token: "#fff"`) intact.
    """
    key = _full_key(match, text)
    lowered_key = key.lower()
    if _HARMLESS_KEY.search(lowered_key) or _CAMEL_ID.search(key):
        return False
    key_start = match.end("key") - len(key)
    if text[max(key_start - 8, 0) : key_start].endswith(_DOC_FIELDS):
        return False
    word = match.group("word")
    if word == "key" and not _SECRET_KEY_NAME.search(lowered_key):
        return False  # `key: value`, `primary_key = 5`, `cache_key = ...`
    value, bare = _assignment_value(match, text)
    value = value.strip()
    if len(value) < (6 if bare else 4) or (value.isdigit() and len(value) < 8):
        return False
    if value.lower() in _NOT_A_VALUE or _PLACEHOLDER.match(value):
        return False
    if _ALNUM.search(value) is None:
        return False  # a mask such as `:****` or `-----`
    password = word.startswith(("pass", "_pass", "_pwd"))
    if bare and _looks_like_code(match, text, value, lowered_key, password=password):
        return False
    if password:
        return True
    if " " in value or _CODE_NAME.match(value):
        return False  # `private_key: "_EllipticCurvePrivateKey"` is a type, not a key
    return _has_digit(value) or len(value) >= 24


def _looks_like_code(
    match: re.Match[str], text: str, value: str, lowered_key: str, *, password: bool
) -> bool:
    """A bare value that is a call, a subscript, an attribute chain, a type or a variable.

    A bare word after a password key is only taken for a variable name when it repeats the key:
    `DB_PASSWORD=super_secret` in an env file is a password.
    """
    following = text[match.end() : match.end() + 1]
    if following in ("(", "["):
        return True  # `token = get_token()`, `api_key = os.environ["KEY"]`
    if _DOTTED_NAME.match(value):
        if not _has_digit(value):
            return True  # `secret = settings.secret` (but `ya29.a0AfH6...` is a token)
        if match.group("sep") == ":" and following in (",", ")"):
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


def _accept_flag(match: re.Match[str], text: str) -> bool:
    """`--password VALUE` on a command line; not the next flag, an env lookup or a mask."""
    group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
    value = text[match.start(group) : match.end(group)]
    if not value or value.startswith(("-", "$", "%")) or _ALNUM.search(value) is None:
        return False
    if value.lower() in _NOT_A_VALUE or _PLACEHOLDER.match(value):
        return False
    # People choose passwords; machine tokens carry a digit or are long ("--token flag" is prose).
    return match.group("word").startswith("pass") or _has_digit(value) or len(value) >= 24


def _flag_kind(match: re.Match[str], text: str) -> str:
    word = match.group("word")
    if word.startswith("pass"):
        return "password"
    if "token" in word:
        return "token"
    return "api_key" if "api" in word else "secret"


def _accept_opaque(match: re.Match[str], text: str) -> bool:
    """Opaque tokens (bearer, `sk-`) carry a digit; a prose phrase almost never does."""
    start, end = match.span("secret")
    return _has_digit(text[start:end])


def _accept_url_password(match: re.Match[str], text: str) -> bool:
    """`scheme://user:password@host` in documentation names the field instead of filling it."""
    value = text[match.start("secret") : match.end("secret")]
    return value.lower() not in _NOT_A_VALUE and not _PLACEHOLDER.match(value)


def _accept_auth_header(match: re.Match[str], text: str) -> bool:
    start, end = match.span("secret")
    value = text[start:end]
    if value.lower() in _NOT_A_VALUE or _PLACEHOLDER.match(value):
        return False
    if text[end : end + 1] in ("(", "["):
        return False  # `authorization = base64.decodebytes(authorization)`
    # Base64 credentials and opaque tokens mix cases or carry digits; "Unauthorized" does not.
    return _has_digit(value) or len(value) >= 20 or value[1:] != value[1:].lower()


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.VERBOSE)


# Separators between the lines of a PEM body: real newlines or JSON-escaped "\n".
_PEM_SEP = r"(?:\s|\\[nr])++"
_PEM_HEADER = r"(?:Proc-Type|DEK-Info|Version|Comment|Hash):[^\r\n\\]{0,200}+"
_PEM_BEGIN = r"-----BEGIN[A-Z0-9\x20]{0,40}PRIVATE\x20KEY(?:\x20BLOCK)?-----"
_PEM_END = r"-----END[A-Z0-9\x20]{0,40}PRIVATE\x20KEY(?:\x20BLOCK)?-----"
# A truncated body only takes lines that look like key material (long, or padded), so the
# prose after a cut-off paste survives; a bare BEGIN line mentioned in prose is left alone.
_PEM_LINE = r"(?:[A-Za-z0-9+/]{16,}+={0,2}|[A-Za-z0-9+/]{1,15}+={1,2}|=[A-Za-z0-9+/]{4})"
_TOK = r"[A-Za-z0-9_\-]"


def _assignment(anchor: str, trigger: str) -> _Rule:
    """`<name containing anchor> <sep> <value>` in code, env files, YAML, JSON and CLI flags.

    One rule per anchor word because a pattern that starts with a single literal is found by a
    fast substring search; an alternation of keywords is tried at every position.
    """
    pattern = _rx(
        rf"""(?P<key>(?P<word>{anchor})[a-z0-9_.\-]{{0,40}}+)
        ["']?
        (?::[\x20\t]*[a-z_][a-z0-9_.]{{0,40}}+(?:\[[a-z0-9_.,\x20]{{0,40}}\])?
           (?:[\x20\t]*\|[\x20\t]*none)?[\x20\t]*(?==))?      # type hint: `token: str = ...`
        [\x20\t]*(?P<sep>:=|=>|=(?!=)|:)[\x20\t]*          # not `==`: a comparison
        (?!["']?\[redacted)
        (?: "(?P<dq>[^"\r\n]{{1,512}}+)"
          | '(?P<sq>[^'\r\n]{{1,512}}+)'
          | (?P<bare>[^\s"'`,;&<>(){{}}\[\]]{{1,512}}+)
        )"""
    )
    return _Rule(
        "secret",
        pattern,
        (trigger,),
        groups=("dq", "sq", "bare"),
        folded=True,
        accept=_accept_assignment,
        kind_of=_assignment_kind,
    )


# Order matters: whole blocks and structured forms first, specific token shapes next, generic
# assignments last. Later rules never match inside a marker (`[` is outside their value sets or
# excluded by a lookahead), so each secret is counted once.
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        _rx(
            rf"""{_PEM_BEGIN}
            (?: (?:{_PEM_SEP}(?:{_PEM_HEADER}|[A-Za-z0-9+/=]++))*+ (?:{_PEM_SEP})? {_PEM_END}
              | (?:{_PEM_SEP}(?:{_PEM_HEADER}|{_PEM_LINE}))++
            )"""
        ),
        ("private key",),
    ),
    _Rule(
        "url_password",
        _rx(r"""://[^\s:/?\#@"'<>\[\]]{0,256}+:(?P<secret>[^\s/?\#@"'<>\[\]]{1,512}+)@"""),
        ("://",),
        groups=("secret",),
        accept=_accept_url_password,
    ),
    _Rule(
        "slack_webhook",
        _rx(r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9_/\-]{8,200}+)"),
        ("hooks.slack.com",),
        groups=("secret",),
    ),
    _Rule("anthropic_key", _rx(rf"sk-ant-{_TOK}{{20,}}+"), ("sk-ant-",)),
    _Rule(
        "openai_key",
        _rx(rf"sk-(?<!{_TOK}sk-)(?P<secret>(?:proj-|svcacct-|admin-)?{_TOK}{{20,}}+)"),
        ("sk-",),
        accept=_accept_opaque,
    ),
    _Rule("aws_access_key_id", _rx(r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"), ("akia", "asia")),
    _Rule(
        "github_token",
        _rx(r"gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _Rule("gitlab_token", _rx(rf"glpat-{_TOK}{{20,}}+"), ("glpat-",)),
    _Rule("slack_token", _rx(r"xox[abposr]-[A-Za-z0-9\-]{10,}+"), ("xox",)),
    _Rule(
        "stripe_key",
        _rx(r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}+"),
        ("_live_", "_test_"),
    ),
    _Rule("google_api_key", _rx(r"AIza[A-Za-z0-9_\-]{35}"), ("aiza",)),
    _Rule("npm_token", _rx(r"npm_(?<![A-Za-z0-9]npm_)[A-Za-z0-9]{36}"), ("npm_",)),
    _Rule("huggingface_token", _rx(r"hf_(?<![A-Za-z0-9]hf_)[A-Za-z0-9]{30,}+"), ("hf_",)),
    _Rule(
        "jwt",
        _rx(rf"eyJ(?<!{_TOK}eyJ){_TOK}{{8,}}+\.{_TOK}{{8,}}+\.{_TOK}*+"),
        ("eyj",),
    ),
    _Rule(
        "bearer_token",
        _rx(
            r"""authorization["']?[\x20\t]*[:=][\x20\t]*["']?
            (?:(?:bearer|basic|token|bot|digest)[\x20\t]+)?
            (?P<secret>(?!\[redacted)[a-z0-9\-._~+/=:]{8,}+)"""
        ),
        ("authorization",),
        groups=("secret",),
        folded=True,
        accept=_accept_auth_header,
    ),
    _Rule(
        "bearer_token",
        _rx(r"bearer(?<![a-z0-9]bearer)[\x20\t]+(?P<secret>[a-z0-9\-._~+/]{16,}+=*)"),
        ("bearer",),
        groups=("secret",),
        folded=True,
        accept=_accept_opaque,
    ),
    _Rule(
        "secret",
        _rx(
            r"""(?<![a-z0-9_-])--(?P<word>pass(?:word|wd)?|token|secret|api[-_]?key
                |access[-_]?token|auth[-_]?token)[\x20\t]++
            (?!["']?\[redacted)
            (?: "(?P<dq>[^"\r\n]{1,512}+)" | '(?P<sq>[^'\r\n]{1,512}+)'
              | (?P<bare>[^\s"'`;&|<>]{1,512}+) )"""
        ),
        ("--",),
        groups=("dq", "sq", "bare"),
        folded=True,
        accept=_accept_flag,
        kind_of=_flag_kind,
    ),
    _assignment(r"pass(?:word|wd|phrase)", "pass"),
    _assignment(r"_pass(?![a-z])", "_pass"),  # REDIS_PASS=, DB_PASS:
    _assignment(r"_pwd", "_pwd"),
    _assignment(r"secret", "secret"),
    _assignment(r"token", "token"),
    _assignment(r"key", "key"),
)


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _apply(rule: _Rule, text: str, found: list[str]) -> str:
    haystack = _fold(text) if rule.folded else text
    pieces: list[str] = []
    pos = 0
    for match in rule.pattern.finditer(haystack):
        if rule.accept is not None and not rule.accept(match, text):
            continue
        kind = rule.kind_of(match, text) if rule.kind_of is not None else rule.kind
        start, end = next(
            (match.span(group) for group in rule.groups if match.group(group) is not None),
            match.span(),
        )
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


def sanitize_for_storage(text: str, *, redact_secrets: bool = True) -> str:
    """Everything a conversation contributes to a memory passes through here before storage."""
    text = strip_private(text)
    return redact(text).text if redact_secrets else text
