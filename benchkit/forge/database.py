"""The forge's database: one SQLite database (a file, or in memory) behind one lock, and
the generic access every part of the store builds its queries on.

Rows are plain dicts. Times are integer Unix seconds (Gitea's API shows whole seconds).
"""

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

from .schema import SCHEMA


def present(row: dict | None, what: str) -> dict:
    """A row the caller knows exists: it has just written or checked it, or reaches it by
    a foreign key (a missing one is a bug of ours, answered as a 500)."""
    if row is None:
        raise LookupError(f"{what} is missing")
    return row


def now() -> int:
    """The time as Gitea's API shows it: whole Unix seconds."""
    return int(time.time())


class Database:
    """The connection and its lock; the store's parts are built on its generic access."""

    def __init__(self, path: str = ":memory:") -> None:
        self.lock = threading.RLock()
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = _dict_row
        if path != ":memory:":
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        if "scope" not in {c["name"] for c in self.db.execute("PRAGMA table_info(tokens)")}:
            # A database file from before token scopes: its tokens keep every right.
            self.db.execute("ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'all'")
        if "patch" not in {c["name"] for c in self.db.execute("PRAGMA table_info(review_comments)")}:
            # A database file from before review comments kept their diff hunk.
            self.db.execute("ALTER TABLE review_comments ADD COLUMN patch TEXT NOT NULL DEFAULT ''")

    def close(self) -> None:
        """Close the connection (under the lock: no query is cut off)."""
        with self.lock:
            self.db.close()

    @contextmanager
    def tx(self) -> Iterator[Self]:
        """One atomic unit of work under the lock (re-entrant: nested calls join it)."""
        with self.lock:
            if self.db.in_transaction:
                yield self
                return
            self.db.execute("BEGIN")
            try:
                yield self
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- generic access -------------------------------------------------------
    def one(self, sql: str, *args: object) -> dict | None:
        """The first row the query yields, if any."""
        with self.lock:
            return self.db.execute(sql, args).fetchone()

    def get(self, table: str, row_id: int) -> dict | None:
        """The row of `table` with this id, if there is one."""
        return self.one(f"SELECT * FROM {table} WHERE id = ?", row_id)

    def row(self, table: str, row_id: int) -> dict:
        """The row of `table` with this id, which the caller knows exists (it has just
        written it, or reaches it by a foreign key)."""
        return present(self.get(table, row_id), f"{table} row {row_id}")

    def must(self, sql: str, *args: object) -> dict:
        """The one row a query certainly yields (an aggregate's, say)."""
        return present(self.one(sql, *args), "the row of an aggregate")

    def all(self, sql: str, *args: object) -> list[dict]:
        """Every row the query yields."""
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    def value(self, sql: str, *args: object) -> Any:
        """The first column of the first row, or None."""
        row = self.one(sql, *args)
        return next(iter(row.values())) if row else None

    def insert(self, table: str, **values: object) -> int:
        """Insert a row; its id."""
        cols = ", ".join(values)
        marks = ", ".join("?" * len(values))
        with self.lock:
            cur = self.db.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))
            return cur.lastrowid or 0  # an INSERT always sets it

    def update(self, table: str, key: dict, **values: object) -> None:
        """Set `values` on the rows of `table` that match `key` (column -> value)."""
        if not values:
            return
        sets = ", ".join(f"{c} = ?" for c in values)
        where = " AND ".join(f"{c} = ?" for c in key)
        with self.lock:
            self.db.execute(f"UPDATE {table} SET {sets} WHERE {where}", (*values.values(), *key.values()))

    def execute(self, sql: str, *args: object) -> None:
        """Run a statement that yields no rows."""
        with self.lock:
            self.db.execute(sql, args)

    def in_repo(self, table: str, repo_id: int, column: str, value: object) -> dict | None:
        """The repository's row of `table` whose `column` is `value`, if there is one."""
        return self.one(f"SELECT * FROM {table} WHERE repo_id = ? AND {column} = ?", repo_id, value)


def _dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}
