"""The shipped documents: schema lines, the schemas themselves, the reference seed."""

import json

import pytest
from conftest import CHECKOUT
from jsonschema import Draft202012Validator

from benchkit import SCHEMA_DIR
from benchkit.documents import load_seed
from benchkit.documents.loader import declared_schema

# Where shipped YAML lives, and the schema each place's documents must name.
PLACES = {"suite.yaml": "suite", "seeds": "seed", "tasks.d": "task", "arms.d": "arm",
          "tests/arms": "arm", "refs.d": "reference"}


def shipped_yaml():
    for place, kind in PLACES.items():
        path = CHECKOUT / place
        for file in ([path] if path.is_file() else sorted(path.glob("*.y*ml"))):
            yield pytest.param(file, kind, id=str(file.relative_to(CHECKOUT)))


@pytest.mark.parametrize("path, kind", list(shipped_yaml()))
def test_every_shipped_yaml_names_its_schema_on_line_one(path, kind):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema="), first
    schema = declared_schema(path)
    assert schema.is_file(), f"{first} does not resolve from {path.parent}"
    assert schema.resolve() == (SCHEMA_DIR / f"{kind}.schema.json").resolve()


@pytest.mark.parametrize("name", ["suite", "seed", "arm"])
def test_schemas_are_valid_and_describe_every_field(name):
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"/{name}.schema.json")
    undescribed = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                conditional = "/then" in where or "/if" in where  # restates a described field
                if isinstance(value, dict) and "$ref" not in value and not conditional \
                        and "description" not in value:
                    undescribed.append(f"{where}/{key}")
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(schema, "")
    assert undescribed == []


def issue(title, body, state="open", labels=(), assigned=False, comments=(), milestone=None):
    found = {"title": title, "body": body, "state": state, "labels": list(labels),
             "assigned": assigned, "comments": list(comments)}
    return {**found, "milestone": milestone} if milestone else found


def pull(title, body, head, path, content, labels=(), comments=(), reviews=()):
    return {"title": title, "body": body, "state": "open", "head": head,
            "file": {"path": path, "content": content}, "labels": list(labels),
            "assigned": False, "comments": list(comments), "reviews": list(reviews)}


# The reference suite's seed, written out table by table (seeds/default.yaml must match).
REFERENCE_SEED = {
    "files": [{"path": "README.md",
               "content": "# Seeded repository\n\nA throwaway repository for one trial.\n"}],
    "milestones": [{"title": "v1.0", "description": "Stability fixes for the first release.",
                    "state": "open"}],
    "labels": [
        {"name": "bug", "color": "d73a4a", "description": "Something is broken"},
        {"name": "enhancement", "color": "a2eeef", "description": "A new feature or request"},
        {"name": "documentation", "color": "0075ca", "description": "Docs and readme changes"},
        {"name": "priority", "color": "b60205", "description": "Needs attention soon"},
    ],
    "issues": [
        issue("Fix crash on startup", "The app crashes immediately on a fresh launch.",
              labels=["bug"], assigned=True, comments=["I can reproduce this on Linux."],
              milestone="v1.0"),
        issue("Add CSV export option", "Users want to export their data as CSV.",
              labels=["enhancement"]),
        issue("Crash when saving large files",
              "Saving a file over about 100 MB reliably crashes the editor.",
              labels=["bug", "priority"], assigned=True, milestone="v1.0"),
        issue("Typo in installation docs", "The install guide says 'yarn' where it should say 'npm'.",
              labels=["documentation"], comments=["Found another typo nearby."]),
        issue("Update README badges", "The build badges in the README point at the old CI.",
              state="closed", labels=["documentation"]),
        issue("Crash in export dialog", "Opening the export dialog twice crashes the app.",
              state="closed", labels=["bug"], assigned=True),
        issue("Improve export performance", "Exporting a large project is slow and blocks the UI.",
              labels=["enhancement"]),
        issue("Typo in error message", "The save-failed dialog misspells 'occurred'.", state="closed"),
    ],
    "pull_requests": [
        pull("Implement CSV export", "Adds the CSV export path requested in the issues.",
             "feature/csv-export", "export.txt", "CSV export implementation notes.\n",
             labels=["enhancement"]),
        pull("Fix startup crash", "Guards the startup path that was throwing on a fresh launch.",
             "feature/fix-crash", "fix.txt", "Startup crash fix notes.\n",
             reviews=[{"kind": "comment", "body":
                       "Looks good overall, though the error handling could be tightened."}]),
        pull("Refresh documentation", "Updates the README and installation guide.",
             "feature/docs-refresh", "docs.txt", "Documentation refresh notes.\n",
             comments=["Ready for review."]),
    ],
}


def test_default_seed_is_the_reference_seed_exactly():
    seed = load_seed(CHECKOUT / "seeds" / "default.yaml")
    assert seed.name == "default"
    assert seed.data == REFERENCE_SEED
    assert (seed.labels, seed.issues, seed.pull_requests) == (
        REFERENCE_SEED["labels"], REFERENCE_SEED["issues"], REFERENCE_SEED["pull_requests"])


def test_the_user_is_never_written_in_a_seed():
    text = (CHECKOUT / "seeds" / "default.yaml").read_text()
    data_lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any("bench" in line for line in data_lines)
    properties = json.loads((SCHEMA_DIR / "seed.schema.json").read_text())["$defs"]["issue"]["properties"]
    assert "assigned" in properties and "assignees" not in properties and "author" not in properties
