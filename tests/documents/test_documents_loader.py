"""The loader: YAML lines, schema errors in plain words, defaults from the schema."""

import pytest

from benchkit.documents.loader import (
    DocumentError,
    Problem,
    display_path,
    format_path,
    read_document,
    schema_problems,
    with_defaults,
)


def write(tmp_path, text, name="doc.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_lines_of_values_keys_and_items(tmp_path):
    document = read_document(write(tmp_path, (
        "# comment\n"
        "model: m\n"
        "weights:\n"
        "  input: 1\n"
        "list:\n"
        "  - a\n"
        "  - {x: 1, y: [p, q]}\n"
        "flow: [one,\n"
        "  two]\n")))
    assert document.data["list"][1] == {"x": 1, "y": ["p", "q"]}
    assert document.line(("model",)) == 2
    assert document.line(("weights", "input")) == 4
    assert document.line(("list", 0)) == 6
    assert document.line(("list", 1, "y", 1)) == 7
    assert document.line(("flow", 1)) == 9
    assert document.key_lines[("weights",)] == 3
    # A path that does not exist falls back to its nearest existing ancestor: the
    # `weights` mapping, which starts at its first key.
    assert document.line(("weights", "missing", 3)) == 4


def test_aliases_and_merge_keys_keep_lines(tmp_path):
    document = read_document(write(tmp_path, (
        "base: &base\n"
        "  kind: shell\n"
        "tool:\n"
        "  <<: *base\n"
        "  binary: tea\n")))
    assert document.data["tool"] == {"kind": "shell", "binary": "tea"}
    assert document.line(("tool", "binary")) == 5
    assert document.line(("tool", "kind")) == 2  # where the merged value was written


def test_yaml_syntax_error_has_its_own_line(tmp_path):
    path = write(tmp_path, "a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(DocumentError) as caught:
        read_document(path)
    (problem,) = caught.value.problems
    # Reported where the parser stopped, naming where the unclosed construct began
    # (the wording between differs: libyaml's parser is used when installed).
    assert problem.line == 3
    assert problem.message.startswith("YAML syntax error: ")
    assert problem.message.endswith(" (while parsing a flow sequence started on line 2)")


def test_duplicate_key_is_a_problem(tmp_path):
    with pytest.raises(DocumentError) as caught:
        read_document(write(tmp_path, "a: 1\nb: 2\na: 3\n"))
    assert [(p.line, p.message) for p in caught.value.problems] == [(3, "duplicate key 'a'")]


def test_unreadable_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(DocumentError) as caught:
        read_document(path)
    assert caught.value.problems[0].message.startswith("cannot read")
    with pytest.raises(DocumentError, match="cannot read"):
        read_document(tmp_path / "absent.yaml")


def messages(tmp_path, text, schema="suite"):
    document = read_document(write(tmp_path, text))
    return [(p.line, p.message, p.where) for p in schema_problems(document, schema)]


def test_schema_errors_in_plain_words_sorted_by_line(tmp_path):
    found = messages(tmp_path, (
        "model: m\n"
        "base_prompt: hello\n"
        "trials: five\n"
        "weights:\n"
        "  output: -1\n"
        "  ouptut: 5\n"
        "colour: red\n"))
    assert found == [
        (3, "expected integer, got string", "trials"),
        (5, "expected at least 0, got -1", "weights.output"),
        (6, "unknown key 'ouptut' (did you mean 'output'?)", "weights.ouptut"),
        (7, "unknown key 'colour'", "colour"),
    ]


def test_missing_key_is_reported_at_the_mapping_that_lacks_it(tmp_path):
    found = messages(tmp_path, (
        "labels:\n"
        "  - name: bug\n"
        "    color: d73a4a\n"
        "  - name: docs\n"
        "    description: no colour\n"), schema="seed")
    assert found == [(4, "'color' is required", "labels[1]")]


def test_enum_pattern_and_empty_document(tmp_path):
    found = messages(tmp_path, (
        "labels: [{name: bug, color: red}]\n"
        "issues:\n"
        "  - {title: t, state: opne}\n"), schema="seed")
    assert found == [
        (1, "expected a colour of six hex digits such as d73a4a or #d73a4a, got 'red'",
         "labels[0].color"),
        (3, "expected one of 'open', 'closed', got 'opne'", "issues[0].state"),
    ]
    assert messages(tmp_path, "# nothing\n", schema="seed") == [(1, "expected object, got null", "")]


ALTERNATIVES = {
    "type": "object",
    "properties": {
        "intent": {"oneOf": [
            {"type": "string"},
            {"type": "object", "additionalProperties": False, "required": ["otherwise"],
             "properties": {"otherwise": {"type": "string"}, "self_review": {"type": "string"}}},
        ]},
        "fact": {"type": "object", "anyOf": [{"required": ["any_of"]}, {"required": ["pattern"]}]},
    },
}


def test_alternatives_are_explained_by_the_branch_meant(tmp_path):
    found = messages(tmp_path, "intent: 5\nfact: {}\n", schema=ALTERNATIVES)
    assert found == [(1, "expected string or object, got integer", "intent"),
                     (2, "one of 'any_of' or 'pattern' is required", "fact")]
    found = messages(tmp_path, "intent:\n  otherwize: x\n", schema=ALTERNATIVES)
    assert found == [(2, "'otherwise' is required", "intent"),
                     (2, "unknown key 'otherwize' (did you mean 'otherwise'?)", "intent.otherwize")]


def test_problem_prints_file_line_message_and_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    problem = Problem(tmp_path / "arms.d" / "x.yaml", 7, "unknown key 'colour'", "tool.colour")
    assert str(problem) == "arms.d/x.yaml:7: unknown key 'colour' (at tool.colour)"
    assert str(Problem(tmp_path / "s.yaml", None, "not found")) == "s.yaml: not found"
    assert display_path("/elsewhere/x.yaml") == "/elsewhere/x.yaml"
    assert format_path(("issues", 2, "labels", 0)) == "issues[2].labels[0]"
    assert format_path(("env", "has space")) == 'env["has space"]'


def test_documents_error_sorts_and_deduplicates(tmp_path):
    a = Problem(tmp_path / "a.yaml", 9, "late")
    b = Problem(tmp_path / "a.yaml", 2, "early")
    error = DocumentError([a, b, a])
    assert error.problems == [b, a]
    assert str(error).splitlines() == [str(b), str(a)]


def test_defaults_follow_refs_and_conditions():
    subschema = {
        "$defs": {"item": {"type": "object", "properties": {"n": {"default": 1}}}},
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "default": []},
            "nested": {"type": "object", "default": {}, "properties": {"k": {"default": "v"}}},
        },
        "if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
        "then": {"properties": {"extra": {"default": True}}},
    }
    data = {"kind": "a", "items": [{}, {"n": 5}]}
    assert with_defaults(data, subschema) == {
        "kind": "a", "items": [{"n": 1}, {"n": 5}], "nested": {"k": "v"}, "extra": True}
    assert data == {"kind": "a", "items": [{}, {"n": 5}]}  # the input is left alone
    assert "extra" not in with_defaults({"kind": "b"}, subschema)
