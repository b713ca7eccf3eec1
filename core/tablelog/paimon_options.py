"""The Paimon table options tablelog refuses at create (and ``alter``), with the reason:
those whose routing or file layout tablelog cannot follow, and the file formats
and compressions pypaimon cannot write, compact and read back; the merge options are
:mod:`tablelog.merge_rules`'. Part of a table's definition (:mod:`tablelog.definition`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from tablelog.errors import OptionError
from tablelog.merge_rules import check_merge_options


@attrs.frozen
class RefusedOption:
    """A Paimon option tablelog cannot honour end to end, unless it has an ``allowed`` value."""

    key: str
    reason: str
    allowed: tuple[str, ...] = ()  # the values that are fine (Paimon's default among them)
    # pypaimon reads the value as given: `PARQUET` or ` orc` fail at the first write
    exact: bool = False

    def refuses(self, value: Any) -> bool:
        given = str(value) if self.exact else str(value).strip().lower()
        return given not in self.allowed


#: The ``file.format`` values pypaimon writes, compacts and reads back (each tested).
FILE_FORMATS = ("parquet", "orc", "avro", "row")
#: The formats pypaimon writes changelog files in.
CHANGELOG_FILE_FORMATS = ("parquet", "orc", "avro")
#: Per file format, the ``file.compression`` values both of pypaimon's writers take (the
#: native parquet writer takes `uncompressed`, `gz` and `lz4_raw`, then the compaction's
#: writer fails on them). The `row` format always compresses with zstd.
FILE_COMPRESSIONS = {
    "parquet": ("zstd", "snappy", "gzip", "lz4", "none"),
    "orc": ("zstd", "snappy", "zlib", "lz4", "uncompressed"),
    "avro": ("zstd", "snappy", "deflate", "bzip2", "xz", "zstandard", "null"),
}

_READ_OPTION = (
    "a Paimon read option: stored with the table it would pin or filter every read of the "
    "table files; tablelog readers take `scan.mode` and positions instead"
)

#: Paimon options refused at creation, with the reason (docs/options.md lists them).
REFUSED_PAIMON_OPTIONS: tuple[RefusedOption, ...] = (
    RefusedOption(
        "deletion-vectors.enabled",
        "pypaimon's writer does not maintain deletion vectors: reads of such a table return no rows",
        ("false",),
    ),
    RefusedOption(
        "file.format",
        "pypaimon writes, compacts and reads back data files in these formats only (lower case, as "
        "pypaimon compares them); `csv`, `json` and the rest fail at the first write",
        FILE_FORMATS, exact=True,
    ),
    RefusedOption(
        "changelog-file.format",
        "pypaimon writes changelog files (`changelog-producer=input`) in these formats only",
        CHANGELOG_FILE_FORMATS, exact=True,
    ),
    RefusedOption(
        "data-file.thin-mode",
        "Paimon's option says whether primary-key data files leave out the `_KEY_` columns "
        "(tablelog's writers write what it says)",
        ("true", "false"),
    ),
    RefusedOption("type", "tablelog tables are Paimon tables of type `table`", ("table",)),
    RefusedOption(
        "auto-create",
        "a catalog's option to create a table when it is first used; tablelog creates its tables "
        "itself (`create_table`, `tablelog create`)",
        ("false",),
    ),
    RefusedOption(
        "path",
        "a table's files live in its warehouse (`<warehouse>/<db>.db/<name>`), where tablelog "
        "finds, locks and commits it; choose the warehouse instead",
    ),
    RefusedOption(
        "branch",
        "tablelog reads, writes and commits the table's main branch; Paimon branches are not supported",
        ("main",),
    ),
    RefusedOption("scan.fallback-branch", "Paimon branches are not supported"),
    *(
        RefusedOption(key, _READ_OPTION)
        for key in (
            "scan.snapshot-id", "scan.tag-name", "scan.timestamp", "scan.version", "scan.watermark",
            "scan.creation-time-millis", "scan.file-creation-time-millis", "incremental-between-timestamp",
        )
    ),
)

_REFUSED = {r.key: r for r in REFUSED_PAIMON_OPTIONS}


def check_paimon_options(
    options: Mapping[str, str], schema: pa.Schema, primary_key: Sequence[str],
    table_options: Mapping[str, str] | None = None, *, partition_keys: Sequence[str] = (),
) -> None:
    """Refuse Paimon options tablelog cannot honour end to end, naming the reason.
    ``table_options``: the table's own, when ``options`` change an existing table;
    ``partition_keys``: the table's partition columns. An existing table's merge options
    are fixed (:func:`~tablelog.merge_rules.check_merge_options_kept`): they are checked at create."""
    if table_options is None:
        check_merge_options(options, schema, primary_key, partition_keys)
    for key, value in options.items():
        refused = _REFUSED.get(key)
        if refused is None or not refused.refuses(value):
            continue
        allowed = f" (allowed: {', '.join(repr(v) for v in refused.allowed)})" if refused.allowed else ""
        raise OptionError(f"table option {key}={value!r} is not supported{allowed}: {refused.reason}")
    if "bucket-key" in options:
        _check_bucket_key(options["bucket-key"], schema, primary_key, partition_keys)
    if {"file.format", "file.compression", "changelog-producer", "changelog-file.format"} & set(options):
        _check_file_compression({**(table_options or {}), **options})
    if {"file.format", "data-file.thin-mode"} & set(options):
        _check_thin_mode({**(table_options or {}), **options})


def _check_thin_mode(options: Mapping[str, str]) -> None:
    """pypaimon reads a ``row`` file by position, as the layout with key columns has them."""
    if options.get("file.format") == "row" and str(options.get("data-file.thin-mode")).strip().lower() == "true":
        raise OptionError(
            "table option data-file.thin-mode='true' is not supported with file.format='row': pypaimon "
            "reads row files by position, with the _KEY_ columns first; use another format, or thin mode false"
        )


def _check_file_compression(options: Mapping[str, str]) -> None:
    """The compression must suit the data files' format, and with ``changelog-producer=input``
    the changelog files' too (pypaimon writes both with ``file.compression``)."""
    file_format = options.get("file.format", "parquet")
    formats = {"file.format": file_format}
    if str(options.get("changelog-producer", "none")).strip().lower() == "input":
        changelog_format = options.get("changelog-file.format", file_format)
        if changelog_format not in CHANGELOG_FILE_FORMATS:
            raise OptionError(
                f"table option changelog-producer='input' with file.format={file_format!r} is not supported: "
                f"pypaimon writes changelog files in {', '.join(repr(f) for f in CHANGELOG_FILE_FORMATS)} only; "
                "set changelog-file.format to one of them"
            )
        formats["changelog-file.format"] = changelog_format
    compression = str(options.get("file.compression", "zstd")).strip().lower()
    for key, shown in formats.items():
        allowed = FILE_COMPRESSIONS.get(shown)
        if allowed is not None and compression not in allowed:
            raise OptionError(
                f"table option file.compression={options['file.compression']!r} is not supported with "
                f"{key}={shown!r} (allowed: {', '.join(repr(c) for c in allowed)}): pypaimon cannot "
                "write that format with it"
            )


def _check_bucket_key(value: str, schema: pa.Schema, primary_key: Sequence[str], partition_keys: Sequence[str]) -> None:
    columns = [c.strip() for c in value.split(",") if c.strip()]
    unknown = [c for c in columns if c not in schema.names]
    if not columns or unknown:
        raise OptionError(
            f"table option bucket-key={value!r} names {'no column' if not columns else f'unknown columns {unknown}'}; "
            f"columns: {', '.join(schema.names)}"
        )
    outside = [c for c in columns if c not in primary_key]
    if primary_key and outside:
        raise OptionError(
            f"table option bucket-key={value!r} is not supported: {outside} not in the primary key "
            f"({', '.join(primary_key)}). The rows of one key would land in several buckets, so the "
            "table would keep several rows for it; the bucket key must be primary-key columns"
        )
    in_partition = [c for c in columns if c in partition_keys]
    if in_partition:
        raise OptionError(
            f"table option bucket-key={value!r} is not supported: {in_partition} are partition columns "
            f"({', '.join(partition_keys)}); Paimon's bucket key is chosen among the other columns"
        )
