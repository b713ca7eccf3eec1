"""The normalize operator turns an at-least-once changelog into a correct one."""

from tablelog.normalize import Normalizer
from tablelog.reading import Change
from tablelog.records import RowKind


def change(kind: str, id_: int, name: str) -> Change:
    return Change(RowKind(kind), {"id": id_, "name": name})


def kinds(changes: list[Change]) -> list[tuple[str, int, str]]:
    return [(c.kind.value, c.row["id"], c.row["name"]) for c in changes]


def test_duplicates_are_dropped() -> None:
    n = Normalizer(["id"])
    assert kinds(n.apply([change("+I", 1, "a"), change("+I", 1, "a")])) == [("+I", 1, "a")]


def test_upsert_of_a_known_key_becomes_an_update_pair() -> None:
    n = Normalizer(["id"])
    out = n.apply([change("+I", 1, "a"), change("+U", 1, "b")])
    assert kinds(out) == [("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b")]


def test_delete_emits_the_full_old_row_once() -> None:
    n = Normalizer(["id"])
    out = n.apply([change("+I", 1, "a"), change("-D", 1, "ignored"), change("-D", 1, "ignored")])
    assert kinds(out) == [("+I", 1, "a"), ("-D", 1, "a")]
    assert n.rows() == []


def test_update_before_records_are_absorbed() -> None:
    n = Normalizer(["id"])
    out = n.apply([change("+I", 1, "a"), change("-U", 1, "a"), change("+U", 1, "b")])
    assert kinds(out) == [("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b")]


def test_replayed_stream_normalizes_to_the_same_state() -> None:
    stream = [change("+I", i, "v") for i in range(5)] + [change("+U", 2, "w"), change("-D", 4, "v")]
    n = Normalizer(["id"])
    n.apply(stream + stream)
    assert sorted((r["id"], r["name"]) for r in n.rows()) == [(0, "v"), (1, "v"), (2, "w"), (3, "v")]


def test_a_repeated_row_holding_nan_is_a_duplicate_and_a_nan_key_is_one_key() -> None:
    n = Normalizer(["key"])
    first = Change(RowKind.INSERT, {"key": float("nan"), "x": float("nan")})
    again = Change(RowKind.INSERT, {"key": float("nan"), "x": float("nan")})  # other NaN objects, read again
    assert [c.kind for c in n.apply([first, again])] == [RowKind.INSERT]
    assert len(n.rows()) == 1
