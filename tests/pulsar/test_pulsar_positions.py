"""Positions: Pulsar message ids encoded into ints that order like the broker and decode exactly."""

from __future__ import annotations

import itertools
import json
import random
import time
import uuid

import pulsar
import pytest

from tablelog_pulsar import positions


def test_encode_decode_round_trip_is_exact() -> None:
    rng = random.Random(4)
    samples = [(0, 0, -1), (0, 0, 0), (3, 5, 9), (2**18 - 1, positions.MAX_ENTRY_ID, positions.MAX_BATCH_INDEX),
               (2**40, 12345, 17), (2**63 - 1, 7, -1)]
    samples += [(rng.randrange(2**20), rng.randrange(2**31), rng.randrange(-1, 16383)) for _ in range(2000)]
    for ledger, entry, batch in samples:
        position = positions.encode(ledger, entry, batch)
        assert position >= 0
        assert positions.decode(position) == (ledger, entry, batch)
        assert json.loads(json.dumps(position)) == position


def test_encoding_orders_like_the_broker() -> None:
    ids = list(itertools.product([0, 1, 7, 2**17], [0, 1, 2, 50_000, positions.MAX_ENTRY_ID], [-1, 0, 1, 999]))
    by_broker = sorted(ids)  # the broker orders by (ledger, entry, batch index)
    by_position = sorted(ids, key=lambda i: positions.encode(*i))
    assert by_position == by_broker
    assert len({positions.encode(*i) for i in ids}) == len(ids)


def test_positions_stay_within_signed_64_bits_for_ledgers_below_2_pow_18() -> None:
    biggest = positions.encode(2**18 - 1, positions.MAX_ENTRY_ID, positions.MAX_BATCH_INDEX)
    assert biggest < positions.SIGNED_64_LIMIT


def test_ids_the_encoding_cannot_hold_are_rejected_not_wrapped() -> None:
    for bad in [(-1, 0, 0), (0, -1, 0), (0, positions.MAX_ENTRY_ID + 1, 0), (0, 0, -2),
                (0, 0, positions.MAX_BATCH_INDEX + 1)]:
        with pytest.raises(positions.PositionRangeError):
            positions.encode(*bad)
    for bad_position in (-1, True, 1.5, "3"):
        with pytest.raises(positions.PositionRangeError):
            positions.decode(bad_position)  # type: ignore[arg-type]


def test_message_id_rebuilt_from_parts_equals_original() -> None:
    for ledger, entry, batch in [(0, 0, -1), (5, 7, 3), (2**30, 2**31 - 1, 16382)]:
        original = pulsar.MessageId(partition=-1, ledger_id=ledger, entry_id=entry, batch_index=batch)
        rebuilt = positions.to_message_id(positions.encode_message_id(original))
        assert (rebuilt.ledger_id(), rebuilt.entry_id(), rebuilt.batch_index()) == (ledger, entry, batch)
        assert rebuilt == original


def test_message_id_positional_arguments_start_with_the_partition() -> None:
    # The trap behind "a round trip changed the ledger id": MessageId's first
    # positional argument is the partition, so MessageId(ledger, entry, ...) shifts
    # every field. positions.to_message_id uses keywords.
    shifted = pulsar.MessageId(7, 123, 5, 0)
    assert (shifted.partition(), shifted.ledger_id(), shifted.entry_id()) == (7, 123, 5)


def test_real_broker_ids_encode_in_order_and_rebuild_exactly(pulsar_service_url: str) -> None:
    client = pulsar.Client(pulsar_service_url, operation_timeout_seconds=10)
    try:
        topic = f"persistent://public/default/ids-{uuid.uuid4().hex[:10]}"
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=50,
                                          batching_max_publish_delay_ms=5)
        acked: list[pulsar.MessageId] = []
        for i in range(5):
            acked.append(producer.send(f"single-{i}".encode()))  # one-message entries
        for i in range(300):
            producer.send_async(f"batched-{i}".encode(), lambda res, mid: acked.append(mid))
        producer.flush()
        # flush() returns once the broker acknowledged every send; the client runs the
        # send_async callbacks on its own thread, possibly a moment later.
        deadline = time.monotonic() + 10
        while len(acked) < 305 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked) == 305
        encoded = [positions.encode_message_id(mid) for mid in acked]
        assert encoded == sorted(encoded) and len(set(encoded)) == len(encoded)
        assert any(mid.batch_index() > 0 for mid in acked)

        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        read = []
        for _ in range(305):
            message = reader.read_next(10_000)
            read.append((message.data(), positions.encode_message_id(message.message_id())))
        reader.close()
        assert [p for _, p in read] == encoded  # the reader sees the ids the producer got

        for mid, position in zip(acked, encoded, strict=True):
            rebuilt = positions.to_message_id(position)
            assert (rebuilt.ledger_id(), rebuilt.entry_id(), rebuilt.batch_index()) == (
                mid.ledger_id(), mid.entry_id(), mid.batch_index())
            # serialize/deserialize, checked on this client and broker: exact too, but
            # it returns a raw _pulsar.MessageId; positions never depend on it.
            back = pulsar.MessageId.deserialize(mid.serialize())
            assert (back.ledger_id(), back.entry_id(), back.batch_index()) == (
                mid.ledger_id(), mid.entry_id(), mid.batch_index())

        # A reader opened at a rebuilt id starts exactly there (inclusive).
        middle = 150
        reader = client.create_reader(topic, positions.to_message_id(encoded[middle]),
                                      start_message_id_inclusive=True)
        first = reader.read_next(10_000)
        reader.close()
        assert positions.encode_message_id(first.message_id()) == encoded[middle]
        assert first.data() == read[middle][0]
    finally:
        client.close()


def test_a_position_follows_the_previous_one_in_its_batch_or_as_the_next_entrys_first() -> None:
    enc = positions.encode
    assert positions.follows(enc(3, 7, 4), enc(3, 7, 5))
    assert positions.follows(enc(3, 7, 4), enc(3, 8, 0))  # the next entry, a batch
    assert positions.follows(enc(3, 7, -1), enc(3, 8, -1))  # the next entry, no batch
    assert not positions.follows(enc(3, 7, 4), enc(3, 7, 6))  # a message between
    assert not positions.follows(enc(3, 7, 4), enc(3, 9, 0))  # an entry between
    assert not positions.follows(enc(3, 7, 4), enc(3, 8, 1))  # the next entry's first is missing
    assert not positions.follows(enc(3, 7, 4), enc(4, 0, 0))  # another ledger
    assert positions.starts_entry(enc(3, 7, 0)) and positions.starts_entry(enc(3, 7, -1))
    assert not positions.starts_entry(enc(3, 7, 1))
