"""The sample is declared once, in benchkit.sample.Record: its JSON Schema
(benchkit/schemas/sample.schema.json) and the contracts page (docs/contracts.md) must
say the same fields, so a field added to the record and forgotten in either fails here."""

import json
import re

import msgspec

from benchkit import PACKAGE_DIR
from benchkit.sample import Record

CHECKOUT = PACKAGE_DIR.parent
SCHEMA = json.loads((PACKAGE_DIR / "schemas" / "sample.schema.json").read_text())


def record_fields() -> list[str]:
    return [field.encode_name for field in msgspec.structs.fields(Record)]


def test_the_schema_declares_exactly_the_records_fields():
    assert sorted(SCHEMA["properties"]) == sorted(record_fields())


def test_the_schema_requires_what_the_record_has_no_default_for():
    required = {field.encode_name for field in msgspec.structs.fields(Record)
                if field.required}
    assert required <= set(SCHEMA["required"])


def test_the_contracts_page_names_every_field():
    page = (CHECKOUT / "docs" / "contracts.md").read_text()
    table = page[page.index("## Samples"):]
    named = set(re.findall(r"`([a-z_0-9]+)`", table))
    assert set(record_fields()) - {"schema_version"} <= named, \
        sorted(set(record_fields()) - named)
