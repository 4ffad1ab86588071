"""Secret redaction and <private> stripping: what reaches the memory store must hold no secret.

All secrets below are invented and only have the shape of real ones.
"""

from __future__ import annotations

import dataclasses
import random
import string
from collections.abc import Callable
from typing import NamedTuple

import pytest

from pma_mcp.core.redact import Redaction, redact, sanitize_for_storage, strip_private

LEAD = "While debugging the staging deploy I pasted this:"
TRAIL = "Can you tell me why the health check still fails?"


class Case(NamedTuple):
    id: str
    template: str  # `{s}` marks where the secret sits
    secret: str
    kind: str


RSA_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n"
    "9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvre\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH_TRUNCATED = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\n"
    "NhAAAAAwEAAQAAAYEAvQz8Wm3kR2pT9xN4bY7cL1dF6gH0jK5mN8qR3sV2wX9yZ4aB7c"
)
EC_KEY_ENCRYPTED = (
    "-----BEGIN EC PRIVATE KEY-----\n"
    "Proc-Type: 4,ENCRYPTED\n"
    "DEK-Info: AES-128-CBC,9F8E7D6C5B4A39281706F5E4D3C2B1A0\n"
    "\n"
    "q2x7Rk9LmN3pQ8sT1vW4yZ6aB9cD2eF5gH8iJ1kL4mN7oP0qR3sT6uV9wX2yZ5aB\n"
    "8cD1eF4gH7iJ0kL3mN6oP9q=\n"
    "-----END EC PRIVATE KEY-----"
)
SERVICE_ACCOUNT_KEY = (
    "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
    "\\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu"
    "\\n-----END PRIVATE KEY-----"
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

CASES = [
    Case("password-cli-flag", "mysql -u root --password {s} -h db.internal", "Hunt3rPw!",
         "password"),
    Case("token-cli-flag", "gh auth login --token {s} --hostname x", "abc123def456ghi789jkl",
         "token"),
    Case("api-key-cli-flag", 'curl --api-key "{s}" https://api.example.com', "k-1234567890abcd",
         "api_key"),
    Case("redis-pass-env", "REDIS_PASS={s} redis-cli ping", "Zx9Kq2Lm8", "password"),
    Case("db-pass-yaml", "  DB_PASS: {s}", "s3cr3t-Pa55", "password"),
    Case(
        "aws-key-id-env",
        "export AWS_ACCESS_KEY_ID={s}",
        "AKIAIOSFODNN7EXAMPLE",
        "aws_access_key_id",
    ),
    Case(
        "aws-sts-key-id-prose",
        "the assumed role returned {s} as the key id",
        "ASIAY34FZKBOKMUTVV7A",
        "aws_access_key_id",
    ),
    Case(
        "aws-secret-credentials-file",
        "[default]\naws_secret_access_key = {s}\nregion = eu-west-1",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_key",
    ),
    Case(
        "openai-classic",
        "I set the key to {s} and the client worked",
        "sk-T3BlbkFJa8Kq2Lm9Nx4Pr7Sv1Wy5Zb0Cd3Ef6Gh9Ij2Kl5Mn8",
        "openai_key",
    ),
    Case(
        "openai-project",
        'OPENAI_API_KEY="{s}" python app.py',
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5uVw8xYz1_Ab4cD-7eF0gH",
        "openai_key",
    ),
    Case(
        "anthropic",
        "client = Anthropic(api_key='{s}')",
        "sk-ant-api03-Xy9Zk3Lm7Np1Qr5St8Uv2Wx6Yz0Ab4Cd8Ef2Gh6Ij0Kl4Mn8Op2Qr6St0Uv4Wx8Yz2Ab6Cd-AbCdEfAA",
        "anthropic_key",
    ),
    Case(
        "github-classic-pat",
        "git clone https://github.com/acme/api.git after setting GH_TOKEN={s}",
        "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234",
        "github_token",
    ),
    Case(
        "github-oauth",
        "the OAuth app gave me {s} for the CLI",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_token",
    ),
    Case(
        "github-fine-grained",
        "token: {s}",
        "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
        "github_token",
    ),
    Case(
        "slack-bot",
        "SLACK_BOT_TOKEN={s} node bot.js",
        "xoxb-2345678901-3456789012345-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack_token",
    ),
    Case(
        "slack-user",
        "the user token is {s}, rotate it",
        "xoxp-1234567890-1234567890123-1234567890123-0123456789abcdef0123456789abcdef",
        "slack_token",
    ),
    Case(
        "stripe-secret",
        'stripe.api_key = "{s}"',
        "sk_live_51H8xYzAbCdEfGhIjKlMnOpQr0123",
        "stripe_key",
    ),
    Case(
        "stripe-restricted",
        "restricted key {s} only reads charges",
        "rk_live_51H8aBcDeFgHiJkLmNoPqRsTuV4567",
        "stripe_key",
    ),
    Case(
        "google-api-key",
        "maps.googleapis.com/maps/api/js?key={s}&callback=init",
        "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
        "google_api_key",
    ),
    Case(
        "jwt-bearer", 'curl -H "Authorization: Bearer {s}" https://api.example.com/me', JWT, "jwt"
    ),
    Case("jwt-cookie", "the session cookie was {s}; it expired at noon", JWT, "jwt"),
    Case(
        "pem-rsa",
        "Here is the deploy key:\n{s}\nIt is mounted at /etc/ssl.",
        RSA_KEY,
        "private_key",
    ),
    Case(
        "pem-openssh-truncated",
        "my ~/.ssh/id_rsa starts with\n{s}...\n(cut off)",
        OPENSSH_TRUNCATED,
        "private_key",
    ),
    Case("pem-encrypted-ec", "key.pem:\n{s}\nend of file", EC_KEY_ENCRYPTED, "private_key"),
    Case(
        "pem-json-escaped",
        '{{"type": "service_account", "private_key": "{s}\\n", '
        '"client_email": "bot@acme.iam.gserviceaccount.com"}}',
        SERVICE_ACCOUNT_KEY,
        "private_key",
    ),
    Case(
        "env-password",
        "DB_HOST=db.internal\nDB_PASSWORD={s}\nDB_PORT=5432",
        "Tr0ub4dor3x",
        "password",
    ),
    Case(
        "json-password",
        '{{"username": "admin", "password": "{s}", "remember": true}}',
        "correct horse battery staple",
        "password",
    ),
    Case(
        "yaml-password",
        "database:\n  user: app\n  password: {s}\n  pool: 5",
        "Sup3r-S3cret!",
        "password",
    ),
    Case("quoted-env-password", "export PGPASSWORD='{s}' && psql -h db", "p@ss w0rd!#", "password"),
    Case("env-snake-case-password", "DB_PASSWORD={s}\nDB_USER=app", "super_secret_pw", "password"),
    Case("passwd-colon", "smtp passwd: {s} (from the vault)", "mailP4ssw0rd", "password"),
    Case("mysql-pwd", "MYSQL_PWD={s} mysql -u root", "r00tpw2024", "password"),
    Case("cli-password-flag", "mysql --password={s} -h db.internal", "Sup3rS3cret!", "password"),
    Case(
        "client-secret",
        "OAUTH_CLIENT_SECRET={s} ./run.sh",
        "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",
        "google_client_secret",
    ),
    Case(
        "django-secret-hex",
        'SECRET_KEY = "{s}"\nDEBUG = False',
        "9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c",
        "secret",
    ),
    Case(
        "generic-token",
        "set token={s} in the CI settings",
        "4b8f2e9a1c7d3e5f6a0b2c4d6e8f0a1b3c5d7e9f",
        "token",
    ),
    Case(
        "access-token-query",
        "GET https://api.example.com/v1/me?access_token={s}&alt=json",
        "ya29.a0AfH6SMBx3kdT9Qz8LmN2pR7tV1wX3yZ5aB6cD8eF0gH2",
        "google_oauth_token",
    ),
    Case(
        "python-api-key",
        'api_key = "{s}"  # TODO move to env',
        "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
        "api_key",
    ),
    Case("ts-typed-api-key", "const apiKey: string = '{s}';", "AbC123xyz987QwE456rty", "api_key"),
    Case("x-api-key-header", "x-api-key: {s}", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "api_key"),
    Case(
        "url-postgres",
        "DATABASE_URL=postgres://admin:{s}@db.example.com:5432/prod",
        "S3cretPass",
        "url_password",
    ),
    Case(
        "url-https-token",
        "git remote set-url origin https://deploy:{s}@git.example.com/a.git",
        "glT0k3nV4lue99",
        "url_password",
    ),
    Case("url-redis-no-user", "REDIS_URL=redis://:{s}@cache:6379/0", "r3d1sPa55", "url_password"),
    Case(
        "authorization-bearer-opaque",
        "Authorization: Bearer {s}",
        "8f14e45fceea167a5a36dedd4bea2543c0ffee00",
        "bearer_token",
    ),
    Case(
        "authorization-basic",
        "-H 'Authorization: Basic {s}'",
        "YWRtaW46czNjcjN0UGFzcw==",
        "bearer_token",
    ),
    Case(
        "bearer-in-prose",
        "the service expects bearer {s} in the header",
        "tk_9a8b7c6d5e4f3a2b1c0d",
        "bearer_token",
    ),
    Case(
        "slack-webhook",
        "post alerts to https://hooks.slack.com/services/{s} please",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "slack_webhook",
    ),
    Case(
        "npm-token",
        "//registry.npmjs.org/:_authToken={s}",
        "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "npm_token",
    ),
    Case(
        "huggingface",
        "HF_TOKEN={s} huggingface-cli download",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "huggingface_token",
    ),
    Case("gitlab", "GITLAB_TOKEN={s}", "glpat-xY9zK3lM7nP1qR5sT8uV", "gitlab_token"),
    Case(
        "bcrypt-hash",
        "password_hash = '{s}'",
        "$2b$12$KIXQJ8Zx9v5s6M0nYb3cEuT1o2p3q4r5s6t7u8v9w0x1y2z3A4B5C",
        "password",
    ),
    Case("csv-export-password-column", "User name,Password,Console login link\nops,{s},https://c",
         "Qm7!rT2pXw9z", "csv_credential"),
    Case("csv-export-secret-column", "name,client_id,client_secret\nbilling,4f1c9e2a,{s}",
         "Hq8vT2mL-9xZp4_Kw7Nc3RbY6sD1fGuA5oEi", "csv_credential"),
    Case("telnyx-key", "TELNYX_API_KEY=KEY{s}",
         "0193C4D2E5F6A7B8C9D0E1F2A3B4C5D6_Rt5yUi8oPqWsXz3vBn7mKl", "telnyx_key"),
    Case("plivo-auth-id", "the plivo account MA{s} sends the alerts", "Y2ZK7N4QXR8WT1MP3L",
         "plivo_auth_id"),
    Case("pgpass-in-echo", "echo 'pg.prod:5432:app:app_rw:{s}' >> ~/.pgpass", "Vx8#mQ2!zL",
         "pgpass_password"),
    Case("base64-after-password", "the password (base64): {s}", "SHVudGVyMl9EYXlzIzQy",
         "base64_credential"),
    Case("password-before-value", "log in with password {s} and rotate it", "Gq5!uTz9Lp",
         "password"),
    Case("password-for-whom", "password for the build agent: {s}", "mint-Kettle-58", "password"),
    Case("yaml-phrase", "db:\n  password: {s}\n  port: 5432", "Quiet Harbour 2040!", "password"),
    Case("yaml-block-scalar", "smtp:\n  password: >-\n    {s}\n  host: mail",
         "slow Rivers 7 bend", "password"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_secret_is_redacted_and_prose_survives(case: Case) -> None:
    before, after = case.template.split("{s}")
    before, after = before.replace("{{", "{"), after.replace("}}", "}")
    text = f"{LEAD}\n{before}{case.secret}{after}\n{TRAIL}"

    result = redact(text)

    assert case.secret not in result.text
    middle = case.secret[max(len(case.secret) // 2 - 6, 0) :][:12]
    assert middle not in result.text, "a fragment of the secret leaked"
    assert f"[REDACTED:{case.kind}]" in result.text
    assert case.kind in result.kinds
    assert result.count >= 1
    for prose in (LEAD, TRAIL, before, after):
        assert prose in result.text


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25
    assert len({case.kind for case in CASES}) >= 15


@pytest.mark.parametrize(("text", "kind"), [
    ("rotate AKIAZ2Q7RM4K8PLX3VBN and its secret {s} tonight", "aws_secret_key"),
    ("AKIAZ2Q7RM4K8PLX3VBN,{s}", "aws_secret_key"),
    ("Access key ID,Secret access key\nAKIAZ2Q7RM4K8PLX3VBN,{s}\n", "csv_credential"),
])
def test_a_secret_key_beside_its_access_key_id_goes_with_it(text: str, kind: str) -> None:
    secret = "Hq8vT2mL+9xZp4/Kw7Nc3RbY6sD1fGuA5oEi0jWe"
    result = redact(text.format(s=secret))
    assert secret not in result.text and "AKIAZ2Q7RM4K8PLX3VBN" not in result.text
    assert {kind, "aws_access_key_id"} <= set(result.kinds)


def test_an_alibaba_pair_in_prose() -> None:
    result = redact("the aliyun pair is LTAI5tR8wQk2Zb7MxN4pYcVd Zk29fLmQpR7vT3nBwX8yHc5jDsA1eG ok")
    assert result.text == ("the aliyun pair is [REDACTED:alibaba_access_key_id] "
                           "[REDACTED:alibaba_secret_key] ok")


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_redaction_is_idempotent(case: Case) -> None:
    once = redact(case.template.replace("{s}", case.secret)).text
    again = redact(once)
    assert again.text == once
    assert again.count == 0


def test_url_keeps_scheme_user_and_host() -> None:
    result = redact("connect to postgres://admin:hunter2xyz@db.example.com:5432/prod now")
    assert result.text == (
        "connect to postgres://admin:[REDACTED:url_password]@db.example.com:5432/prod now"
    )
    assert result.count == 1


def test_count_and_kinds_cover_every_secret() -> None:
    text = (
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n"
        "GITHUB_TOKEN=ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234\n"
        "DB_PASSWORD=Tr0ub4dor3x\n"
        "also AKIAI44QH8DHBEXAMPLE for the other account"
    )
    result = redact(text)
    assert result.count == 4
    assert result.kinds == ("aws_access_key_id", "github_token", "password")
    assert "GITHUB_TOKEN=[REDACTED:github_token]" in result.text


def test_redaction_result_is_frozen() -> None:
    result = redact("nothing secret here")
    assert result == Redaction("nothing secret here", 0, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.count = 3  # type: ignore[misc]


NEGATIVES = [
    "the --secret flag is documented in the manual",
    "pass --password-file /etc/mysql/pw.txt instead",
    "run it with --token $GITHUB_TOKEN from the environment",
    "Tests pass: 12 of 12, and the bypass: none.",
    "Please reset your password and try again.",
    "Enter your password: then press enter.",
    "The password must be at least 12 characters long.",
    "token_count = 5",
    "max_tokens: 4096",
    '"usage": {"input_tokens": 6, "output_tokens": 22}',
    "The tokenizer splits words into tokens.",
    "token = get_token()",
    "secret = settings.secret",
    "api_key = os.environ['OPENAI_API_KEY']",
    "client = OpenAI(api_key=api_key)",
    "if password == confirm_password:",
    "def check_password(password: str) -> bool:",
    "password: ${DB_PASSWORD}",
    "password: ********",
    "secretName: tls-cert",
    "session_key_ttl: 3600",
    "The primary_key = 42 and cache_key: users",
    "Note about the token: it expires after an hour.",
    "Authorization header is required for this endpoint.",
    "The bearer of bad news arrived late.",
    "token = Operator; self.token = nextchar",
    "Token.Name.Builtin: '#0C7441',",
    "DHPrivateKeyWithSerialization = DHPrivateKey",
    "def sign(private_key: ed25519.Ed25519PrivateKey, data: bytes) -> bytes:",
    'password = ":****"',
    ":param refresh_token: Refresh token string.",
    "self._passphrase = passphrase",
    "TOKEN_ENDS = TSPECIALS | WSP; token = next_token",
    "See https://user:password@host.example/path for the URL shape.",
    "Authorization: Unauthenticated requests get a 401.",
    "Files that start with -----BEGIN PRIVATE KEY----- must never be committed.",
    "password=None, token: Optional[str] = None",
    "headers = {'Authorization': f'Bearer {api_key}'}",
    "env:\n  API_TOKEN: ${{ secrets.API_TOKEN }}",
    "Visit https://example.com/docs?page=2 for details.",
    "git clone git@github.com:acme/api.git",
    "export PATH=/usr/local/bin:$PATH",
    "Commit 9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c1234abcd fixed the bug.",
    "uuid 123e4567-e89b-12d3-a456-426614174000 is the request id",
    "the task-management-system-for-teams-and-orgs repo",
    "import secrets; secrets.token_hex(32)",
    "Keys: press the key: Enter to continue.",
    "Use sk-learn? No, scikit-learn is the package name.",
    "The quick brown fox jumps over the lazy dog.",
    "",
    # Ordinary coding talk: hashes, UUIDs, base64 and public keys without a secret word stay.
    "Commit 3f9a2b7c1d4e5f60718293a4b5c6d7e8f9012345 fixed it; see also a1b2c3d.",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "The request id was 6f1c2e9a-4b7d-4e2a-9c3f-1a2b3c4d5e6f and it timed out.",
    "img = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk'",
    "base64.b64encode(b'hello world') gives aGVsbG8gd29ybGQ=",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl u@host",
    "docker run -p 8080:80 -u 1000:1000 nginx:1.25",
    "mysql -u root -p mydb   # prompts for the password",
    "Use `git push -u origin feature/login` and `ps -u root`.",
    "token = tokenizer.encode(text)[0]",
    "pk = models.AutoField(primary_key=True)",
    "jwt.decode(token, key, algorithms=['HS256'])",
    "secret_name = 'prod/db/credentials'",
    "token_type: bearer\nexpires_in: 3600",
    "2024-05-01 10:00:00:123 INFO starting worker",
    "curl -u $USER:$TOKEN https://api.example.com",
    "http://localhost:8080/users/@alice is the profile page",
    "The password is stored in the keychain.",
    "password: must be rotated quarterly; see the runbook.",
    "I went to the shop: the key was under the mat.",
    # Near misses of the captured-conversation shapes (CSV exports, phrases, .pgpass, base64).
    "name,role,team\nalice,admin,payments\nbob,viewer,search",
    "Access key ID,Secret access key\n(none yet: create one in the console)",
    "user,password\nalice,\nbob,",
    "password: at least 12 characters, one of them a digit",
    "The meeting moved: 12:30:00:05:59 was the old timestamp format.",
    "the password base64-encoded in the header is just an example",
    "store the password hash (sha256) and never the password itself",
    "password OAuth flow and password reset live in auth/views.py",
    "the base64 token format is documented in RFC 4648",
    "I keep the access key AKIA-style ids out of the repo, see the runbook.",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_left_alone(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.count == 0
    assert result.kinds == ()


def test_non_ascii_text_keeps_alignment() -> None:
    # U+0130 lowercases to two characters; spans from the folded text must still line up.
    text = "İstanbul İİ office: token=abcdEFGH1234 and Ünïcödé prose after"
    result = redact(text)
    assert result.text == "İstanbul İİ office: token=[REDACTED:token] and Ünïcödé prose after"


# ------------------------------------------------------------------------------ speed


def test_five_megabytes_of_realistic_text() -> None:
    """Completes on 5 MB (no timing asserted: shared CI machines make timings flaky)."""
    rng = random.Random(7)
    chunks = [
        "The export job retried forever because retries = -1; cap them at 5.\n",
        "def load(path: str) -> dict[str, int]:\n    return json.loads(open(path).read())\n",
        '{"type": "assistant", "usage": {"input_tokens": 6, "output_tokens": 41}}\n',
        "Visit https://docs.example.com/guide#tokens and read about max_tokens: 4096.\n",
        "password: must be rotated quarterly; see the secret manager runbook.\n",
        "".join(rng.choices(string.ascii_letters + string.digits + "+/", k=200)) + "\n",
    ]
    planted = "DB_PASSWORD=Tr0ub4dor3x and ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234\n"
    parts: list[str] = []
    size = 0
    while size < 5_000_000:
        chunk = planted if len(parts) % 500 == 0 else rng.choice(chunks)
        parts.append(chunk)
        size += len(chunk)
    text = "".join(parts)

    result = redact(text)

    assert "Tr0ub4dor3x" not in result.text
    assert "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234" not in result.text
    assert result.count >= 2 * (len(parts) // 500)


def _base64_blob() -> str:
    return "".join(
        random.Random(3).choices(string.ascii_letters + string.digits + "+/=", k=5_000_000)
    )


# Built lazily so collecting the tests stays cheap.
PATHOLOGICAL: dict[str, Callable[[], str]] = {
    "one-long-word": lambda: "a" * 5_000_000,
    "base64-blob": _base64_blob,
    "repeated-jwt-prefix": lambda: "eyJ" * 1_700_000,
    "repeated-sk-prefix": lambda: "sk-" * 1_700_000,
    "repeated-keyword": lambda: "password" * 625_000,
    "repeated-assignment": lambda: "token=" * 850_000,
    "pem-begin-without-end": lambda: "-----BEGIN RSA PRIVATE KEY-----\n" * 155_000,
    "pem-huge-body": lambda: (
        "-----BEGIN PRIVATE KEY-----\n" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n" * 150_000
    ),
    "url-without-at": lambda: "a://b:" * 830_000,
    "private-tags": lambda: "<private" * 625_000,
    "authorization-repeated": lambda: "Authorization: " * 330_000,
    "csv-header-repeated": lambda: "password,secret\n" * 310_000,
    "access-key-ids-repeated": lambda: "AKIA0000000000000000 " * 240_000,
    "pgpass-fragments": lambda: " h:1:db:u:" * 500_000,
    "base64-after-password": lambda: "password base64 " * 310_000,
    "yaml-block-scalars": lambda: "password: |\n" * 400_000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_inputs_complete(name: str) -> None:
    """Inputs built to trigger catastrophic backtracking; each runs in ~0.1-0.6 s here, so a
    regression shows as a suite that stalls for minutes. No timing is asserted."""
    text = PATHOLOGICAL[name]()
    assert len(text) >= 4_800_000
    assert isinstance(redact(text), Redaction)
    assert isinstance(strip_private(text), str)


# ------------------------------------------------------------------------------ <private>


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("keep <private>drop</private> keep", "keep  keep"),
        ("a<PRIVATE>drop</Private>b", "ab"),
        ("before\n<private>\nline one\nline two\n</private>\nafter", "before\n\nafter"),
        ("kept <private>everything after an unclosed tag", "kept "),
        ("a <private>x <private>nested</private> still private</private> b", "a  b"),
        ('a <private reason="pii">drop</private > b', "a  b"),
        ("a </private> b", "a  b"),
        ("one <private>1</private> two <private>2</private> three", "one  two  three"),
        ("no tags at all", "no tags at all"),
        (
            "<privateKey> and <private/> are not our tags",
            "<privateKey> and <private/> are not our tags",
        ),
        ("", ""),
    ],
)
def test_strip_private(text: str, expected: str) -> None:
    assert strip_private(text) == expected


def test_sanitize_strips_private_then_redacts() -> None:
    text = (
        "Deploy notes. <private>my home address is 1 Main St</private> "
        "Use GITHUB_TOKEN=ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234 for CI."
    )
    assert sanitize_for_storage(text) == (
        "Deploy notes.  Use GITHUB_TOKEN=[REDACTED:github_token] for CI."
    )
    unredacted = sanitize_for_storage(text, redact_secrets=False)
    assert "Main St" not in unredacted
    assert "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf1234" in unredacted


def test_sanitize_removes_secret_inside_unclosed_private_block() -> None:
    text = "summary first <private>password=hunter2xyz and the rest"
    assert sanitize_for_storage(text) == "summary first "
