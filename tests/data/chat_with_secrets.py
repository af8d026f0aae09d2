"""100 KB of chat with secrets in it, shared by tests/test_secret_masking.py (every secret is
masked, the prose kept) and `bench.secret_masking` (how long that takes)."""

from __future__ import annotations

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
RSA_BODY = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4Z+fBl5Kx0bE0mQ8G1pV3hN7x"
RSA_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n-----END RSA PRIVATE KEY-----"
PASSWORDS = tuple(f"hunter{i}" for i in range(5))
PROSE = (
    "Sure! The billing service uses pgbouncer in transaction mode; the password is in the "
    "vault and the token expires hourly. Call get_token() and see https://example.com/docs. "
)
SIZE = 100_000


def chat_with_secrets() -> str:
    """200 chunks of prose, each ending in one secret (5 passwords in assignments, a GitHub
    token, an AWS key id, a JWT, an RSA private key, in turn), cut at `SIZE` characters."""
    samples = [f"password = {p}" for p in PASSWORDS] + [GHP, AWS_ID, JWT, RSA_KEY]
    chunks = [PROSE * 3 + samples[i % len(samples)] + "\n" for i in range(200)]
    return "".join(chunks)[:SIZE]
