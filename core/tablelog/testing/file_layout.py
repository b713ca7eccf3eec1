"""Check a table's data files against its options, as Apache Paimon's Java code reads them.

Any Paimon engine (Flink, Spark, Trino through Paimon's Java library) may read and write
a tablelog table, so every data file must have the columns Paimon's own writer would have
written under the table's options, and hold what Paimon's reader reads. The rules, as
``apache/paimon`` states them (``paimon-core``; the data file spec,
``docs/concepts/spec/datafile.md``, says the same):

* The writer (``io/KeyValueFileWriterFactory.FileWriterContextFactory``): a file is thin
  when ``options.dataFileThinMode() && supportsThinMode(keyType, valueType)`` (every
  key field is a ``_KEY_`` copy of a value field: true for every primary-key table), and
  its row type is ``KeyValue.schema(thin ? RowType.of() : keyType, valueType)``, which
  ``KeyValue.createKeyValueFields`` lays out as the key fields, ``_SEQUENCE_NUMBER``,
  ``_VALUE_KIND``, then the value fields. The key fields are ``_KEY_`` + each primary-key
  column that is not a partition column (``PrimaryKeyTableUtils.PrimaryKeyFieldsExtractor``
  over ``TableSchema.trimmedPrimaryKeysFields``), the value fields every column of the
  schema the file was written with (its ``schemaId``).
* The reader (``utils/FormatReaderMapping.Builder.build`` and ``trimKeyFields``, since
  Paimon 1.0): the file's fields are derived from its schema (``fieldsExtractor`` over the
  file's data schema, not from the file), and a key field is read from the value column
  of the same field id: so it reads ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the value
  columns, never a ``_KEY_`` column, and consults no option. Readers before 1.0 read the
  ``_KEY_`` columns, which only the full layout has.

So a file agrees with the table when its columns are exactly the writer's under the
options of its schema: what Java readers of every version read, and what a Java writer
adds to the same table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tablelog.store.data_files import StoredSchema
    from tablelog.table import Table

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"


def thin_mode(options: Mapping[str, str]) -> bool:
    """``CoreOptions.dataFileThinMode()``: the option, default ``false``."""
    return str(options.get("data-file.thin-mode", "false")).strip().lower() == "true"


def written_columns(schema: StoredSchema) -> list[str]:
    """The columns Paimon's Java writer gives a primary-key data file of ``schema``."""
    keys = [] if thin_mode(schema.options) else [KEY_PREFIX + k for k in schema.key_columns]
    return [*keys, SEQUENCE_NUMBER, VALUE_KIND, *schema.columns]


def read_columns(schema: StoredSchema) -> list[str]:
    """The columns Paimon's Java reader (1.0 and later) reads from a data file of ``schema``."""
    return [SEQUENCE_NUMBER, VALUE_KIND, *schema.columns]


def file_columns(path: str) -> list[str]:
    """The top-level column names a data file holds, from its own schema (parquet, orc, avro)."""
    suffix = Path(path).suffix
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    if suffix == ".orc":
        import pyarrow.orc as orc

        return list(orc.ORCFile(path).schema.names)
    if suffix == ".avro":
        import fastavro

        with open(path, "rb") as f:
            schema: dict = fastavro.reader(f).writer_schema  # type: ignore[assignment]
            return [field["name"] for field in schema["fields"]]
    raise ValueError(f"{path}: cannot read the columns of a {suffix or 'suffix-less'} file")


def layout_problems(table: Table, snapshot_id: int | None = None) -> list[str]:
    """One line per data file of ``table`` (at ``snapshot_id``, default the latest) whose
    columns are not what Paimon's Java writer writes under the options of the file's
    schema, or lack a column Paimon's Java reader reads; empty when every file agrees."""
    from tablelog.table import internals

    files = internals(table).files
    if not files.primary_key:
        return []  # an append table's files hold the table's columns, nothing else
    if snapshot_id is None:
        latest = files.latest_snapshot()
        if latest is None:
            return []
        snapshot_id = latest.id
    problems = []
    data_files = files.data_files()
    for data_file in data_files.at(snapshot_id):
        schema = data_files.schema(data_file.schema_id)
        problems += _problems(data_file.path, file_columns(data_file.path), schema)
    return problems


def _problems(path: str, held: Sequence[str], schema: StoredSchema) -> list[str]:
    name = Path(path).name
    problems = []
    missing = [c for c in read_columns(schema) if c not in held]
    if missing:
        problems.append(f"{name}: Paimon's reader reads {missing}, which the file lacks")
    expected = written_columns(schema)
    if list(held) != expected:
        problems.append(
            f"{name}: holds {list(held)}; under data-file.thin-mode="
            f"{str(thin_mode(schema.options)).lower()} (schema {schema.schema_id}) Paimon writes {expected}"
        )
    return problems
