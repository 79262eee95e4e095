"""The shell parser: what it finds in each construct, what it refuses, and that it never
fails in any other way (hypothesis), with real bash as the judge of generated scripts."""

import shlex
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchkit.isolation import Guard, ParseError, parse
from benchkit.isolation.lexer import split_words
from benchkit.isolation.syntax import BLANKS, PUNCTUATION


def names(line):
    return [c.name.text if c.name else None for c in parse(line).commands]


@pytest.mark.parametrize("line,expected", [
    ("a | b |& c", ["a", "b", "c"]),
    ("a; b && c || d & e", ["a", "b", "c", "d", "e"]),
    ("a\nb\n\nc", ["a", "b", "c"]),
    ("(a; (b)) | { c; }", ["a", "b", "c"]),
    ("if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]),
    ("for x in 1 2; do a $x; done", [None, "a"]),  # None: the loop variable's assignment
    ("for ((i = 0; i < 3; i++)); do a; done", ["a"]),
    ("while a; do b; done; until c; do d; done", ["a", "b", "c", "d"]),
    ("select x in 1 2; do a; done", [None, "a"]),
    ("case $x in a|b) c ;; (d) e ;& *) f ;;& esac", ["c", "e", "f"]),
    ("f() { a; }; function g { b; }; function h() ( c )", ["a", "b", "c"]),
    ('echo "$(a "$(b)")" `c`', ["echo", "a", "b", "c"]),
    ("echo $(case $x in (a) b ;; c) d ;; esac) $(echo case) e", ["echo", "b", "d", "echo"]),
    ("echo $(case x in x) case y in y) a ;; esac ;; esac)", ["echo", "a"]),
    ("diff <(a) >(b)", ["diff", "a", "b"]),
    ("x=${y:-$(a)} z=$((1 + $(b)))", [None, "a", "b"]),
    ("((n++)) && a", ["a"]),
    ("echo $(( a + 1 )) $( (b) ) $((c) )", ["echo", "b", "c"]),  # bash: $(( a ... )) is arithmetic
    ("[[ $x == *y* && -n $(a) ]]", ["[[", "a"]),
    ("! a | b", ["a", "b"]),
    ("time -p a", ["a"]),
    ("echo a#b # c; d", ["echo"]),
    ("a 'b; c' \"d | e\" f\\;g", ["a"]),
    ("a \\\n  --flag \\\n  value", ["a"]),
])
def test_finds_every_command(line, expected):
    assert sorted(names(line), key=str) == sorted(expected, key=str)


def test_heredoc_bodies_are_data_unless_their_delimiter_is_unquoted():
    quoted = "cat <<'EOF' | a\n$(b) `c` ; d\nEOF\ne"
    assert names(quoted) == ["cat", "a", "e"]
    unquoted = "cat <<EOF | a\n$(b) `c` ; d\nEOF\ne"
    assert sorted(names(unquoted)) == ["a", "b", "c", "cat", "e"]
    tabs = "cat <<-END\n\t$(b)\n\tEND\na"
    assert sorted(names(tabs)) == ["a", "b", "cat"]
    two = "a <<X; b <<'Y'\n$(c)\nX\n$(d)\nY\ne"
    assert sorted(names(two)) == ["a", "b", "c", "e"]


def test_words_keep_what_is_literal_and_what_is_not():
    command, = parse("""a 'x y' "$HOME/z" pre$(b)post *.json ~/q $'\\x41'""").commands[:1]
    literal, home, mixed, glob, tilde, ansi = command.words[1:]
    assert (literal.value, literal.literal) == ("x y", "x y")
    assert (home.value, home.text, home.prefix) == (None, "$HOME/z", "")
    assert (mixed.value, mixed.prefix, mixed.text) == (None, "pre", "pre$(b)post")
    assert glob.pattern and glob.literal is None and glob.value == "*.json"
    assert tilde.pattern and tilde.prefix == ""
    assert ansi.literal == "A"


def test_quoted_operators_and_keywords_are_words():
    assert names("tr '|' ';' && echo '&&' \"if\"") == ["tr", "echo"]
    assert names("'if' x") == ["if"]
    assert names("echo \\| \\; \\&") == ["echo"]


def test_redirections_and_assignments():
    command, = parse("A=1 B+=2 a 2>&1 >out.txt <in <<<word &>>log {fd}>x 3<>f").commands
    assert [w.text for w in command.assignments] == ["A=1", "B+=2"]
    assert [w.text for w in command.words] == ["a"]
    assert [(r.fd, r.op, r.target.text) for r in command.redirects] == [
        ("2", ">&", "1"), (None, ">", "out.txt"), (None, "<", "in"), (None, "<<<", "word"),
        (None, "&>>", "log"), ("{fd}", ">", "x"), ("3", "<>", "f")]
    compound, = [c for c in parse("{ a; } > /dev/null").commands if not c.words]
    assert compound.redirects[0].target.text == "/dev/null"


def test_arrays_and_functions():
    script = parse("xs=(1 $(a) 3); f() { b; }; f")
    assert sorted(n for n in names("xs=(1 $(a) 3); f() { b; }; f") if n) == ["a", "b", "f"]
    assert script.functions == {"f"}


@pytest.mark.parametrize("line,inner,via", [
    ("env -i -u X A=1 - a b", ["a", "b"], "env"),
    ("command -p a b", ["a", "b"], "command"),
    ("exec -a name a b", ["a", "b"], "exec"),
    ("nice -n 5 a b", ["a", "b"], "nice"),
    ("nice -5 a", ["a"], "nice"),
    ("nohup a b", ["a", "b"], "nohup"),
    ("timeout -k 1 --signal=KILL 5 a b", ["a", "b"], "timeout"),
    ("sudo -u root -- a b", ["a", "b"], "sudo"),
    ("xargs -n 1 -P 4 a b", ["a", "b"], "xargs"),
    ("xargs", ["echo"], "xargs"),
    ("find . -name x -exec a {} ;", ["a", "{}"], "find -exec"),
    ("builtin a b", ["a", "b"], "builtin"),
])
def test_wrappers_are_unwrapped(line, inner, via):
    outer, wrapped = parse(line).commands
    assert [w.text for w in wrapped.words] == inner and wrapped.via == via


def test_wrapper_details():
    env_run = parse("env A=1 B=$x a").commands[1]
    assert [w.text for w in env_run.assignments] == ["A=1", "B=$x"]
    assert parse("command -v a").commands[1:] == ()
    xargs_run = parse("xargs -I% a --id=% b").commands[1]
    # -I puts each input line in place: nothing is appended.
    assert not xargs_run.open_ended and [w.value for w in xargs_run.words] == ["a", None, "b"]
    assert parse("xargs -n1 a").commands[1].open_ended
    find_runs = parse("find . -exec a {} + -ok b \\;").commands[1:]
    assert [(c.name.text, c.via) for c in find_runs] == [("a", "find -exec"), ("b", "find -ok")]
    assert names("env xargs env a") == ["env", "xargs", "env", "a"]


@pytest.mark.parametrize("line", [
    "echo 'open", 'echo "open', "echo `open", "echo $(open", "echo ${open",
    "if a; then b", "for x in 1; do a", "while a; do b", "case x in a) b", "{ a;",
    "( a", "a )", "a |", "a &&", "| a", "; ;; a", "a > ", "fi", "done",
    "then a", "f() ", "function $x { a; }", "for $x in 1; do a; done", "[[ -n x",
    "echo \\", "cat <<", "a\x00b", "a \ue000 b", "a \udc80", "$'\\u0000'", "$'\\ud800'",
    "env " * 500 + "a", 'echo "${x@P}"', "cat <<EOF\n${PS1@P}\nEOF",
    "$(" * 60 + ")" * 60, "(" * 200 + "a" + ")" * 200, "`" + "$(" * 60,
])
def test_unparsable_lines_raise_parse_error(line):
    with pytest.raises(ParseError):
        parse(line)


def test_an_unparsable_line_is_denied_with_the_reason():
    decision = Guard("raw-api", "shell", "curl").decide("curl 'x")
    assert not decision.allowed and "could not check" in decision.reason


@pytest.mark.parametrize("line", ["read -a", "printf -v"])
def test_a_variable_option_without_its_name_is_decided_not_a_crash(line):
    """Bash refuses the missing name itself; the guard once raised AttributeError."""
    guard = Guard("raw-api", "shell", "curl")
    assert guard.decide(line).allowed
    assert not guard.decide(line + " PATH").allowed


# --- properties -----------------------------------------------------------------------

SHELL_ALPHABET = st.sampled_from(list("ab $(){}[]|&;<>'\"`\\\n\t#*?~=-!:%@/0123456789+,.^"))


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), st.text(SHELL_ALPHABET, max_size=80)))
def test_the_parser_returns_or_raises_its_own_error(text):
    try:
        parse(text)
    except ParseError:
        pass
    decision = Guard("raw-api", "shell", "curl").decide(text)
    assert isinstance(decision.allowed, bool) and isinstance(decision.reason, str)


# Scripts built from constructs around leaf commands: with only permitted leaves they
# are allowed; with one leaf foreign, however it is wrapped or quoted, denied. (`$( (`
# keeps its space: bash reads `$((` as arithmetic, which runs no command.)
SAFE = ["curl -s http://127.0.0.1:3000/api/v1/version", "jq -r .title", "grep -c bug issues.txt",
        "echo done", "sort -n", "head -5", "wc -l", "printf '%s\\n' a b"]
FOREIGN = ["python3 -c 1", "'python3' -c 1", 'py"thon"3 -c 1', "\\python3 -c 1",
           "$'python3' -c 1"]
PREFIXES = ["", "env ", "command ", "timeout 5 ", "nice -n 5 ", "nohup ", "A=1 ", "time ",
            "exec "]
LEAF = "\x01"
SHAPES = [
    "{a} | {b}", "{a} && {b}", "{a} || {b}", "{a}; {b}", "{a}\n{b}", "{a} & {b}",
    "( {a} )", "{{ {a}; }}", 'echo "$( {a} )"', "echo $( {a} )", "cat <( {a} )",
    "{a} > >({b})", "for i in 1 2; do {a}; done", "while {a}; do {b}; break; done",
    "if {a}; then {b}; else {a}; fi", "case x in x) {a} ;; *) {b} ;; esac",
    "f() {{ {a}; }}; f", "x=$( {a} ); {b}", "{a} 2>&1 | {b}", "if ! {a}; then {b}; fi",
    "cat <<EOF\n$( {a} )\nEOF\n{b}", "echo $(expr $( {a} ) + 1)",
]


@st.composite
def shape(draw, depth=0):
    if depth >= 3 or (depth and draw(st.booleans())):
        return LEAF
    template = draw(st.sampled_from(SHAPES))
    # (A heredoc's body holds a leaf only: bash cannot nest heredocs of one delimiter.)
    inner = LEAF if "<<EOF" in template else draw(shape(depth + 1))
    return template.format(a=inner, b=draw(shape(depth + 1)))


@st.composite
def scripts(draw):
    template = draw(shape())
    leaves = template.count(LEAF)
    safe = [draw(st.sampled_from(PREFIXES)) + draw(st.sampled_from(SAFE)) for _ in range(leaves)]
    foreign_at = draw(st.integers(0, leaves - 1))
    foreign = list(safe)
    foreign[foreign_at] = draw(st.sampled_from(PREFIXES)) + draw(st.sampled_from(FOREIGN))
    return _fill(template, safe), _fill(template, foreign)


def _fill(template, leaves):
    parts = template.split(LEAF)
    return "".join(part + leaf for part, leaf in zip(parts, leaves)) + parts[-1]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_generated_scripts_are_judged_by_their_leaves(pair):
    safe, foreign = pair
    # Real bash agrees that both are valid shell.
    for script in pair:
        checked = subprocess.run(["/bin/bash", "-n", "-c", script], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
    guard = Guard("raw-api", "shell", "curl")
    allowed = guard.decide(safe)
    assert allowed.allowed, allowed.reason
    denied = guard.decide(foreign)
    assert not denied.allowed and "python3" in denied.binaries
    assert "`python3` is not available" in denied.reason


def _shlex_words(text):
    lexer = shlex.shlex(text, posix=True, punctuation_chars=PUNCTUATION)
    lexer.whitespace, lexer.whitespace_split, lexer.commenters = BLANKS, True, ""
    return list(lexer)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="ab \t;|&()<>\n\\'\"$\ue003", max_size=40))
def test_the_one_pass_word_splitter_splits_as_posix_shlex_does(text):
    """split_words replaced shlex (quadratic in a long word): same tokens, same refusals."""
    try:
        expected = _shlex_words(text)
    except ValueError:
        expected = None
    try:
        found = [token for token, _ in split_words(text)]
    except ParseError:
        found = None
    assert found == expected
