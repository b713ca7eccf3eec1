"""The option listing: each tablelog option with its default and doc line, from the
definitions (:class:`~tablelog.options.definitions.TableOptions`) and the warehouse's
``s3.*`` keys. ``tablelog options --markdown`` renders it into docs/options.md."""

from __future__ import annotations

import attrs

from tablelog.options.converters import as_text
from tablelog.options.definitions import TableOptions

#: Appended to the doc line of an option that defines the table, in the option listings.
DEFINES_TABLE = " **Defines the table**: may be given again later, not changed."
#: Appended instead to the doc line of an option that defines the table's log records.
DEFINES_LOG = (" **Defines the table's log**: may be given again later, changed only with the log itself "
               "(an alter attaching or moving it: docs/attaching.md).")


@attrs.frozen
class OptionDoc:
    key: str
    default: str
    doc: str


def option_docs() -> list[OptionDoc]:
    """Every tablelog option with its default and doc line, in declaration order."""
    docs = []
    for field in attrs.fields(TableOptions):
        default = "—" if field.default in (None, ()) else as_text(field.default)
        doc = field.metadata["doc"]
        if field.metadata["of_log"]:
            doc += DEFINES_LOG
        elif field.metadata["fixed"]:
            doc += DEFINES_TABLE
        docs.append(OptionDoc(field.metadata["key"], default, doc))
    from tablelog.store.s3 import S3_OPTION_DOCS

    docs.extend(OptionDoc(key, "—", doc) for key, doc in S3_OPTION_DOCS.items())
    return docs
