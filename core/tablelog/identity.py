"""A table's identity: a stable id, and the tag its writer tokens carry.

Every table gets an id when it is created (a random UUID in the table property
``tablelog.table-id``, never changed). Reader positions and Spark offsets carry it,
so that a position saved from one table is refused by another; writer tokens carry
a short tag derived from it, so that eventual readers can leave out the records of
other tables that share their topic.

A table without a stored id (a Paimon table another writer created) gets one derived
from its first schema file (``schema/schema-0``, written once at creation and never
rewritten): the id survives a rename and every later schema change, as a stored id does. A copy of a
table's directory keeps its id either way: a copy *is* the same table up to where
it was copied, and positions saved before the copy are valid in both.

Tokens: ``<tag>-<random>``. The tag is the first 8 hex digits of the SHA-256 of the
table id, so checking a record is a prefix comparison, not parsing. A token without
``-`` is no tablelog writer's: readers treat its record as foreign (``log.foreign-records``).
``-`` because every log system already carries it in tokens (the conformance suite's
tokens have one).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tablelog.store import TableFiles

TABLE_ID_PROPERTY = "tablelog.table-id"
TAG_SEPARATOR = "-"
_TAG_HEX_DIGITS = 8


def new_table_id() -> str:
    return str(uuid.uuid4())


def table_id(store: TableFiles) -> str:
    """The table's stored id, or for a table without one (another writer's), the one
    derived from its first schema file."""
    stored = store.properties.get(TABLE_ID_PROPERTY)
    if stored:
        return stored
    digest = hashlib.sha256(store.first_schema_text().encode("utf-8")).hexdigest()
    return str(uuid.UUID(hex=digest[:32]))


def token_prefix(table_id: str) -> str:
    """What every writer token of this table starts with."""
    tag = hashlib.sha256(table_id.encode("utf-8")).hexdigest()[:_TAG_HEX_DIGITS]
    return tag + TAG_SEPARATOR


def is_other_tables(token: str, own_prefix: str) -> bool:
    """Whether a writer token was written for another table: it has a tag, not ours.
    (A token without a tag is no tablelog writer's: the caller treats it as foreign.)"""
    return not token.startswith(own_prefix) and TAG_SEPARATOR in token
