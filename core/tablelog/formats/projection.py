"""The projection stream of an ``arrow`` log (``log.arrow.projection``): a second topic whose
records hold only some of the table's columns, for readers that ask for no others.

Why a second stream: a log broker sends whole records. A reader that decodes 2 of 20
columns of a record still fetches all 20, so on Kafka and Pulsar fetching the bytes,
not decoding them, bounds a pruned read. Records of the projection's columns alone
are fetched at the cost of those columns only.

What it is:

* Topic ``<topic>.projection``, with the table topic's partitions; bucket b still goes
  to partition b.
* Its records are ``arrow`` records (:mod:`tablelog.formats.arrow`) of ``_kind``, the
  key columns and the projection's columns, in the table schema's order, written by
  the same write attempt under the same writer token, with sequence numbers of their own.
* A snapshot records the projection's ranges beside the table topic's
  (:class:`~tablelog.commit.log_commit.LogCommitRecord.projection`). So a projection
  record is committed exactly when the table topic's records of its attempt are.

Who reads it: a transactional reader given ``columns`` that the projection holds reads
each snapshot that recorded a projection from it, and the others from the table topic
(:func:`reads_projection`). It reads such a snapshot whole in one poll, so that its
position is never inside one: a position is then valid for both streams. Eventual and
hybrid readers and the Spark source read the table topic, which stays complete: foreign
readers find whole rows there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pyarrow as pa

from tablelog.errors import OptionError
from tablelog.options import LogFormat, TableOptions

#: Appended to the table topic's name (and to the plugin option naming it, where given:
#: :func:`tablelog.topic_owners.stream_config`): the projection stream's topic.
TOPIC_SUFFIX = ".projection"
KEY = "log.arrow.projection"


def check_projection(options: TableOptions, schema: pa.Schema, primary_key: Sequence[str]) -> None:
    """Refuse a ``log.arrow.projection`` the table cannot have, naming what is allowed."""
    named = options.log_arrow_projection
    if not named:
        return
    value = ",".join(named)
    if not options.log_enabled or options.log_format is not LogFormat.ARROW:
        raise OptionError(
            f"option {KEY}={value!r} needs log.format=arrow and a log.system; the table has "
            f"log.format={options.log_format.value}, log.system={options.log_system}"
        )
    unknown = [c for c in named if c not in schema.names]
    if unknown:
        raise OptionError(f"option {KEY}={value!r} names unknown columns {unknown}; columns: {', '.join(schema.names)}")
    if all(c in primary_key for c in named):
        raise OptionError(
            f"option {KEY}={value!r} names only primary-key columns, which every record holds anyway; "
            "name the other columns readers ask for"
        )


def projected_columns(schema: pa.Schema, primary_key: Sequence[str], named: Collection[str]) -> list[str]:
    """The columns of a projection record, in the schema's order: the key and the named ones."""
    return [name for name in schema.names if name in named or name in primary_key]


def reads_projection(columns: Collection[str] | None, projected: Collection[str]) -> bool:
    """Whether a reader of ``columns`` (None: all) can read a projection of ``projected``."""
    return columns is not None and bool(projected) and set(columns) <= set(projected)
