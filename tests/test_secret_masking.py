"""Secret masking: every kind on realistic samples, text that must survive, and properties."""

from __future__ import annotations

import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory.secret_masking import (
    REDACTED_PREFIX,
    MaskedText,
    SecretMatch,
    find_secrets,
    mask_secrets,
)
from tests.data import chat_with_secrets as chat

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GHP = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV01"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
RSA_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4Z+fBl5Kx0bE0mQ8G1pV3hN7x\n"
    "c2FtcGxla2V5ZGF0YWZvcnRlc3RzMDEyMzQ1Njc4OWFiY2RlZg==\n"
    "-----END RSA PRIVATE KEY-----"
)

# (text, masked text): one or more realistic samples per kind.
MASKED = [
    # private keys
    (
        f"Here is my key:\n{RSA_KEY}\nCan you check it?",
        "Here is my key:\n[REDACTED:private_key]\nCan you check it?",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMw\n"
        "QyNTUxOQAAACDx\n-----END OPENSSH PRIVATE KEY-----",
        "[REDACTED:private_key]",
    ),
    (
        "pasted half a key:\n-----BEGIN PRIVATE KEY-----\n"
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcw==\n\nwhat now?",
        "pasted half a key:\n[REDACTED:private_key]\n\nwhat now?",
    ),
    # AWS
    (f"export AWS_ACCESS_KEY_ID={AWS_ID}", "export AWS_ACCESS_KEY_ID=[REDACTED:aws_key]"),
    (f"the key id {AWS_ID} is leaked", "the key id [REDACTED:aws_key] is leaked"),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws_secret]"),
    (f'"SecretAccessKey": "{AWS_SECRET}"', '"SecretAccessKey": "[REDACTED:aws_secret]"'),
    # the secret in prose after its key id (it used to be kept: no assignment, no keyword)
    (
        f"AWS key {AWS_ID} with secret {AWS_SECRET}.",
        "AWS key [REDACTED:aws_key] with secret [REDACTED:aws_secret].",
    ),
    (f"{AWS_ID} {AWS_SECRET}", "[REDACTED:aws_key] [REDACTED:aws_secret]"),
    (  # a 40-character hex commit after the key id (no upper case) is no secret key
        f"{AWS_ID} was rotated in 0123456789abcdef0123456789abcdef01234567",
        "[REDACTED:aws_key] was rotated in 0123456789abcdef0123456789abcdef01234567",
    ),
    # Azure connection strings, SendGrid, Discord webhooks, curl -u, DB_PASS (all used to be kept)
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
        "EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:api_key];"
        "EndpointSuffix=core.windows.net",
    ),
    (
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=abcDEF123ghiJKL456mnoPQR789stuVWX012yzAB34c=",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=[REDACTED:api_key]",
    ),
    (
        "SENDGRID_API=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 ok",
        "SENDGRID_API=[REDACTED:sendgrid_key] ok",
    ),
    (
        "hook: https://discord.com/api/webhooks/123456789012345678/"
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEf",
        "hook: https://discord.com/api/webhooks/123456789012345678/[REDACTED:discord_webhook]",
    ),
    (
        "curl -u admin:hunter2pass https://api.example.com",
        "curl -u admin:[REDACTED:password] https://api.example.com",
    ),
    ('curl --user "admin:two words" x', 'curl --user "admin:[REDACTED:password]" x'),
    (
        "docker login -u me -p Sup3rSecret! registry.example.com",
        "docker login -u me -p [REDACTED:password] registry.example.com",
    ),
    ('sshpass -p "two words" ssh host', 'sshpass -p "[REDACTED:password]" ssh host'),
    (
        "client_secret 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",
        "client_secret [REDACTED:google_oauth_secret]",
    ),
    (
        'DB_PASS="pa55word!"\nSMTP_PASS=Zx9vB7nM2qW',
        'DB_PASS="[REDACTED:password]"\nSMTP_PASS=[REDACTED:password]',
    ),
    # GitHub / GitLab
    (f"git push with {GHP} please", "git push with [REDACTED:github_token] please"),
    (f"GITHUB_TOKEN={GITHUB_PAT}", "GITHUB_TOKEN=[REDACTED:github_token]"),
    # glued to a name by `_`: as secret as alone
    (f"set TOKEN_{GHP} in CI", "set TOKEN_[REDACTED:github_token] in CI"),
    (
        "use key_sk-proj-aB3dE5gH7jK9mN1pQ3sT5vX7z in the call",
        "use key_[REDACTED:openai_key] in the call",
    ),
    ("STRIPE_sk_live_4eC39HqLyjWDarjtT1zdp7dc", "STRIPE_[REDACTED:stripe_key]"),
    (
        f"git clone https://x-access-token:{GHP.replace('ghp', 'ghs')}@github.com/o/r.git",
        "git clone https://x-access-token:[REDACTED:github_token]@github.com/o/r.git",
    ),
    ("token glpat-xY3zAbCdEfGhIjKlMnOp12", "token [REDACTED:gitlab_token]"),
    # Slack
    (
        "SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "SLACK_BOT_TOKEN=[REDACTED:slack_token]",
    ),
    ("use xoxp-2222-3333-4444-abcdef0123 for it", "use [REDACTED:slack_token] for it"),
    (
        "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX now",
        "post to https://hooks.slack.com/services/[REDACTED:slack_webhook] now",
    ),
    # OpenAI / Anthropic / Google / Stripe
    (
        "OPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678",
        "OPENAI_API_KEY=[REDACTED:openai_key]",
    ),
    (
        "my key is sk-4fG7hJ2kL9mN3pQ6rS8tU1vW5xY0zA2b, why 401?",
        "my key is [REDACTED:openai_key], why 401?",
    ),
    (
        "client = Anthropic(api_key='sk-ant-api03-Xy7_abcDEF123ghiJKL456mnoPQR789-stuVWX0')",
        "client = Anthropic(api_key='[REDACTED:anthropic_key]')",
    ),
    (
        "maps?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&q=x",
        "maps?key=[REDACTED:google_api_key]&q=x",
    ),
    (
        "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'",
        "stripe.api_key = '[REDACTED:stripe_key]'",
    ),
    ("restricted rk_live_51H8abcDEFghiJKLmno0123 key", "restricted [REDACTED:stripe_key] key"),
    # JWT and Authorization headers
    (f"the cookie holds {JWT}.", "the cookie holds [REDACTED:jwt]."),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:bearer_token]"),
    (
        "curl -H 'Authorization: Bearer 7f3c9a1e0b2d4c6e8f' https://api.example.com",
        "curl -H 'Authorization: Bearer [REDACTED:bearer_token]' https://api.example.com",
    ),
    (
        'headers = {"Authorization": "Bearer abc.def-ghi"}',
        'headers = {"Authorization": "Bearer [REDACTED:bearer_token]"}',
    ),
    ("send bearer a1b2c3d4e5f6g7h8i9j0 along", "send bearer [REDACTED:bearer_token] along"),
    (
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "Authorization: Basic [REDACTED:basic_auth]",
    ),
    # URLs and connection strings with credentials
    ("postgres://app:pw@db/x", "postgres://app:[REDACTED:password]@db/x"),
    (
        "DATABASE_URL=postgresql://app:s3cr3t-Pa55@db.internal:5432/app?sslmode=require",
        "DATABASE_URL=postgresql://app:[REDACTED:password]@db.internal:5432/app?sslmode=require",
    ),
    ("redis://:hunter2@cache:6379/0", "redis://:[REDACTED:password]@cache:6379/0"),
    (
        "mongodb+srv://admin:Tr0ub4dor&3@cluster0.abcde.mongodb.net/test",
        "mongodb+srv://admin:[REDACTED:password]@cluster0.abcde.mongodb.net/test",
    ),
    (
        "https://a1b2c3d4e5f6a7b8c9d0e1f2@registry.example.com/pkg",
        "https://[REDACTED:url_credentials]@registry.example.com/pkg",
    ),
    (
        "Server=db;Database=app;User Id=sa;Password=Secr3t!;",
        "Server=db;Database=app;User Id=sa;Password=[REDACTED:password];",
    ),
    # assignments: the key stays, the value goes
    ("password = hunter2", "password = [REDACTED:password]"),
    ("DB_PASSWORD=letmein", "DB_PASSWORD=[REDACTED:password]"),
    ("mysql --password=letmein -u root", "mysql --password=[REDACTED:password] -u root"),
    (
        '{"user": "bob", "password": "correct horse battery staple"}',
        '{"user": "bob", "password": "[REDACTED:password]"}',
    ),
    ('{"password":"a\\"b", "user": "bob"}', '{"password":"[REDACTED:password]", "user": "bob"}'),
    (
        "db:\n  user: app\n  password: letmein\n",
        "db:\n  user: app\n  password: [REDACTED:password]\n",
    ),
    ("Your password: Sommer2024!", "Your password: [REDACTED:password]"),
    ("PGPASSWORD='x7#kL9' psql", "PGPASSWORD='[REDACTED:password]' psql"),
    ("passwd: s3cret", "passwd: [REDACTED:password]"),
    ("pwd=Zz91ab", "pwd=[REDACTED:password]"),
    ("client_secret: 9d8f7e6a5b4c3d2e1f0a", "client_secret: [REDACTED:secret]"),
    ("SECRET_KEY = 'django-insecure-abc123'", "SECRET_KEY = '[REDACTED:secret]'"),
    ("API_KEY=abc123def456", "API_KEY=[REDACTED:api_key]"),
    ("X-Api-Key: 9f8e7d6c5b4a", "X-Api-Key: [REDACTED:api_key]"),
    ("apikey: 'q1w2e3r4t5'", "apikey: '[REDACTED:api_key]'"),
    ("access_key=ZXCV1234asdf", "access_key=[REDACTED:api_key]"),
    ("refresh_token: 1//0gabc123XYZ", "refresh_token: [REDACTED:token]"),
    (
        "https://api.example.com/v1/items?token=abc123def&page=2",
        "https://api.example.com/v1/items?token=[REDACTED:token]&page=2",
    ),
    ('auth_token := "f00dcafe"', 'auth_token := "[REDACTED:token]"'),
    # issue 15 §2: tokens and command-line and prose forms that escaped
    (
        "SLACK_APP_TOKEN xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef",
        "SLACK_APP_TOKEN [REDACTED:slack_token]",
    ),
    ("login with hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh now", "login with [REDACTED:hf_token] now"),
    (
        "//registry.npmjs.org/:_authToken=npm_AbCdEf0123456789AbCdEf0123456789AbCd",
        "//registry.npmjs.org/:_authToken=[REDACTED:npm_token]",
    ),
    ("npm_AbCdEf0123456789AbCdEf0123456789AbCd", "[REDACTED:npm_token]"),
    (
        "password = pypi-AgEIcHlwaS5vcmcCJGI4YjY1NzU3LTkzZjQtNGM1Ny1hZjY1LTY4ZjYy",
        "password = [REDACTED:pypi_token]",
    ),
    (
        "twine upload -p pypi-AgEIcHlwaS5vcmcCJGI4YjY1NzU3LTkzZjQtNGM1Ny1hZjY1LTY4ZjYy dist/*",
        "twine upload -p [REDACTED:pypi_token] dist/*",
    ),
    (
        "docker login -u me --password-stdin <<< dckr_pat_AbCdEf0123456789AbCdEf01",
        "docker login -u me --password-stdin <<< [REDACTED:docker_token]",
    ),
    (
        "X-Shopify-Access-Token: shpat_0123456789abcdef0123456789abcdef",
        "X-Shopify-Access-Token: [REDACTED:shopify_token]",
    ),
    ("square secret sq0csp-AbCdEf0123456789AbCdEf0123", "square secret [REDACTED:square_token]"),
    (
        "export VAULT_TOKEN=hvs.CAESIJlWh8OxQyYcN3cVZfTkNv4xXh0bGkHDa3b2c1d0Wq9yGh4KHGh2cy5",
        "export VAULT_TOKEN=[REDACTED:vault_token]",
    ),
    (
        "doctl auth init -t dop_v1_" + "0123456789abcdef" * 4,
        "doctl auth init -t [REDACTED:digitalocean_token]",
    ),
    (
        "curl -H 'Authorization: token 0123456789abcdef0123456789abcdef01234567' api",
        "curl -H 'Authorization: token [REDACTED:token_auth]' api",
    ),
    ("mysql -u root -pS3cr3tPass appdb", "mysql -u root -p[REDACTED:password] appdb"),
    ("mysqldump -h db -u app -p'x7#kL9' app", "mysqldump -h db -u app -p'[REDACTED:password]' app"),
    ("mysql --password S3cr3t -u root", "mysql --password [REDACTED:password] -u root"),
    ("psql --password 'two words' x", "psql --password '[REDACTED:password]' x"),
    ("my password is: letmein", "my password is: [REDACTED:password]"),
    ("My password is: S3cr3t! Keep it.", "My password is: [REDACTED:password] Keep it."),
    ("my password is hunter2, remember it", "my password is [REDACTED:password], remember it"),
    ("the wifi password: letmein, ok?", "the wifi password: [REDACTED:password], ok?"),
    (
        "the passphrase was Tr0ub4dor&3 back then",
        "the passphrase was [REDACTED:password] back then",
    ),
]

MUST_NOT_MASK = [
    "bypass = true; compass = north; first_pass = true",
    "the first pass: we read everything, then ssh -u user:name host",
    "curl -u $USER:$TOKEN https://api.example.com",
    "docker run -p 8080:80 nginx && mkdir -p /tmp/x && docker login -p $PASS r",
    "snake_case_names and ask-me-anything-2024 stay as they are",
    "the password is in the vault",
    "I forgot my password again, can you help me reset it?",
    "Password: use the one from the vault",
    "password_field = form.get('password')",
    "tok = get_token()",
    "token = get_token()",
    "password = request.form['password']",
    "password = user_password",
    "password = None",
    "api_key: process.env.API_KEY",
    "password=${DB_PASSWORD}",
    'client_secret: "<your-client-secret>"',
    'password: "********"',
    "    password: str",
    "def login(user: str, password: str | None = None) -> bool:",
    "if password == 'x': raise ValueError",
    "max_tokens = 500",
    "num_tokens: 4096",
    "Each token: 4 bytes on average.",
    "The tokenizer splits text into tokens; the secret is practice.",
    "Use the access key: press ctrl+k.",
    "primary key: id",
    "The keyboard: nice. The monkey: 12345678.",
    "Passing: yes",
    "The bearer of this letter is my friend.",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "fixed in commit 3f2a9c1d4e5b6a7980f1e2d3c4b5a69788796a5b yesterday",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "sha256sum says e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  file.tar",
    "See https://example.com/docs/setup?lang=en#install for details.",
    "http://localhost:8080/api and https://example.com:8443/x?a=b@c",
    "ssh deploy@10.0.0.5 -p 2222",
    "git clone git@github.com:owner/repo.git",
    "Write to bob.smith@example.com or ops+alerts@example.org.",
    "ssh://git@github.com/owner/repo",
    "The sk-learn style of naming; task-runner and desk-lamp-2000.",
    "pip install scikit-learn==1.5.0",
    "AKIA is how AWS key ids start, e.g. AKIA followed by 16 characters.",
    "The JWT header always starts with eyJ because of base64.",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "Remember: the Wi-Fi password is on the fridge.",
    "Keys: ctrl+p opens the palette, ctrl+f forgets.",
    "```python\nsecret = os.environ['APP_SECRET']\n```",
    "Set `token` to the value from the dashboard.",
    "password: ''",
    "[REDACTED:password] was already masked",
    "mkdir -p build && ssh -p 2222 host",
    "gcc -pthread -pedantic main.c",
    "mysql -p  # it prompts for the password",
    "mysql -u root -p appdb",
    "mysql --password -u root",
    "mysql --password $DB_PASSWORD -u root",
    "use --password-file /run/secrets/db instead",
    "my password is in the vault",
    "my password is: use the one from the vault",
    "the password is 12 characters long",
    "The password was reset yesterday.",
    "hf_hub_download(repo_id='x') and npm_config_cache are names",
    "the xapp- prefix marks Slack app tokens",
    "PyPI tokens start with pypi- and Docker's with dckr_pat_.",
    "Vault tokens start with hvs. and DigitalOcean's with dop_v1_.",
    "Authorization: token please, not a password",
    "Password: yes, it was reset.",
    "Is the password: wrong, or the user name?",
    "my password is: expired and I cannot log in",
    "my password is stored and encrypted",
    # a plain word before "and" &c. is an instruction more often than a password
    "Set the password: blank and save",
    "password: Enter or leave empty",
    "password: mandatory and checked",
    "my password is: whatever and I dont care",
    "pwd: home then ls",
]


@pytest.mark.parametrize(("text", "masked"), MASKED, ids=[m for _t, m in MASKED])
def test_realistic_secrets_are_masked_with_their_kind(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked
    assert mask_secrets(masked) == masked


def test_a_masked_text_is_not_scanned_again() -> None:
    """What the turn masked where it entered passes every later mask as the same object."""
    masked = mask_secrets("deploy with ghp_ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR  \n")
    assert isinstance(masked, MaskedText) and "[REDACTED:" in masked
    assert mask_secrets(masked) is masked
    stripped = masked.strip()
    assert isinstance(stripped, MaskedText) and mask_secrets(stripped) is stripped


@pytest.mark.parametrize("text", MUST_NOT_MASK)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_secrets(text) == []
    assert mask_secrets(text) == text


def test_find_secrets_gives_sorted_spans_of_the_secret_only() -> None:
    text = f"user app, url postgres://app:pw1@db/x, key {AWS_ID}, password = hunter2"
    matches = find_secrets(text)
    assert [m.kind for m in matches] == ["password", "aws_key", "password"]
    assert [text[m.start : m.end] for m in matches] == ["pw1", AWS_ID, "hunter2"]
    assert matches == sorted(matches, key=lambda m: m.start)
    assert isinstance(matches[0], SecretMatch)


def test_overlapping_detections_mask_their_union_under_the_specific_kind() -> None:
    assert mask_secrets(f"token = {GHP}") == "token = [REDACTED:github_token]"
    assert mask_secrets(f"token={AWS_ID}-x9") == "token=[REDACTED:aws_key]"


def test_two_private_keys_in_one_message_are_masked_separately() -> None:
    text = f"{RSA_KEY}\nand the other one\n{RSA_KEY.replace('RSA ', 'EC ')}"
    assert mask_secrets(text) == "[REDACTED:private_key]\nand the other one\n[REDACTED:private_key]"


def test_non_ascii_text_keeps_its_positions() -> None:
    text = "İstanbul notes — password = hunter2 — ß"
    assert mask_secrets(text) == "İstanbul notes — password = [REDACTED:password] — ß"


def test_100_kb_of_chat_has_every_secret_masked_and_its_prose_kept() -> None:
    """A long paste is masked whole (how fast: `bench.secret_masking`, target 10 ms)."""
    text = chat.chat_with_secrets()
    masked = mask_secrets(text)
    for secret in (*chat.PASSWORDS, chat.GHP, chat.AWS_ID, chat.JWT, chat.RSA_BODY):
        assert secret not in masked
    assert masked.count("[REDACTED:password]") == text.count("password = hunter") > 0
    assert masked.count("[REDACTED:github_token]") == text.count(chat.GHP) > 0
    assert masked.count("[REDACTED:aws_key]") == text.count(chat.AWS_ID) > 0
    assert masked.count("[REDACTED:jwt]") == text.count(chat.JWT) > 0
    assert masked.count("[REDACTED:private_key]") == text.count(chat.RSA_BODY) > 0
    assert masked.count(chat.PROSE) == text.count(chat.PROSE) > 0


# ------------------------------------------------------------------------------ properties

_FRAGMENTS = [
    "password",
    "PASSWORD",
    "token",
    "api_key",
    "secret",
    "key",
    "pwd",
    "=",
    ":",
    ":=",
    " = ",
    ": ",
    '"',
    "'",
    "`",
    " ",
    "\n",
    ",",
    ";",
    "&",
    "@",
    "/",
    "://",
    "[REDACTED:",
    "]",
    "[",
    "(",
    "Bearer ",
    "Authorization: ",
    "Basic ",
    "sk-",
    "sk-ant-",
    "ghp_",
    "AKIA",
    "AIza",
    "eyJ",
    ".",
    "xoxb-",
    "glpat-",
    "sk_live_",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "hooks.slack.com/services/",
    "https://user:",
    "hunter2",
    "xapp-1-",
    "hf_",
    "npm_",
    "mysql ",
    " -p",
    "--password ",
    " is: ",
    "<",
    ">",
    "$",
    "#",
    "İ",
    "ß",
    "\\",
]
_fuzz_text = st.lists(
    st.one_of(
        st.sampled_from(_FRAGMENTS), st.text(string.ascii_letters + string.digits, max_size=40)
    ),
    max_size=30,
).map("".join)

_WORDS = [
    *["the", "a", "password", "token", "key", "secret", "is", "in", "vault", "bearer", "of"],
    *["this", "letter", "my", "we", "use", "set", "reset", "forgot", "please", "help", "ok"],
    *["sure", "billing", "service", "pool", "size", "keyboard", "monkey", "access", "primary"],
    *["api", "login", "user", "host", "example"],
]
_prose = st.lists(
    st.tuples(st.sampled_from(_WORDS), st.sampled_from([" ", " ", ", ", ". ", "\n"])),
    max_size=60,
).map(lambda pairs: "".join(word + sep for word, sep in pairs))

_alnum = string.ascii_letters + string.digits


def _random(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=size)


_secret_values = st.one_of(
    _random(string.ascii_uppercase + string.digits, 16).map(lambda s: "AKIA" + s),
    _random(_alnum, 36).map(lambda s: "ghp_" + s),
    _random(_alnum, 30).map(lambda s: "sk-proj-" + s + "7"),
    _random(_alnum + "_-", 35).map(lambda s: "AIza" + s),
    _random(_alnum, 24).map(lambda s: "sk_live_" + s),
    _random(_alnum, 34).map(lambda s: "hf_" + s),
    _random(_alnum, 36).map(lambda s: "npm_" + s),
    _random(_alnum, 24).map(lambda s: "xapp-1-" + s),
    st.tuples(_random(_alnum, 20), _random(_alnum, 30)).map(lambda p: f"eyJ{p[0]}.eyJ{p[1]}.sig"),
)
_assignment_secrets = st.tuples(
    st.sampled_from(["password = ", "DB_PASSWORD=", '"password": "', "api_key: ", "token="]),
    _random(_alnum, 10).map(lambda s: s + "9"),
)


@settings(max_examples=300, deadline=None)
@given(_fuzz_text)
@example("password = x[REDACTED:token]y")
@example("token=AKIAIOSFODNN7EXAMPLE-x9 :")
def test_masking_is_idempotent(text: str) -> None:
    once = mask_secrets(text)
    assert mask_secrets(once) == once


@settings(max_examples=150, deadline=None)
@given(_prose)
def test_prose_without_secrets_is_returned_unchanged(text: str) -> None:
    masked = mask_secrets(text)
    assert masked == text
    assert len(masked) <= len(text)


@settings(max_examples=150, deadline=None)
@given(_prose, _secret_values, _prose)
def test_embedded_secrets_never_survive(before: str, secret: str, after: str) -> None:
    masked = mask_secrets(f"{before} {secret} {after}")
    assert secret not in masked
    assert REDACTED_PREFIX in masked
    assert mask_secrets(masked) == masked


@settings(max_examples=100, deadline=None)
@given(_prose, _assignment_secrets, _prose)
def test_assigned_secrets_never_survive_and_keys_stay(
    before: str, assignment: tuple[str, str], after: str
) -> None:
    key, value = assignment
    closing = '"' if key.endswith('"') else ""
    masked = mask_secrets(f"{before}\n{key}{value}{closing}\n{after}")
    assert value not in masked
    assert key in masked
