"""Paimon's merge engines as pure functions: the options of a table's merge
(:mod:`~tablelog.merging.options`), the field aggregators (:mod:`~tablelog.merging.aggregators`),
the merge of a key's records in Paimon's order (:mod:`~tablelog.merging.engines`), the same
merge of many keys' inserts at once in Arrow (:mod:`~tablelog.merging.merged_arrow`) and the
changes Paimon's ``lookup`` changelog producer emits for a key (:mod:`~tablelog.merging.changelog`).
Each follows its Java class, named in its docstring. No I/O, no pypaimon."""

from tablelog.merging.changelog import LookupResult, changelog, lookup
from tablelog.merging.engines import KeyValue, MergeError, merge, merged_row, sort_records, writable
from tablelog.merging.options import (
    ChangelogProducer,
    MergeEngine,
    MergeOptions,
    parse_merge_options,
)

__all__ = [
    "ChangelogProducer", "KeyValue", "LookupResult", "MergeEngine", "MergeError", "MergeOptions", "changelog", "lookup", "merge",
    "merged_row", "parse_merge_options", "sort_records", "writable",
]
