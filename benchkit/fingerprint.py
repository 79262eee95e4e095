"""Fingerprints: short, stable digests of what a sample ran with (task, arm, seed,
prompt, model), so the report keeps samples of different versions apart."""

import hashlib
import json


def fingerprint(value) -> str:
    """16 hex digits of SHA-256 over canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def arm_fingerprint(document: str, tool_version: str | None) -> str:
    """What a sample's arm ran with: the arm document's fingerprint and its tool's
    version, so samples of two versions of one tool are never counted together. Without
    a known version it is the document's fingerprint alone."""
    if tool_version is None:
        return document
    return fingerprint({"arm": document, "tool_version": tool_version})
