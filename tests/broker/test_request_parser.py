"""The compiled request parser (kafkacore/broker/network/request_parser.pyx) against the codec.

The codec (:func:`kafkacore.protocol.codec.decode_request`) is the reference: on every frame, a
well-formed one, a truncated one or one with bytes changed, the broker's ``parse_request`` (the
compiled header and Produce body) must give the codec's result, or fail with the same error
class.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.examples import examples

from kafkacore.broker.network import request_parser
from kafkacore.broker.network.request_parser import parse_request
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

PRODUCE = codec.REQUESTS[ApiKey.PRODUCE]


def codec_parse(frame: bytes | bytearray) -> tuple:
    """What the broker read with the codec alone, before the compiled parser."""
    if len(frame) < 8:
        raise codec.ProtocolError("shorter than a header")
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    message = codec.REQUESTS.get(api_key)
    if message is None or api_version not in message.valid:
        header, _ = codec.decode(codec.REQUEST_HEADER_MESSAGE, 1, frame)
        return header, None, 0
    return codec.decode_request(frame)


def outcome(parse, frame: bytes | bytearray) -> tuple:
    try:
        return ("ok", parse(frame))
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("error", type(exc))


def same_outcome(frame: bytes) -> None:
    expected = outcome(codec_parse, frame)
    assert outcome(parse_request, bytearray(frame)) == expected  # the network's buffer type
    assert outcome(parse_request, frame) == expected


names = st.text(max_size=12)
records = st.none() | st.binary(max_size=40)
partitions = st.lists(
    st.fixed_dictionaries({"index": st.integers(-(2**31), 2**31 - 1), "records": records}),
    max_size=3)
topics = st.lists(st.fixed_dictionaries({"name": names, "partition_data": partitions}),
                  max_size=3)
produce_bodies = st.fixed_dictionaries({
    "transactional_id": st.none() | names,
    "acks": st.integers(-(2**15), 2**15 - 1),
    "timeout_ms": st.integers(-(2**31), 2**31 - 1),
    "topic_data": topics,
})


@st.composite
def produce_frames(draw) -> bytes:
    version = draw(st.integers(PRODUCE.valid.low, PRODUCE.valid.high))
    body = draw(produce_bodies)
    if version < 3:
        body["transactional_id"] = None  # v0-2 have no transactional id
    client_id = draw(st.none() | names)
    correlation_id = draw(st.integers(-(2**31), 2**31 - 1))
    return b"".join(codec.encode_request(ApiKey.PRODUCE, version, correlation_id, client_id,
                                         body))


@settings(max_examples=examples(300), deadline=None)
@given(produce_frames(), st.binary(max_size=4))
def test_produce_requests_read_as_the_codec_reads_them(frame, trailing):
    header, body, left = parse_request(bytearray(frame + trailing))
    assert (header, body, left) == codec_parse(frame + trailing)
    assert left == len(trailing)
    # The records are views of the frame (equal to the codec's copies), writable as it is.
    assert all(p["records"] is None or (type(p["records"]) is memoryview
                                        and not p["records"].readonly)
               for t in body["topic_data"] for p in t["partition_data"])


def test_the_records_are_views_of_the_frame_not_copies():
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"first"},
                                         {"index": 1, "records": b"second"}]}]}
    frame = bytearray(b"".join(codec.encode_request(ApiKey.PRODUCE, 9, 1, "c", body)))
    _, parsed, _ = parse_request(frame)
    first, second = (p["records"] for p in parsed["topic_data"][0]["partition_data"])
    second[:3] = b"SEC"  # what the log does when it writes the batches' offsets
    assert bytes(first) == b"first" and frame.count(b"SECond") == 1
    # A read-only frame gives read-only views: the log copies those before writing offsets.
    _, parsed, _ = parse_request(bytes(frame))
    assert parsed["topic_data"][0]["partition_data"][1]["records"].readonly


@settings(max_examples=examples(300), deadline=None)
@given(produce_frames(), st.data())
def test_truncated_produce_requests_fail_as_in_the_codec(frame, data):
    same_outcome(frame[:data.draw(st.integers(0, len(frame)))])


@settings(max_examples=examples(400), deadline=None)
@given(produce_frames(), st.data())
def test_garbled_produce_requests_fail_or_read_as_in_the_codec(frame, data):
    garbled = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(garbled) - 1))
        # The header too: another API key or version goes the codec's way, in both.
        garbled[at] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF])
                                | st.integers(0, 255))
    same_outcome(bytes(garbled))


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(sorted(codec.REQUESTS)), st.data(), st.binary(max_size=24))
def test_every_request_header_reads_as_in_the_codec(api_key, data, rest):
    """Any API's header (v1 and v2), then anything: the tag buffer and body are arbitrary."""
    message = codec.REQUESTS[api_key]
    version = data.draw(st.integers(message.valid.low, message.valid.high))
    flexible = version in message.flexible
    client_id = data.draw(st.none() | names)
    start = codec.encode_bytes(codec.REQUEST_HEADER_MESSAGE, 1, {
        "request_api_key": api_key, "request_api_version": version,
        "correlation_id": data.draw(st.integers(-(2**31), 2**31 - 1)), "client_id": client_id})
    frame = bytearray(start + rest)
    expected = outcome(lambda f: codec.decode(codec.REQUEST_HEADER_MESSAGE, 2 if flexible else 1,
                                              f), frame)
    assert outcome(lambda f: request_parser.decode_request_header(f, flexible), frame) \
        == expected


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(-2, max(codec.REQUESTS) + 2), st.integers(-(2**15), 2**15 - 1),
       st.binary(max_size=24))
def test_parse_request_chooses_as_the_codec_for_any_api_and_version(api_key, version, rest):
    """Declared or not (an unknown API key, a version below or above the declared ones, negative
    ones): the same header, and a body only for a declared version, read as the codec reads it."""
    if api_key in codec.REQUESTS and version >= 0:
        valid = codec.REQUESTS[api_key].valid
        version = valid.low - 1 + version % (valid.high - valid.low + 3)  # near the range
    frame = bytearray(struct.pack(">hhi", api_key, version, 7) + b"\x00\x01c" + rest)
    assert outcome(parse_request, frame) == outcome(codec_parse, frame)


def produce_prefix(version: int) -> bytes:
    """A Produce header and body up to the topic count (no transactional id, acks=1)."""
    flexible = version in PRODUCE.flexible
    header = codec.encode_bytes(codec.REQUEST_HEADER_MESSAGE, 2 if flexible else 1, {
        "request_api_key": ApiKey.PRODUCE, "request_api_version": version,
        "correlation_id": 1, "client_id": "c"})
    null_string = b"\x00" if flexible else b"\xff\xff"
    return header + null_string + struct.pack(">hi", 1, 30000)


@pytest.mark.parametrize("count", [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe"])
def test_a_huge_classic_array_count_is_a_protocol_error(count):
    frame = bytearray(produce_prefix(8) + count + b"\x00" * 16)
    with pytest.raises(codec.ProtocolError):
        parse_request(frame)
    with pytest.raises(codec.ProtocolError):
        codec_parse(frame)


@pytest.mark.parametrize("count", [b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\x01"])
def test_a_huge_compact_array_count_is_a_protocol_error(count):
    """The largest five-byte varint, and one of six bytes (longer than any varint may be)."""
    frame = bytearray(produce_prefix(9) + count + b"\x00" * 16)
    with pytest.raises(codec.ProtocolError):
        parse_request(frame)
    with pytest.raises(codec.ProtocolError):
        codec_parse(frame)


def test_a_huge_records_length_is_a_protocol_error():
    frame = bytearray(produce_prefix(8) + struct.pack(">ih", 1, 1) + b"t"
                      + struct.pack(">iii", 1, 0, 0x7FFFFFFF) + b"x" * 8)
    with pytest.raises(codec.ProtocolError, match="records"):
        parse_request(frame)


def test_invalid_utf8_in_a_topic_name_is_a_protocol_error():
    frame = bytearray(produce_prefix(8) + struct.pack(">ih", 1, 2) + b"\xc3\x28"
                      + struct.pack(">i", 0))
    with pytest.raises(codec.ProtocolError, match="UTF-8"):
        parse_request(frame)


def test_a_version_the_compiled_parser_does_not_cover_is_refused():
    with pytest.raises(ValueError, match="codec"):
        request_parser.decode_produce_request(b"", 0, max(request_parser.PRODUCE_VERSIONS) + 1)


def test_the_compiled_parser_reads_only_declared_produce_versions():
    """A version declared later is the codec's until the compiled parser learns it."""
    assert all(v in PRODUCE.valid for v in request_parser.PRODUCE_VERSIONS)


@pytest.mark.parametrize("tags, ok", [
    (b"\x02\x01\x00\x05\x01x", True),  # two unknown tags in order, skipped
    (b"\x02\x01\x00\x01\x00", False),  # the same tag twice
    (b"\x02\x05\x00\x01\x00", False),  # out of order
    (b"\x01\x01\x05ab", False),  # a tag longer than the bytes left
])
def test_unknown_tags_are_skipped_in_order_or_refused(tags, ok):
    frame = bytearray(produce_prefix(9) + b"\x01" + tags)  # no topics, then the body's tags
    if ok:
        assert parse_request(frame) == codec_parse(frame)
        return
    with pytest.raises(codec.ProtocolError):
        parse_request(frame)
    with pytest.raises(codec.ProtocolError):
        codec_parse(frame)
