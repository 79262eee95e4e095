"""Secrets out of every stored byte: each secret is replaced in its literal, JSON-escaped,
URL-encoded, hex and base64 forms (standard and URL-safe, at all three alignments a
secret can take inside a longer base64 text), before any excerpt or truncation.

What counts as a secret: whatever the run knows (host token, agent tokens, the
driver's credentials) and every variable of the harness's environment whose name
looks secret (`environment_secrets`).
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from urllib.parse import quote, quote_plus

SCRUBBED = "[REDACTED]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE",
                         re.IGNORECASE)
MIN_SECRET = 8      # shorter values ("1", "true") are settings, not secrets
MIN_FORM = 8        # shorter encoded forms would match ordinary text


def environment_secrets(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Values of the variables whose names look secret (*KEY*, *TOKEN*, *SECRET*, ...)."""
    return tuple(sorted({value for name, value in environ.items()
                         if SECRET_NAME.search(name) and len(value.strip()) >= MIN_SECRET}))


@lru_cache(maxsize=1024)
def forms(secret: str) -> tuple[str, ...]:
    """Every spelling of `secret` the scrubber replaces, longest first."""
    raw = secret.encode()
    found = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             quote(secret, safe=""), quote_plus(secret),
             raw.hex(), raw.hex().upper()}
    for start in range(3):  # the secret's first whole 3-byte group, at each alignment
        chunk = raw[start:]
        chunk = chunk[:len(chunk) - len(chunk) % 3]
        if chunk:
            found.add(base64.b64encode(chunk).decode())
            found.add(base64.urlsafe_b64encode(chunk).decode())
    return tuple(sorted((f for f in found if len(f) >= MIN_FORM or f == secret),
                        key=len, reverse=True))


def scrub(text: str, secrets: Iterable[str], placeholder: str = SCRUBBED) -> str:
    """Replace every form of each non-empty secret."""
    spellings = {form for secret in secrets if secret for form in forms(secret)}
    for form in sorted(spellings, key=len, reverse=True):
        text = text.replace(form, placeholder)
    return text


def scrub_value(value, secrets: Iterable[str]):
    """`scrub` applied to every string inside a JSON-like value (dicts, lists)."""
    secrets = tuple(s for s in secrets if s)
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, list):
        return [scrub_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: scrub_value(item, secrets) for key, item in value.items()}
    return value
