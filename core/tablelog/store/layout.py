"""The columns of a primary-key table's data files, as Paimon defines them, and the table
option that declares them.

Paimon's data file spec (``docs/concepts/spec/datafile.md``) and its Java writer
(``KeyValueFileWriterFactory``): a primary-key data file holds ``_KEY_<k>`` for each
primary-key column that is not a partition column, then ``_SEQUENCE_NUMBER``, then
``_VALUE_KIND``, then every column of the table. With ``data-file.thin-mode = true`` the
``_KEY_`` columns are left out (the key is in the value columns already). Java readers
since Paimon 1.0 take the key from the value columns whatever the file holds
(``FormatReaderMapping.trimKeyFields``), older ones read the ``_KEY_`` columns, and a
Java writer writes what the option says: so the files must be what the option declares.

pypaimon's two writers ignore the option: its native (pypaimon-rust) writer always leaves
the key columns out, its Python writer (and compaction, which writes with it) always
writes them. tablelog therefore decides per table (:func:`writes_thin`) and makes every
writer write that (:mod:`tablelog.store.writes`, :mod:`tablelog.store.compaction`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Paimon's table option: primary-key data files without the ``_KEY_`` columns.
THIN_MODE = "data-file.thin-mode"
KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
#: The ``_VALUE_KIND`` bytes of the row kinds that retract: ``-U`` and ``-D``.
RETRACTION_KINDS = (1, 3)
#: Arrow bytes of the rows of a row group of a Parquet data file tablelog writes: pypaimon's
#: reader decodes a row group at once, so a compaction merging several files, or a full
#: scan reading one, holds that much a file (pyarrow's default, a million rows a group, is
#: most of a file of ``target-file-size``).
ROW_GROUP_BYTES = 16 << 20
#: Rows of a row group, at least: many narrow rows in a group compress and scan well.
MIN_ROW_GROUP_ROWS = 8192


def writes_thin(properties: Mapping[str, str]) -> bool:
    """Whether a table's data files leave out the key columns: Paimon's option, whose
    default is ``false`` (so a table that does not declare it has the key columns)."""
    return str(properties.get(THIN_MODE, "false")).strip().lower() == "true"


def without_key_columns(data: Any) -> Any:
    """Key-value rows (an Arrow table) without their ``_KEY_`` columns: the thin layout."""
    keys = [name for name in data.schema.names if name.startswith(KEY_PREFIX)]
    return data.drop_columns(keys) if keys else data


def retractions(rows: Any) -> Any:
    """Per row of ``rows`` (key-value rows, an Arrow table), whether it retracts (a numpy
    array of booleans)."""
    import numpy as np

    return np.isin(rows.column(VALUE_KIND).to_numpy(), RETRACTION_KINDS)


def row_group_rows(rows: Any) -> int:
    """Rows of a row group of ``ROW_GROUP_BYTES`` for rows like ``rows`` (an Arrow table)."""
    return max(MIN_ROW_GROUP_ROWS, ROW_GROUP_BYTES * rows.num_rows // max(rows.nbytes, 1))
