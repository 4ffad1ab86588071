"""No secret pasted into a conversation reaches the database through the real Stop hook.

Each sample is a realistic line holding one synthetic secret; the test reads the raw store
afterwards (the SQLite file and its WAL, or every row of the PostgreSQL schema), so the index,
lineage and metadata are checked too, not only the memory text. Each backend in turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pma_mcp.config import Settings
from tests.backends import stored_bytes
from tests.test_hooks import (
    REPLY,
    Hook,
    Transcript,
    assert_quiet,
    make_hook,
    stop_input,
)


@pytest.fixture
def hook(tmp_path: Path, store_settings: Settings) -> Hook:
    return make_hook(tmp_path, store_settings)

# (kind, line as it would appear in a prompt or reply, the secret part that must not survive)
SECRETS: list[tuple[str, str, str]] = [
    ("aws access key id", "aws configure set aws_access_key_id AKIAQ3EGRT5HNX2YLW7B",
     "AKIAQ3EGRT5HNX2YLW7B"),
    ("aws secret key", "export AWS_SECRET_ACCESS_KEY=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",
     "q8Hn3Zt0Vw5Ly2Kx9Rb6Mc1Ps4Dj7Fg0Ha3Ue5Wi"),
    ("aws sts key id", "temporary creds ASIAZ7XK2MP4QR8TUV3N expire soon",
     "ASIAZ7XK2MP4QR8TUV3N"),
    ("openai project key", 'client = OpenAI(api_key="sk-proj-Rk4mT9vX2bN7qW3eY8uP1zL6cH5jD0fG")',
     "Rk4mT9vX2bN7qW3eY8uP1zL6cH5jD0fG"),
    ("openai key", "OPENAI_API_KEY: sk-9fKq2LmZ8xW4vR7tB1nY6pD3sH5gJ0cA",
     "9fKq2LmZ8xW4vR7tB1nY6pD3sH5gJ0cA"),
    ("anthropic key", "use sk-ant-api03-Xy7Wq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0Sa-Qe2Tu4Io6Pa8Mn0Bv here",
     "Xy7Wq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0Sa-Qe2Tu4Io6Pa8Mn0Bv"),
    ("github token in a clone url",
     "git clone https://ghp_R8mK2xN7qT4vW9bL3pZ6cY1hJ5dF0gS2aE8uI@github.com/acme/api",
     "R8mK2xN7qT4vW9bL3pZ6cY1hJ5dF0gS2aE8uI"),
    ("github fine-grained token", "GH_TOKEN=github_pat_11ABCDEFG0x9Yq2Lm7Kp4Rt6Vn1Bz8Hc3Jd5Fg0Sa",
     "11ABCDEFG0x9Yq2Lm7Kp4Rt6Vn1Bz8Hc3Jd5Fg0Sa"),
    ("gitlab token", "the runner uses glpat-Zx8Cv7Bn6Mq5Wr4Et3Yu2I for pushes",
     "Zx8Cv7Bn6Mq5Wr4Et3Yu2I"),
    ("slack bot token", "SLACK_BOT=xoxb-2741938475-5829104738291-Qx7Lm2Kp9Rt4Vn6Bz1Hc3J",
     "2741938475-5829104738291-Qx7Lm2Kp9Rt4Vn6Bz1Hc3J"),
    ("slack user token", "curl -H 'X-Slack: xoxp-1234567890-0987654321-AbCdEfGhIj' slack.com",
     "1234567890-0987654321-AbCdEfGhIj"),
    ("slack webhook", "post to https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/q9W8e7R6t5Y4u3I2",
     "q9W8e7R6t5Y4u3I2"),
    ("jwt", "the cookie was eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
            ".eyJzdWIiOiI0MjQyIiwibmFtZSI6ImRldiJ9.Qm9zc2VzX3NpZ25hdHVyZV8xMjM0NTY",
     "eyJzdWIiOiI0MjQyIiwibmFtZSI6ImRldiJ9"),
    ("bearer header", 'curl -H "Authorization: Bearer 7Hq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0SaQe" https://api',
     "7Hq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0SaQe"),
    ("rsa private key", "-----BEGIN RSA PRIVATE KEY-----\n"
     "MIIEowIBAAKCAQEAu8Zq2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0SaQe2Tu4Io6Pa8Mn0Bv\n"
     "R7tY3uI9oP1aS5dF8gH2jK4lZ6xC0vB3nM7qW9eR1tY5uI8oP2aS4dF6gH0jK3l\n"
     "-----END RSA PRIVATE KEY-----",
     "R7tY3uI9oP1aS5dF8gH2jK4lZ6xC0vB3nM7qW9eR1tY5uI8oP2aS4dF6gH0jK3l"),
    ("openssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n"
     "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
     "QyNTUxOQAAACBz9Kq2Lm7Rt4Vn6Bz1Hc3Jd5Fg0SaQe2Tu4Io6Pa8Mn0Bv==\n"
     "-----END OPENSSH PRIVATE KEY-----",
     "QyNTUxOQAAACBz9Kq2Lm7Rt4Vn6Bz1Hc3Jd5Fg0SaQe2Tu4Io6Pa8Mn0Bv"),
    ("password in an env file", "set DB_PASSWORD=Tr0ub4dor-3-horse in .env", "Tr0ub4dor-3-horse"),
    ("password in yaml", 'database:\n  password: "c0rrect-h0rse-battery"\n  host: db',
     "c0rrect-h0rse-battery"),
    ("secret assignment", "client_secret = 'f3b9c1d7e5a2b8c4d6e0f1a3'", "f3b9c1d7e5a2b8c4d6e0f1a3"),
    ("token assignment", "the deploy used token=Dq8Wm3Xn6Vb9Lk2Jh5Gf in CI",
     "Dq8Wm3Xn6Vb9Lk2Jh5Gf"),
    ("postgres url", "DATABASE_URL=postgres://app:S3cretPassw0rd@db.internal:5432/app",
     "S3cretPassw0rd"),
    ("redis url", "redis://:r3d1sP4ssw0rdX@cache.internal:6379/0 is the broker", "r3d1sP4ssw0rdX"),
    ("stripe live key", "stripe.api_key = sk_live_51HqLm9Kp4Rt6Vn1Bz8Hc3Jd5Fg",
     "51HqLm9Kp4Rt6Vn1Bz8Hc3Jd5Fg"),
    ("google api key", "maps key AIzaSyD8xQ2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0SaQe in the page",
     "SyD8xQ2Lm9Kp4Rt6Vn1Bz8Hc3Jd5Fg0SaQe"),
    ("npm token", "//registry.npmjs.org/:_authToken=npm_Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1Pa0Sd9Fg8Hj7",
     "Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1Pa0Sd9Fg8Hj7"),
    ("huggingface token", "HF_TOKEN is hf_Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb now",
     "Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb"),
    ("api key in json", '{"service": "mail", "api_key": "mk_4f8a2c9e7b1d3f5a6c8e0b2d"}',
     "mk_4f8a2c9e7b1d3f5a6c8e0b2d"),
]


def test_the_corpus_is_large_and_distinct() -> None:
    assert len(SECRETS) >= 20
    assert len({secret for _, _, secret in SECRETS}) == len(SECRETS)


@pytest.mark.parametrize(("kind", "line", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_never_reaches_the_database(
    hook: Hook, tmp_path: Path, kind: str, line: str, secret: str
) -> None:
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.prompt(f"The deploy broke, here is what I ran:\n{line}\nWhat went wrong?")
    path = transcript.write()
    reply = f"{REPLY}\nYou pasted this, which I used to reproduce it:\n{line}\nRotate it now."

    assert_quiet(hook.run("stop", stop_input(path, reply)))

    (row,) = hook.rows()
    assert "[REDACTED:" in row["content"] and "Rotate it now." in row["content"]
    assert secret.encode() not in stored_bytes(hook.settings), kind


def test_redaction_can_be_switched_off(hook: Hook, tmp_path: Path) -> None:
    line, secret = SECRETS[0][1], SECRETS[0][2]
    reply = f"{REPLY}\n{line}"
    assert_quiet(hook.run("stop", stop_input(tmp_path / "none.jsonl", reply),
                          env={"PMA_REDACT": "0"}))
    (row,) = hook.rows()
    assert secret in row["content"]
