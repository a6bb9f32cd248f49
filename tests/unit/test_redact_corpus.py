"""Redaction against a corpus: lines that must lose a secret, and lines that must come
through unchanged (code, hashes, UUIDs, URLs without credentials, prose about secrets).

Each must-redact line names the secret it holds, and the test checks that exact string
is gone while the text around it stays; each must-not line must be returned identical.
The fake keys are assembled from parts so this file itself holds no scannable token.
"""

from __future__ import annotations

import pytest

from marm.text import clean

A = "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"  # 36 characters of token body
HEX40 = "0123456789abcdef0123456789abcdef01234567"

#: (line, the secret in it)
MUST_REDACT: list[tuple[str, str]] = [
    ("password=hunter2", "hunter2"),
    ("password=x", "x"),
    ("PASSWORD=Sup3rS3cret!", "Sup3rS3cret!"),
    ("db password: tr0ub4dor", "tr0ub4dor"),
    ('"password": "s3cr3t-value"', "s3cr3t-value"),
    ("passwd=abc123", "abc123"),
    ("pwd=letmein", "letmein"),
    ("passphrase = correct-horse", "correct-horse"),
    ("token=abc", "abc"),
    ("TOKEN=zz9", "zz9"),
    ("GITHUB_TOKEN=gh-local-thing", "gh-local-thing"),
    ("access_token=ya29.a0AfH6", "ya29.a0AfH6"),
    ("auth_token: q1w2e3", "q1w2e3"),
    ("refresh-token=r3fr3sh", "r3fr3sh"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("AWS_SECRET_ACCESS_KEY: shortone", "shortone"),
    ("secret=s3", "s3"),
    ("client_secret=cl-1234", "cl-1234"),
    ("CLIENT_SECRET = 'quoted-value'", "quoted-value"),
    ("SECRET_KEY=django-insecure-abc", "django-insecure-abc"),
    ("secret_key_base: 9f8e7d", "9f8e7d"),
    ("api_key=k1", "k1"),
    ("API-KEY: key-123", "key-123"),
    ("apikey=abcdef", "abcdef"),
    ("STRIPE_API_KEY=whatever", "whatever"),
    ("private_key=pk-99", "pk-99"),
    ("credentials=user1:pass1", "user1:pass1"),
    ("db.password=hunter2", "hunter2"),
    ("redis_pass=foo", "foo"),
    ("https://api.example.com/v1?token=qwerty&x=1", "qwerty"),
    ("curl -H 'X-Api-Key: abc' https://x.example", "abc"),
    ("postgres://user:pw@host/db", "pw"),
    ("postgresql://admin:S3cure!@db.internal:5432/app", "S3cure!"),
    ("mysql://root:rootpw@127.0.0.1/test", "rootpw"),
    ("redis://:redispass@cache:6379/0", "redispass"),
    ("amqp://guest:guestpw@rabbit//", "guestpw"),
    ("git clone https://bob:hunter22@git.example.com/r.git", "hunter22"),
    ("mongodb+srv://app:m0ng0pw@cluster0.example.net/db", "m0ng0pw"),
    ("ftp://anon:ftppw@files.example.org/pub", "ftppw"),
    ("AKIA" + "IOSFODNN7EXAMPLE is the key id", "AKIA" + "IOSFODNN7EXAMPLE"),
    ("ASIA" + "ZZZZZZZZZZZZZZZZ in the role", "ASIA" + "ZZZZZZZZZZZZZZZZ"),
    ("use ghp_" + A + " for CI", "ghp_" + A),
    ("gho_" + A, "gho_" + A),
    ("github_pat_" + A + "_" + A[:30], "github_pat_" + A + "_" + A[:30]),
    ("glpat-" + "x" * 20, "glpat-" + "x" * 20),
    ("xoxb-" + "1234567890-abcdefghij", "xoxb-" + "1234567890-abcdefghij"),
    ("sk-ant-" + "api03-" + A, "sk-ant-" + "api03-" + A),
    ("OPENAI=sk-proj-" + A, "sk-proj-" + A),
    ("sk_live_" + "a" * 24, "sk_live_" + "a" * 24),
    ("rk_test_" + "b" * 24, "rk_test_" + "b" * 24),
    ("AIza" + "S" * 35, "AIza" + "S" * 35),
    ("Authorization: Bearer " + A, A),
    ("eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0In0" + ".abcdefghijk", "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0In0"),
    ("SG." + "a" * 22 + "." + "b" * 43, "SG." + "a" * 22 + "." + "b" * 43),
    ("pypi-AgEIcHlwaS5vcmc" + "c" * 70, "pypi-AgEIcHlwaS5vcmc" + "c" * 70),
    ("sq0csp-" + "d" * 43, "sq0csp-" + "d" * 43),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n", "b3BlbnNzaC1rZXktdjE="),
]

MUST_NOT: list[str] = [
    "DECISION: use idempotency keys on the payment webhook",
    "FIX: flaky upload test; the root cause was a shared tmp dir",
    "max_tokens=1024 for the summariser",
    "def authenticate(token: str) -> bool:",
    "password = os.environ['DB_PASSWORD']",
    "password=${DB_PASSWORD}",
    "token = getenv('TOKEN')",
    "secret: None",
    "api_key = None",
    "if password == expected:",
    "const token = process.env.TOKEN;",
    "password: {{ vault_db_password }}",
    "we rotate the password every 90 days",
    "the token expired; ask for a new one",
    "reset your password via the settings page",
    "commit 3f2a9c1e5b7d fixed the race",
    "sha1 " + HEX40,
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "session 9b2c1f4e-7a6d-4c3b-8e21-0f5a6b7c8d9e",
    "https://example.com/docs?page=2&lang=en",
    "https://github.com/org/repo/pull/123",
    "postgres://db.internal:5432/app",
    "git@github.com:org/repo.git",
    "http://localhost:8080/health",
    "ssh deploy@prod-3.example.net",
    "mailto:ana@example.com",
    "bypass=true for the cache",
    "compass=north",
    "tokens=42",
    "secret_id=svc-7",
    "token_count=5",
    "password_hint: first pet",
    "token_type=bearer",
    "author=Ana",
    "MAX_RETRIES = 5",
    "if (a < b && c) { return x; }",
    "for i in range(10): print(i)",
    "SELECT id, name FROM users WHERE id = ?",
    "PRAGMA busy_timeout=5000",
    "np.vecdot(a, b)",
    "marm recall 'if (a < b && c)'",
    "the build took 3:45 on CI",
    "version 1.2.3 released 2026-11-30",
    "10.0.0.1 is the gateway",
    "export PATH=$HOME/bin:$PATH",
    "user.name=Ana Lopez",
    "retry_policy: exponential",
    "timeout: 30s",
    "keyboard shortcut ctrl+k",
    "the monkey: a cheeky one",
    "TODO: document the --session flag",
    "color: #ff0000",
    "ts=2026-11-30T12:00:00Z",
    "x = y == z",
    "Bearer tokens go in the Authorization header",
]


def test_corpus_is_large_enough():
    assert len(MUST_REDACT) >= 50 and len(MUST_NOT) >= 50


@pytest.mark.parametrize(("line", "secret"), MUST_REDACT, ids=[str(i) for i in range(len(MUST_REDACT))])
def test_secret_is_redacted(line, secret):
    out = clean(line)
    assert secret not in out.text, out.text
    assert "[REDACTED:" in out.text and out.redacted


@pytest.mark.parametrize("line", MUST_NOT, ids=[str(i) for i in range(len(MUST_NOT))])
def test_innocent_line_is_unchanged(line):
    out = clean(line)
    assert out.text == line and not out.redacted


def test_label_is_kept_and_mixed_text_keeps_the_innocent_part():
    mixed = "deploy: password=hunter2 then max_tokens=1024 at https://example.com/x"
    out = clean(mixed).text
    assert "hunter2" not in out
    assert out.startswith("deploy: password=[REDACTED:") and out.endswith("max_tokens=1024 at https://example.com/x")


def test_the_rules_file_is_detect_secrets_installed_rules():
    import orjson

    from marm import redact

    assert orjson.loads(redact.RULES_FILE.read_bytes())["rules"] == redact.library_rules(), \
        "regenerate with: python -m marm.redact"


def test_redaction_does_not_import_the_library():
    import subprocess
    import sys

    code = ("import sys; from marm.text import clean; "
            "assert clean('token=abc').text == 'token=[REDACTED:password]'; "
            "assert 'detect_secrets' not in sys.modules and 'requests' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
