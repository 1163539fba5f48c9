"""Random secrets of real shapes, written into sentences the way people paste them, for measuring redaction's recall.

    python tests/generated_secrets.py [--seed N]     # prints a sample of each phrasing

Every secret is drawn fresh from `random.Random(seed)` in its provider's documented shape (length, alphabet,
prefix), so nothing here is a real credential and no detector can have been written against these exact
strings. Each shape is named in a few ways ("api key", "AWS secret access key", "db password") and each name
is put in every phrasing: before the secret or after it, with `is`, a colon, an arrow or nothing between,
quoted or in backticks, in a question, as an env line, JSON or YAML. Multi-line secrets (a private key, a
service-account file) get phrasings of their own. `benchmarks/redaction.py` reports the share caught, per
shape and per phrasing; `tests/test_redaction.py` checks the set of the fixed `SEED`.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass

SEED = 32  # issue 32; any seed gives a set of the same make-up
BASE62 = string.ascii_letters + string.digits
BASE64 = BASE62 + "+/"
URLSAFE = BASE62 + "-_"
HEX = "0123456789abcdef"
SYMBOLS = "!@#$%^&*-_+=?"
WORDS = ["summer", "harbor", "falcon", "meter", "river", "orange", "tiger", "maple", "copper", "winter", "delta", "rocket"]


@dataclass(frozen=True)
class Case:
    shape: str  # what kind of secret, e.g. "aws_secret_key"
    phrasing: str  # the template's name, e.g. "is-after-name"
    text: str
    secret: str


def _draw(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _human_password(rng: random.Random) -> str:
    """What people pick: a word or two, a number, a symbol (`hunter2-Prod!`, `Maple2024#`)."""
    word = rng.choice(WORDS)
    parts = [word.capitalize() if rng.random() < 0.7 else word, str(rng.randint(2, 9999))]
    if rng.random() < 0.5:
        parts.append(rng.choice("-_.") + rng.choice(WORDS).capitalize())
    parts.append(rng.choice("!#$%&*?@"))
    return "".join(parts)


def _random_password(rng: random.Random) -> str:
    """What a password manager makes: 12 to 20 characters of letters, digits and symbols, at least one of each."""
    n = rng.randint(12, 20)
    chars = [rng.choice(string.ascii_lowercase), rng.choice(string.ascii_uppercase), rng.choice(string.digits), rng.choice(SYMBOLS)]
    chars += [rng.choice(BASE62 + SYMBOLS) for _ in range(n - 4)]
    rng.shuffle(chars)
    return "".join(chars)


def _jwt(rng: random.Random) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).rstrip(b"=").decode()

    claims = {"sub": _draw(rng, HEX, 12), "iat": rng.randint(1_700_000_000, 1_800_000_000), "scope": rng.choice(["read", "admin", "billing:write"])}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{_draw(rng, URLSAFE, 43)}"


def _pem_body(rng: random.Random, n_bytes: int, line: int = 64) -> str:
    material = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(n_bytes))).decode()
    return "\n".join(material[i : i + line] for i in range(0, len(material), line))


# shape -> (draw a secret, names people give it). A format with a prefix is still named: people say what they paste.
SHAPES: dict[str, tuple[Callable[[random.Random], str], list[str]]] = {
    "base62_32": (lambda r: _draw(r, BASE62, 32), ["api key", "API key", "access token", "token", "secret", "client secret", "deploy key"]),
    "base62_40": (lambda r: _draw(r, BASE62, 40), ["api key", "auth token", "secret key", "credential", "private token"]),
    "base36_32": (lambda r: _draw(r, string.ascii_lowercase + string.digits, 32), ["api token", "app key", "access key", "secret"]),
    "aws_secret_key": (lambda r: _draw(r, BASE64, 40), ["AWS secret key", "aws secret access key", "secret access key", "secret"]),
    "hex_32": (lambda r: _draw(r, HEX, 32), ["auth token", "Twilio auth token", "API key", "app secret"]),
    "hex_64": (lambda r: _draw(r, HEX, 64), ["signing secret", "session secret", "HMAC key", "encryption key"]),
    "base64_44": (lambda r: base64.b64encode(r.randbytes(32)).decode(), ["secret", "master key", "encryption key", "signing key"]),
    "urlsafe_43": (lambda r: _draw(r, URLSAFE, 43), ["refresh token", "access token", "api token", "secret"]),
    "human_password": (_human_password, ["password", "db password", "admin password", "root password", "passphrase"]),
    "random_password": (_random_password, ["password", "db password", "pwd", "SMTP password"]),
    "stripe_webhook_secret": (lambda r: "whsec_" + _draw(r, BASE62, 32), ["webhook signing secret", "signing secret", "webhook secret"]),
    "svix_webhook_secret": (lambda r: "whsec_" + base64.b64encode(r.randbytes(24)).decode(), ["webhook secret", "signing secret"]),
    "stripe_secret_key": (lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + _draw(r, BASE62, r.choice([24, 99])), ["Stripe key", "stripe secret key", "restricted key"]),
    "slack_token": (
        lambda r: f"{r.choice(['xoxb', 'xoxp'])}-{r.randint(10**10, 10**12)}-{r.randint(10**10, 10**12)}-{_draw(r, BASE62, 24)}",
        ["Slack token", "bot token", "slack bot token"],
    ),
    "twilio_api_key": (lambda r: "SK" + _draw(r, HEX, 32), ["Twilio API key", "api key sid", "twilio key"]),
    "azure_client_secret": (
        lambda r: _draw(r, BASE62, 3) + r.choice(string.digits) + "Q~" + _draw(r, BASE62 + "_~.-", 34),
        ["client secret", "Azure client secret", "app registration secret"],
    ),
    "azure_storage_key": (lambda r: base64.b64encode(r.randbytes(64)).decode(), ["storage account key", "Azure storage key", "account key"]),
    "google_client_secret": (lambda r: "GOCSPX-" + _draw(r, URLSAFE, 28), ["OAuth client secret", "google client secret"]),
    "jwt": (_jwt, ["JWT", "bearer token", "session token", "id token"]),
    "github_token": (lambda r: "ghp_" + _draw(r, BASE62, 36), ["GitHub token", "PAT", "github personal access token"]),
    "openai_key": (lambda r: "sk-proj-" + _draw(r, URLSAFE, 48), ["OpenAI key", "openai api key"]),
}

# One line each: {name} is how the secret is called, {NAME} the same as an environment variable, {secret} the secret.
PHRASINGS: dict[str, str] = {
    "is-after-name": "the {name} is {secret}",
    "colon": "{name}: {secret}",
    "equals-spaced": "{name} = {secret}",
    "bare-after-name": "and {name} {secret}",
    "my-is-comma": "my {name} is {secret}, don't share it",
    "heres-the": "here's the {name} {secret}",
    "sentence-capital": "{Name} is {secret}.",
    "far-is": "The {name} that Harbor's ops team sent over on Friday is {secret}",
    "backticks": "The {name} for the prod cluster is `{secret}`.",
    "quoted-was": 'the {name} we got from the vendor was "{secret}"',
    "arrow": "{name} -> {secret}",
    "rotated-to": "I rotated the {name} to {secret} this morning",
    "parenthesised-label": "{name} (prod): {secret}",
    "use-as": "use {secret} as the {name}",
    "secret-first-is": "{secret} is the {name} for staging",
    "question-parenthesised": "Can you check why {secret} (our {name}) gets a 401?",
    "question-with": "what does a 403 mean when I call it with {name} {secret}?",
    "markdown-bold": "- **{Name}**: `{secret}`",
    "colon-next-line": "Here is the {name}:\n{secret}\nplease store it in the vault",
    "env-line": "set {NAME}={secret} in .env and restart",
    "export-quoted": 'export {NAME}="{secret}"',
    "json": '{{"{snake}": "{secret}", "region": "eu-west-1"}}',
    "yaml": "staging:\n  {snake}: {secret}\n  timeout: 30",
    "login-with": "log in as deploy with {name} {secret} and run the migration",
    "dash-label": "{secret} - {name} for the billing service",
}
# Secrets that span lines, in the ways they are pasted.
BLOCK_PHRASINGS: dict[str, str] = {
    "block-after-colon": "here's the key:\n{block}\n",
    "block-in-fence": "Deploy fails with this key, is it the right one?\n```\n{block}\n```",
    "block-json-escaped": '{{"type": "service_account", "project_id": "billing-{n}", "private_key": "{escaped}", "client_email": "ci@billing-{n}.iam.gserviceaccount.com"}}',
}
BLOCKS = {"rsa": ("RSA PRIVATE KEY", 1190), "ec": ("EC PRIVATE KEY", 121), "pkcs8": ("PRIVATE KEY", 1218), "openssh": ("OPENSSH PRIVATE KEY", 400)}


def _fill(template: str, name: str, secret: str) -> str:
    snake = name.lower().replace(" ", "_")
    return template.format(name=name, Name=name[0].upper() + name[1:], NAME=snake.upper(), snake=snake, secret=secret)


def generate(seed: int = SEED) -> list[Case]:
    """Every shape in every phrasing, each with a secret and a name of its own: 21 shapes x 25 phrasings,
    plus each private-key kind in each block phrasing."""
    rng = random.Random(seed)
    cases = []
    for shape, (draw, names) in SHAPES.items():
        for phrasing, template in PHRASINGS.items():
            secret = draw(rng)
            cases.append(Case(shape, phrasing, _fill(template, rng.choice(names), secret), secret))
    for kind, (label, n_bytes) in BLOCKS.items():
        for phrasing, template in BLOCK_PHRASINGS.items():
            body = _pem_body(rng, n_bytes, 70 if kind == "openssh" else 64)
            block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
            escaped = block.replace("\n", "\\n") + "\\n"
            text = template.format(block=block, escaped=escaped, n=rng.randint(1000, 9999))
            cases.append(Case(f"private_key_{kind}", phrasing, text, body.replace("\n", "\\n") if "escaped" in template else body))
    return cases


# What is not a secret but sits next to a secret's name all the same: digests, ids, commits, public keys, base64 test
# data, counts, file names. Each template takes one drawn value.
LOOKALIKES: dict[str, tuple[Callable[[random.Random], str], list[str]]] = {
    "git_sha": (lambda r: _draw(r, HEX, 40), ["commit {v} fixed the token refresh", "the api key check broke in {v}", "reverted {v} (signing key rotation)"]),
    "short_sha": (lambda r: _draw(r, HEX, 7), ["the secret rotation landed in {v}", "key handling changed in {v}, see the PR"]),
    "sha256": (
        lambda r: _draw(r, HEX, 64),
        ["the token's sha256 is {v}", "password hash: {v}", "cache key = {v}", "checksum of the key file: {v}", "sha256 of secret.txt {v}"],
    ),
    "uuid": (
        lambda r: f"{_draw(r, HEX, 8)}-{_draw(r, HEX, 4)}-4{_draw(r, HEX, 3)}-a{_draw(r, HEX, 3)}-{_draw(r, HEX, 12)}",
        ["request {v} failed with an invalid api key", "key id: {v}", "the token belongs to user {v}", "idempotency key {v}"],
    ),
    "key_id": (lambda r: _draw(r, HEX.upper(), 16), ["GPG key ID {v}", "signing key fingerprint {v}", "kid of the signing key: {v}"]),
    "public_key": (
        lambda r: "AAAAC3NzaC1lZDI1NTE5AAAAI" + _draw(r, BASE64, 43),
        ["public key: ssh-ed25519 {v} deploy@ci", "the deploy key's public half is ssh-ed25519 {v}", "pubkey {v}"],
    ),
    "base64_text": (
        lambda r: base64.b64encode(" ".join(r.choice(WORDS) for _ in range(r.randint(3, 6))).encode()).decode(),
        ['{{"key": "{v}"}}', "Sec-WebSocket-Key: {v}", "the test token decodes to words: {v}"],
    ),
    "identifier": (
        lambda r: r.choice(["refresh", "rotate", "verify", "load"]) + r.choice(["Access", "Api", "Signing"]) + r.choice(["Token", "Key", "Secret"]) + "V" + str(r.randint(2, 9)),
        ["the token is refreshed by {v}", "the key is loaded in {v}()", "see {v} for how the secret is read"],
    ),
    "path_or_count": (
        lambda r: r.choice(["~/.ssh/id_ed25519", "/run/secrets/db_password", "config/credentials.yml.enc", "4096", "v2.3.1", "2024-06-11T10:00:00Z"]),
        ["the key file is at {v}", "password file: {v}", "token limit is {v}", "the credentials live in {v}", "api key expires {v}"],
    ),
    "placeholder": (
        lambda r: r.choice(["<your-api-key>", "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx", "${STRIPE_SECRET}", "****************", "whsec_..."]),
        ["the api key is {v}", "password: {v}", "set the webhook secret to {v}", "token = {v}"],
    ),
}


def lookalikes(seed: int = SEED) -> list[Case]:
    """Every lookalike in each of its templates, three times, with a fresh value each time: none may be redacted."""
    rng = random.Random(seed)
    return [
        Case(shape, template.split("{v}")[0].strip() or template, template.format(v=(value := draw(rng))), value)
        for shape, (draw, templates) in LOOKALIKES.items()
        for template in templates
        for _ in range(3)
    ]


def leaked(secret: str, output: str, window: int = 8) -> bool:
    """Whether a usable piece of the secret is still in the output: any run of `window` of its characters
    (the whole secret when shorter), one line of a multi-line one being checked on its own."""
    for part in secret.replace("\\n", "\n").split("\n"):
        n = min(window, len(part))
        if any(part[i : i + n] in output for i in range(len(part) - n + 1)):
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=SEED)
    cases = generate(parser.parse_args().seed)
    print(f"{len(cases)} cases, {len({c.shape for c in cases})} shapes, {len({c.phrasing for c in cases})} phrasings")
    for case in cases[:: max(1, len(cases) // 30)]:
        print(f"[{case.shape} / {case.phrasing}] {case.text!r}")


def by(cases: list[Case], field: str) -> Iterator[tuple[str, list[Case]]]:
    """The cases grouped by `shape` or `phrasing`, in the order they were made."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(getattr(case, field), []).append(case)
    yield from groups.items()


if __name__ == "__main__":
    main()
