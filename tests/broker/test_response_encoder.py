"""The compiled Produce response (kafkacore/broker/network/response_encoder.pyx) against the codec.

What the handlers did before is the reference: fit the body to the version
(:func:`~kafkacore.broker.network.api_request_handler.fit_to_version`), then
:func:`kafkacore.protocol.codec.encode_response`.  The compiled encoder, given the body as the
handler built it, writes the same bytes, or returns None and leaves the body to that path (which
then encodes it or raises its typed error).  Bodies as the Produce handler builds them are never
left to the codec.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from kafkacore.broker.network.api_request_handler import fit_to_version
from kafkacore.broker.network.response_encoder import PRODUCE_VERSIONS, encode_produce_response
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

PRODUCE = codec.RESPONSES[ApiKey.PRODUCE]
INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=12)
messages = st.none() | st.text(max_size=12)

# What the Produce handler and the replica manager put in a partition's answer.
partition_responses = st.fixed_dictionaries({
    "index": INT32,
    "error_code": st.sampled_from(list(Errors)) | INT16,
    "base_offset": INT64,
    "log_append_time_ms": INT64,
    "log_start_offset": INT64,
    "record_errors": st.lists(st.fixed_dictionaries(
        {"batch_index": INT32, "batch_index_error_message": messages}), max_size=2),
    "error_message": messages,
})
bodies = st.fixed_dictionaries({
    "responses": st.lists(st.fixed_dictionaries({
        "name": names,
        "partition_responses": st.lists(partition_responses, max_size=3)}), max_size=3),
    "throttle_time_ms": INT32,
})

# Values the codec refuses or writes its own way: another type, out of range, a tagged field set.
odd_values = (st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
              | st.none() | st.text(max_size=3) | st.just(()) | st.just([])
              | st.just({"leader_id": 1, "leader_epoch": 2}) | st.just("x" * 40000))
odd_keys = st.sampled_from(["index", "error_code", "base_offset", "log_append_time_ms",
                            "log_start_offset", "record_errors", "error_message",
                            "current_leader", "no_such_field", "name", "responses",
                            "throttle_time_ms", "node_endpoints", "partition_responses"])


def codec_frame(version: int, correlation_id: int, body: object) -> tuple:
    """Fitted, then encoded by the codec (ApiRequestHandler.respond for other responses)."""
    try:
        fitted = fit_to_version(PRODUCE.body, version, body)
        payload = b"".join(codec.encode_response(ApiKey.PRODUCE, version, correlation_id, fitted))
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("error", type(exc))
    return ("ok", struct.pack(">i", len(payload)) + payload)


def broker_frame(version: int, correlation_id: int, body: object) -> tuple:
    """What ApiRequestHandler.respond does for a Produce: compiled, else fitted and the codec."""
    frame = encode_produce_response(version, correlation_id, body)
    return ("ok", frame) if frame is not None else codec_frame(version, correlation_id, body)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(list(PRODUCE_VERSIONS)), INT32, bodies)
def test_handler_bodies_are_written_as_the_codec_writes_them(version, correlation_id, body):
    frame = encode_produce_response(version, correlation_id, body)
    assert frame is not None  # never left to the codec
    assert ("ok", frame) == codec_frame(version, correlation_id, body)
    fitted = fit_to_version(PRODUCE.body, version, body)  # fitted already: the same bytes
    assert encode_produce_response(version, correlation_id, fitted) == frame


@settings(max_examples=examples(400), deadline=None)
@given(st.sampled_from(list(PRODUCE_VERSIONS)), INT32, bodies, st.data())
def test_odd_bodies_are_written_or_refused_as_by_the_codec(version, correlation_id, body, data):
    """Any value or key put anywhere (the body, a topic, a partition, a record error)."""
    places = [body, *body["responses"]]
    for topic in body["responses"]:
        for p in topic["partition_responses"]:
            places += [p, *p["record_errors"]]
    for _ in range(data.draw(st.integers(1, 3))):
        place = data.draw(st.sampled_from(places))
        if data.draw(st.booleans()):
            place.pop(data.draw(odd_keys), None)
        else:
            place[data.draw(odd_keys)] = data.draw(odd_values)
    assert broker_frame(version, correlation_id, body) == codec_frame(version, correlation_id,
                                                                      body)


@pytest.mark.parametrize("version", [7, 11])
def test_a_correlation_id_out_of_range_is_left_to_the_codec(version):
    assert encode_produce_response(version, 2**31, {"responses": []}) is None
    assert codec_frame(version, 2**31, {"responses": []})[0] == "error"


def test_a_version_not_covered_is_left_to_the_codec():
    assert encode_produce_response(max(PRODUCE_VERSIONS) + 1, 1, {"responses": []}) is None
    assert all(v in PRODUCE.valid for v in PRODUCE_VERSIONS)
