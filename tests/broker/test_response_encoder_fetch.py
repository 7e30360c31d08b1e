"""The compiled Fetch response (kafkacore/broker/network/response_encoder.pyx) against the codec.

The reference is what the broker did before: fit the body to the version
(:func:`~kafkacore.broker.network.api_request_handler.fit_to_version`), encode it with
:func:`kafkacore.protocol.codec.encode_response`, and put the size in front
(:meth:`~kafkacore.broker.network.request_channel.RequestChannel.send_response`).  A Fetch answer is a
list of parts: bytes, and the records' file regions sent from their segment files; the two
lists must put the same bytes and the same regions (the very objects) in the same order.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from kafkacore.broker.log.file_records import FileRecords
from kafkacore.broker.network.api_request_handler import fit_to_version
from kafkacore.broker.network.request_channel import payload_size
from kafkacore.broker.network.response_encoder import FETCH_VERSIONS, encode_fetch_response
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

FETCH = codec.RESPONSES[ApiKey.FETCH]
INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)

# A segment file's stand-in: the regions drawn below point into it (never sent here).
_SEGMENT_FD, _SEGMENT_PATH = tempfile.mkstemp(prefix="kafkacore-fetch-encoder-")
os.write(_SEGMENT_FD, b"\0" * 4096)


@pytest.fixture(scope="module", autouse=True)
def _segment_file():
    yield
    os.close(_SEGMENT_FD)
    os.unlink(_SEGMENT_PATH)


def file_records(size: int) -> FileRecords:
    return FileRecords(_SEGMENT_FD, 0, size)


# What the replica manager puts in a partition's records: nothing, bytes (short ones are
# copied into the frame, long ones are parts of their own), or a region of a segment file.
records = (st.none() | st.just(b"") | st.binary(max_size=40) | st.binary(min_size=600, max_size=700)
           | st.builds(file_records, st.integers(0, 4096)))
tagged_epoch = st.fixed_dictionaries({"epoch": INT32, "end_offset": INT64})
tagged_leader = st.fixed_dictionaries({"leader_id": INT32, "leader_epoch": INT32})
tagged_snapshot = st.fixed_dictionaries({"end_offset": INT64, "epoch": INT32})
partitions = st.fixed_dictionaries({
    "partition_index": INT32,
    "error_code": st.sampled_from(list(Errors)) | INT16,
    "high_watermark": INT64,
    "last_stable_offset": INT64,
    "log_start_offset": INT64,
    "aborted_transactions": st.none() | st.lists(st.fixed_dictionaries(
        {"producer_id": INT64, "first_offset": INT64}), max_size=3),
    "preferred_read_replica": INT32,
    "records": records,
}, optional={
    # the tagged fields (v12+): at their defaults (not written) or set
    "diverging_epoch": st.just({"epoch": -1, "end_offset": -1}) | tagged_epoch,
    "current_leader": st.just({"leader_id": -1, "leader_epoch": -1}) | tagged_leader,
    "snapshot_id": st.just({"end_offset": -1, "epoch": -1}) | tagged_snapshot,
})
bodies = st.fixed_dictionaries({
    "throttle_time_ms": INT32,
    "error_code": st.sampled_from(list(Errors)) | INT16,
    "session_id": INT32,
    "responses": st.lists(st.fixed_dictionaries({
        "topic": st.text(max_size=12),
        "topic_id": st.uuids() | st.just(uuid.UUID(int=0)),
        "partitions": st.lists(partitions, max_size=3)}), max_size=3),
}, optional={"node_endpoints": st.just([])})

# Values the codec refuses or writes its own way: another type, out of range, a tagged field
# the compiled code leaves to the codec (node endpoints), a structure's wrong shape.
odd_values = (st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
              | st.none() | st.text(max_size=3) | st.just(()) | st.just([]) | st.just({})
              | st.just(bytearray(b"xy")) | st.just(memoryview(b"xyz"))
              | st.just({"epoch": 2, "end_offset": 3, "other": 1}) | st.just({"leader_id": 2**40})
              | st.just([{"node_id": 1, "host": "h", "port": 9092, "rack": None}])
              | st.just("x" * 40000) | st.just(uuid.UUID(int=5)))
odd_keys = st.sampled_from([
    "throttle_time_ms", "error_code", "session_id", "responses", "node_endpoints", "topic",
    "topic_id", "partitions", "partition_index", "high_watermark", "last_stable_offset",
    "log_start_offset", "aborted_transactions", "preferred_read_replica", "records",
    "diverging_epoch", "current_leader", "snapshot_id", "producer_id", "first_offset", "epoch",
    "end_offset", "leader_id", "no_such_field"])


def parts(frame: list) -> list:
    """A frame's parts with adjacent buffers joined: bytes, and file regions as themselves."""
    out: list = []
    for part in frame:
        if hasattr(part, "write_to"):
            out.append(part)
        elif out and isinstance(out[-1], bytes):
            out[-1] += bytes(part)
        else:
            out.append(bytes(part))
    return [p for p in out if not isinstance(p, bytes) or p]


def codec_frame(version: int, correlation_id: int, body: object) -> tuple:
    """Fitted, encoded by the codec, the size in front (RequestChannel.send_response)."""
    try:
        fitted = fit_to_version(FETCH.body, version, body)
        payload = codec.encode_response(ApiKey.FETCH, version, correlation_id, fitted)
        frame = [payload_size(payload).to_bytes(4, "big"), *payload]
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("error", type(exc))
    return ("ok", parts(frame))


def broker_frame(version: int, correlation_id: int, body: object) -> tuple:
    """What ApiRequestHandler.respond does for a Fetch: compiled, else the codec's way."""
    frame = encode_fetch_response(version, correlation_id, body)
    return ("ok", parts(frame)) if frame is not None else codec_frame(version, correlation_id,
                                                                       body)


def regions_of(body: dict) -> list:
    return [p["records"] for t in body["responses"] for p in t["partitions"]
            if hasattr(p.get("records"), "write_to")]


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(list(FETCH_VERSIONS)), INT32, bodies)
def test_handler_bodies_are_written_as_the_codec_writes_them(version, correlation_id, body):
    try:
        frame = encode_fetch_response(version, correlation_id, body)
        assert frame is not None  # never left to the codec
        assert all(type(p) is bytes or hasattr(p, "write_to") for p in frame)
        assert int.from_bytes(frame[0][:4], "big") == payload_size(frame) - 4
        assert ("ok", parts(frame)) == codec_frame(version, correlation_id, body)
        fitted = fit_to_version(FETCH.body, version, body)  # fitted already: the same parts
        assert parts(encode_fetch_response(version, correlation_id, fitted)) == parts(frame)
    finally:
        for region in regions_of(body):
            region.close()


@settings(max_examples=examples(400), deadline=None)
@given(st.sampled_from(list(FETCH_VERSIONS)), INT32, bodies, st.data())
def test_odd_bodies_are_written_or_refused_as_by_the_codec(version, correlation_id, body, data):
    """Any value or key put anywhere (the body, a topic, a partition, an aborted transaction,
    a tagged structure)."""
    regions = regions_of(body)
    try:
        places = [body, *body["responses"]]
        for topic in body["responses"]:
            for p in topic["partitions"]:
                places += [p, *(p["aborted_transactions"] or ())]
                places += [p[k] for k in ("diverging_epoch", "current_leader", "snapshot_id")
                           if k in p]
        for _ in range(data.draw(st.integers(1, 3))):
            place = data.draw(st.sampled_from(places))
            if data.draw(st.booleans()):
                place.pop(data.draw(odd_keys), None)
            else:
                place[data.draw(odd_keys)] = data.draw(odd_values)
        assert broker_frame(version, correlation_id, body) == codec_frame(
            version, correlation_id, body)
    finally:
        for region in regions:
            region.close()


def test_a_region_is_a_part_of_its_own_between_the_bytes_around_it():
    region = file_records(100)
    try:
        body = {"throttle_time_ms": 0, "error_code": Errors.NONE, "session_id": 0,
                "responses": [{"topic": "t", "topic_id": uuid.uuid4(), "partitions": [
                    {"partition_index": 0, "records": region},
                    {"partition_index": 1, "records": b""}]}]}
        for version in (4, 12, 17):
            frame = encode_fetch_response(version, 7, body)
            assert [type(p) for p in frame] == [bytes, FileRecords, bytes]
            assert frame[1] is region
            assert parts(frame) == codec_frame(version, 7, body)[1]
    finally:
        region.close()


def test_what_is_not_covered_is_left_to_the_codec():
    assert encode_fetch_response(max(FETCH_VERSIONS) + 1, 1, {"responses": []}) is None
    assert all(v in FETCH.valid for v in FETCH_VERSIONS)
    assert encode_fetch_response(16, 1, {"responses": [], "node_endpoints": [
        {"node_id": 1, "host": "h", "port": 9092, "rack": None}]}) is None
    assert encode_fetch_response(12, 2**31, {"responses": []}) is None
