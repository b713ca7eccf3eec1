"""A child process that uses an S3 warehouse over TLS (tests/cluster/test_s3_tls.py): pyarrow's
S3 client takes the CAs it trusts once per process, so each scenario starts in a fresh one.

Config (JSON on stdin): ``action`` (``write``: create the tables and commit ``commits`` writes
of ``rows`` rows to each; ``read``: count each table's rows), ``warehouse``, ``options``, and
``pyarrow_first``: load pyarrow's S3 before tablelog. Prints one JSON line: the rows per
table, or the error's type and message. The CA comes from the environment (``AWS_CA_BUNDLE``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

#: Table name -> extra options: a deduplicate table (pypaimon-rust writes its files) and a
#: partial-update one (pypaimon's Python writer, the changelog looked up over TLS).
TABLES: dict[str, dict[str, str]] = {"db.plain": {}, "db.partial": {"merge-engine": "partial-update"}}


def _write(config: dict[str, Any]) -> dict[str, int]:
    import pyarrow as pa

    import tablelog

    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.string())])
    counts = {}
    for name, extra in TABLES.items():
        table = tablelog.create_table(config["warehouse"], name, schema, primary_key=["id"], bucket=2,
                                      options={**config["options"], **extra})
        for commit in range(config["commits"]):
            with table.writer() as writer:
                column = "a" if commit % 2 == 0 else "b"
                writer.write([{"id": i, column: f"{column}{commit}"} for i in range(config["rows"])])
                writer.commit()
        counts[name] = table.rows().num_rows
    return counts


def _read(warehouse: str, options: dict[str, str]) -> dict[str, int]:
    import tablelog

    return {name: tablelog.open_table(warehouse, name, options=options).rows().num_rows for name in TABLES}


def main() -> None:
    config = json.loads(sys.stdin.read())  # read without tablelog: its import adopts the CA
    if config.get("pyarrow_first"):
        import pyarrow.fs  # noqa: F401
    try:
        if config["action"] == "write":
            result: dict[str, Any] = {"rows": _write(config)}
        else:
            result = {"rows": _read(config["warehouse"], config["options"])}
    except Exception as err:  # noqa: BLE001 - the test asserts what it was
        result = {"error": type(err).__name__, "message": str(err)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
