"""Fingerprints: short, stable digests of what a sample ran with (task, arm, seed,
prompt, model), so the report keeps samples of different versions apart."""

import hashlib
import json


def fingerprint(value) -> str:
    """16 hex digits of SHA-256 over canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def arm_fingerprint(document: str, tool_version: str | None, surface: str | None = None) -> str:
    """What a sample's arm ran with: the arm document's fingerprint, its tool's version
    and the digest of what the agent sees of the tool (benchkit.surface), so samples of
    two versions or two surfaces of one tool are never counted together. Without a
    known version it is the document's fingerprint alone; without a surface (samples
    older than it) the document's and the version's."""
    if tool_version is None:
        return document
    if surface is None:
        return fingerprint({"arm": document, "tool_version": tool_version})
    return fingerprint({"arm": document, "tool_version": tool_version, "surface": surface})
