"""docs/security.md puts every layer that bounds an agent side by side: each names the
tests that prove it, and every test it names exists (a renamed or removed test fails
here, so the page cannot point at proof that is gone)."""

import re

from benchkit import PACKAGE_DIR

CHECKOUT = PACKAGE_DIR.parent
PAGE = (CHECKOUT / "docs" / "security.md").read_text()
LAYERS = ("the runtime's options", "the guard", "the sandbox", "the gateway",
          "the host's own permissions", "the audit", "the checker", "the secrets")


def layer_rows() -> dict[str, str]:
    start = PAGE.index("## The layers, side by side")
    table = PAGE[start:PAGE.index("\n## ", start + 1)]
    rows = [line for line in table.splitlines() if line.startswith("| ")][2:]
    return {row.split("|")[1].strip(): row for row in rows}


def test_every_layer_has_a_row():
    assert list(layer_rows()) == list(LAYERS)


def test_every_layer_links_to_a_test_that_exists():
    for layer, row in layer_rows().items():
        proof = row.split("|")[-2]
        linked = re.findall(r"\]\(\.\./(tests/[a-z_]+/test_[a-z_0-9]+\.py)\)", proof)
        assert linked, f"{layer}: no test named"
        for path in linked:
            assert (CHECKOUT / path).is_file(), f"{layer}: {path} does not exist"


def test_every_module_the_page_names_exists():
    for path in re.findall(r"`(benchkit/[a-z_/]+(?:\.py)?/?)`", PAGE):
        assert (CHECKOUT / path).exists(), path
