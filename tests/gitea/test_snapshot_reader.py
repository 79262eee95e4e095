"""The snapshot's JSON reader: the same values whatever the chunks, a long text as its
digest (the same digest `normalise_text` gives the whole text), a string far past the
window hashed in bounded memory, and broken JSON a clear error."""

import json
import tracemalloc

import pytest

from benchkit.gitea.snapshot import reader
from benchkit.gitea.snapshot.reader import JsonStream
from benchkit.state.values import TEXT_LIMIT, digest_of, normalise_text

ODD = "q\"u\\o\u00e9\U0001F600<&>\n\t"  # escapes, a two-byte letter, a surrogate pair, Go's \u003c


def chunks(data: bytes, size: int):
    for at in range(0, len(data), size):
        yield data[at:at + size]


def read_all(value, size, ascii_only=True):
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    stream = JsonStream(chunks(data, size))
    return list(stream.items()) if isinstance(value, list) else stream.value()


@pytest.mark.parametrize("size", [1, 5, 64, 4096, 1 << 20])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_values_come_out_whole_whatever_the_chunks(size, ascii_only):
    value = [{"a": 1, "b": ODD, "c": [True, None, -1.5e3, 12345678901234], "d": {}}, [], "x"]
    assert read_all(value, size, ascii_only) == value


@pytest.mark.parametrize("window", [64, 100, 1 << 20])
@pytest.mark.parametrize("size", [1, 7, 4096])
def test_a_long_text_is_its_digest_wherever_it_was_cut(monkeypatch, window, size):
    monkeypatch.setattr(reader, "WINDOW", window)
    long = ODD * (TEXT_LIMIT // len(ODD) + 1)
    slashes = "\\" * (TEXT_LIMIT + 1) + "z"
    found = read_all([{"description": long, "name": "bug"}, slashes], size)
    assert found == [{"description": digest_of(long), "name": "bug"}, digest_of(slashes)]
    assert normalise_text(long) == digest_of(long)  # what the checker makes of it whole


def test_gitea_sends_null_for_no_reactions():
    assert list(JsonStream([b"null"]).items()) == []


def test_a_text_of_sixteen_mebibytes_streams_in_bounded_memory():
    mib = 1 << 20

    def answer():
        yield b'[{"name": "big", "description": "'
        for _ in range(16):
            yield b"<a" * (mib // 2)
        yield b'"}]'

    tracemalloc.start()
    try:
        [label] = JsonStream(answer()).items()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert label == {"name": "big", "description": digest_of("<a" * (8 * mib))}
    assert peak < 8 * mib, f"peak {peak / mib:.1f} MiB for a 16 MiB text"


@pytest.mark.parametrize("broken", [b'[{"a": 1', b'[{"a" 1}]', b'{"a": "no end', b"[1 2]"])
def test_broken_json_is_an_error_that_says_so(broken):
    with pytest.raises(ValueError):
        stream = JsonStream(chunks(broken, 3))
        list(stream.items()) if broken.startswith(b"[") else stream.value()
