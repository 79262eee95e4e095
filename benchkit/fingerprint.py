"""Fingerprints: short, stable digests of what a sample ran with (task, arm, seed,
prompt, model), so the report keeps samples of different versions apart."""

import hashlib
import json


def fingerprint(value) -> str:
    """16 hex digits of SHA-256 over canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
