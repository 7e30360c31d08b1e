"""The protocol codec: every declared message, every version, both directions.

Oracles: kafka-python's protocol classes (``kafka.protocol.*``, generated from Kafka's own JSON
schemas by code we did not write) must produce the same bytes as ours for the same values, and
decode ours to the same values; plus a few fixed byte strings.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.admin.topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.data_container import DataContainer
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from support.examples import examples

from kafkacore import errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkacore.protocol.messages import MESSAGES

# The codec is pure Python, and its exhaustive checks run on one interpreter (tox.ini, py312);
# every interpreter still speaks it through the producer's end-to-end tests.
pytestmark = pytest.mark.pure_python

# -- value generators derived from the declarations ---------------------------------------------

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _item(f: codec.Field, version: int):
    if f.type in _INTS:
        return st.integers(*_INTS[f.type])
    if f.type == "float64":
        return st.floats(allow_nan=False)
    if f.type == "bool":
        return st.booleans()
    if f.type == "uuid":
        return st.uuids() | st.just(uuid.UUID(int=0))
    if f.type == "string":
        return st.text(max_size=12)
    if f.type in ("bytes", "records"):
        return st.binary(max_size=40)
    assert f.type == "struct"
    return struct_values(f.struct, version)


def _field(f: codec.Field, version: int):
    s = _item(f, version)
    if f.is_array:
        s = st.lists(s, max_size=3)
    if version in f.nullable:
        s = st.none() | s
    return s


def struct_values(s: codec.Struct, version: int):
    fixed, tagged, _ = s.layout(version)
    return st.fixed_dictionaries({f.name: _field(f, version) for f in (*fixed, *tagged.values())})


ALL = [
    (key, kind, version)
    for key, (request, response) in MESSAGES.items()
    for kind, decl in (("request", request), ("response", response))
    for version in range(
        codec.Versions(decl["validVersions"]).low, codec.Versions(decl["validVersions"]).high + 1
    )
]


def _message(key: int, kind: str) -> codec.Message:
    return codec.REQUESTS[key] if kind == "request" else codec.RESPONSES[key]


_SETTINGS = settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
_KP_SETTINGS = settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("key", "kind", "version"), ALL)
def test_round_trip_every_message_and_version(key, kind, version, request):
    message = _message(key, kind)

    @_SETTINGS
    @given(value=struct_values(message.body, version))
    def check(value):
        data = codec.encode_bytes(message, version, value)
        decoded, end = codec.decode(message, version, data)
        assert end == len(data)
        assert decoded == value
        # And as whole frames, header included, in the direction each side uses.
        if kind == "request":
            chunks = codec.encode_request(key, version, 12345, "client-1", value)
            header, body, trailing = codec.decode_request(b"".join(chunks))
            assert trailing == 0
            assert header["request_api_key"] == key
            assert header["request_api_version"] == version
            assert header["correlation_id"] == 12345
            assert header["client_id"] == "client-1"
            assert body == value
        else:
            chunks = codec.encode_response(key, version, 777, value)
            correlation_id, body = codec.decode_response(key, version, b"".join(chunks))
            assert correlation_id == 777
            assert body == value

    check()


# -- kafka-python as the oracle ------------------------------------------------------------------

KP = {
    (ApiKey.PRODUCE, "request"): ProduceRequest,
    (ApiKey.PRODUCE, "response"): ProduceResponse,
    (ApiKey.FETCH, "request"): FetchRequest,
    (ApiKey.FETCH, "response"): FetchResponse,
    (ApiKey.LIST_OFFSETS, "request"): ListOffsetsRequest,
    (ApiKey.LIST_OFFSETS, "response"): ListOffsetsResponse,
    (ApiKey.METADATA, "request"): MetadataRequest,
    (ApiKey.METADATA, "response"): MetadataResponse,
    (ApiKey.API_VERSIONS, "request"): ApiVersionsRequest,
    (ApiKey.API_VERSIONS, "response"): ApiVersionsResponse,
    (ApiKey.CREATE_TOPICS, "request"): CreateTopicsRequest,
    (ApiKey.CREATE_TOPICS, "response"): CreateTopicsResponse,
    (ApiKey.DELETE_TOPICS, "request"): DeleteTopicsRequest,
    (ApiKey.DELETE_TOPICS, "response"): DeleteTopicsResponse,
    (ApiKey.DESCRIBE_CONFIGS, "request"): DescribeConfigsRequest,
    (ApiKey.DESCRIBE_CONFIGS, "response"): DescribeConfigsResponse,
    (ApiKey.INIT_PRODUCER_ID, "request"): InitProducerIdRequest,
    (ApiKey.INIT_PRODUCER_ID, "response"): InitProducerIdResponse,
    (ApiKey.SASL_HANDSHAKE, "request"): SaslHandshakeRequest,
    (ApiKey.SASL_HANDSHAKE, "response"): SaslHandshakeResponse,
    (ApiKey.SASL_AUTHENTICATE, "request"): SaslAuthenticateRequest,
    (ApiKey.SASL_AUTHENTICATE, "response"): SaslAuthenticateResponse,
    (ApiKey.FIND_COORDINATOR, "request"): FindCoordinatorRequest,
    (ApiKey.FIND_COORDINATOR, "response"): FindCoordinatorResponse,
    (ApiKey.OFFSET_COMMIT, "request"): OffsetCommitRequest,
    (ApiKey.OFFSET_COMMIT, "response"): OffsetCommitResponse,
    (ApiKey.OFFSET_FETCH, "request"): OffsetFetchRequest,
    (ApiKey.OFFSET_FETCH, "response"): OffsetFetchResponse,
    (ApiKey.JOIN_GROUP, "request"): JoinGroupRequest,
    (ApiKey.JOIN_GROUP, "response"): JoinGroupResponse,
    (ApiKey.HEARTBEAT, "request"): HeartbeatRequest,
    (ApiKey.HEARTBEAT, "response"): HeartbeatResponse,
    (ApiKey.LEAVE_GROUP, "request"): LeaveGroupRequest,
    (ApiKey.LEAVE_GROUP, "response"): LeaveGroupResponse,
    (ApiKey.SYNC_GROUP, "request"): SyncGroupRequest,
    (ApiKey.SYNC_GROUP, "response"): SyncGroupResponse,
    (ApiKey.DESCRIBE_GROUPS, "request"): DescribeGroupsRequest,
    (ApiKey.DESCRIBE_GROUPS, "response"): DescribeGroupsResponse,
    (ApiKey.LIST_GROUPS, "request"): ListGroupsRequest,
    (ApiKey.LIST_GROUPS, "response"): ListGroupsResponse,
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "request"): OffsetForLeaderEpochRequest,
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "response"): OffsetForLeaderEpochResponse,
}


# kafka-python renamed two fields (Kafka's ClusterAuthorizedOperations, and DescribeConfigs'
# misspelt IncludeSynoyms).
_KP_NAMES = {"cluster_authorized_operations": "authorized_operations",
             "include_synoyms": "include_synonyms"}


# kafka-python turns authorized-operation bit fields into sets of operation names; we keep Kafka's
# int.  The comparison holds those fields at their default (no operations asked for).
_NO_OPERATIONS = -2147483648


def _without_operations(value, ours: codec.Struct, version: int):
    if not isinstance(value, dict):
        return value
    fixed, tagged, _ = ours.layout(version)
    out = dict(value)
    for f in (*fixed, *tagged.values()):
        if f.name.endswith("authorized_operations") and f.type == "int32":
            out[f.name] = _NO_OPERATIONS
        elif f.struct is not None and out[f.name] is not None:
            if f.is_array:
                out[f.name] = [_without_operations(x, f.struct, version) for x in out[f.name]]
            else:
                out[f.name] = _without_operations(out[f.name], f.struct, version)
    return out


def _data_class(f):
    if not f.has_data_class():
        f.set_data_class(type(f.type_str, (DataContainer,), {"_struct": f}))
    return f.data_class


def to_kp(cls, value: dict, ours: codec.Struct, version: int):
    """Our dict -> kafka-python's object (tagged fields only when not default, as we send)."""
    kwargs = {}
    _, tagged, _ = ours.layout(version)
    tagged_names = {f.name: f for f in tagged.values()}
    for name, v in value.items():
        if name in tagged_names and v == tagged_names[name].default_for(version):
            continue
        if name.endswith("authorized_operations") and ours.by_name[name].type == "int32":
            continue  # their default is ours (see _without_operations)
        kp_name = _KP_NAMES.get(name, name)
        f = cls._struct.fields[kp_name]
        sub = ours.by_name[name].struct
        if f.is_struct_array() and v is not None:
            v = [to_kp(_data_class(f), x, sub, version) for x in v]
        elif f.is_struct() and v is not None:
            v = to_kp(_data_class(f), v, sub, version)
        kwargs[kp_name] = v
    return cls(version=version, **kwargs)


def from_kp(obj, kp_struct, ours: codec.Struct, version: int) -> dict:
    """kafka-python's decoded object -> our dict shape (the fields of ``version``)."""
    fixed, tagged, _ = ours.layout(version)
    out = {}
    for f in (*fixed, *tagged.values()):
        kp_name = _KP_NAMES.get(f.name, f.name)
        if f.name.endswith("authorized_operations") and f.type == "int32":
            out[f.name] = _NO_OPERATIONS
            continue
        v = getattr(obj, kp_name)
        kp_field = kp_struct.fields[kp_name]
        if kp_field.is_struct_array() and v is not None:
            v = [from_kp(x, kp_field, f.struct, version) for x in v]
        elif kp_field.is_struct() and v is not None:
            v = from_kp(v, kp_field, f.struct, version)
        elif f.type == "uuid" and v is None:
            v = uuid.UUID(int=0)  # kafka-python reads the all-zero uuid as None
        out[f.name] = v
    return out


def _ours_only(key, kind, version) -> bool:
    # kafka-python's schemas are newer than ours in places; compare the versions we share.
    cls = KP[(key, kind)]
    return not cls.min_version <= version <= cls.max_version


# AlterPartition, BrokerRegistration, BrokerHeartbeat and AllocateProducerIds (broker to
# controller) are not in kafka-python: the round trip above checks them.
@pytest.mark.parametrize(("key", "kind", "version"), [c for c in ALL if c[:2] in KP])
def test_same_bytes_as_kafka_python(key, kind, version):
    if _ours_only(key, kind, version):
        pytest.skip("kafka-python has no such version")
    message = _message(key, kind)
    cls = KP[(key, kind)]

    @_KP_SETTINGS
    @given(
        value=struct_values(message.body, version).map(
            lambda v: _without_operations(v, message.body, version)
        )
    )
    def check(value):
        if (key, kind) == (ApiKey.API_VERSIONS, "response"):
            # kafka-python reads any failed ApiVersions answer in the v0 layout (the fallback
            # meant for UNSUPPORTED_VERSION); compare successful answers.
            value["error_code"] = 0
        ours = codec.encode_bytes(message, version, value)
        theirs = to_kp(cls, value, message.body, version).encode(version=version, header=False)
        assert ours == theirs
        decoded_by_them = cls.decode(ours, version=version, header=False)
        assert from_kp(decoded_by_them, cls._struct, message.body, version) == value
        assert codec.decode(message, version, theirs)[0] == value

    check()


def test_request_header_matches_kafka_python():
    # The request header v2's client id keeps the 2-byte length (flexibleVersions "none").
    for version in range(5):
        body = (
            {"client_software_name": "kc", "client_software_version": "0.1"} if version >= 3 else {}
        )
        ours = b"".join(codec.encode_request(ApiKey.API_VERSIONS, version, 7, "me", body))
        kp = ApiVersionsRequest[version](**body)
        kp.with_header(correlation_id=7, client_id="me")
        assert ours == kp.encode(header=True)


def test_known_bytes():
    # ApiVersions v3: key 18, version 3, correlation 7, client id "me" (int16 length), empty tag
    # buffer; then compact strings "kc" and "0.1" and the body's empty tag buffer.
    chunks = codec.encode_request(
        ApiKey.API_VERSIONS,
        3,
        7,
        "me",
        {"client_software_name": "kc", "client_software_version": "0.1"},
    )
    assert b"".join(chunks).hex() == "001200030000000700026d6500036b6304302e3100"
    # Metadata v0 with one topic "ab": int32 count 1, int16 length 2, "ab".
    data = codec.encode_bytes(codec.REQUESTS[ApiKey.METADATA], 0, {"topics": [{"name": "ab"}]})
    assert data == b"\x00\x00\x00\x01\x00\x02ab"
    # A null transactional id in Produce v3 is int16 -1.
    data = codec.encode_bytes(
        codec.REQUESTS[ApiKey.PRODUCE], 3, {"acks": -1, "timeout_ms": 1000, "topic_data": []}
    )
    assert data == b"\xff\xff" + struct.pack(">hii", -1, 1000, 0)


def test_api_versions_response_header_is_always_v0():
    # KIP-511: a client must read the answer even to an ApiVersions version the broker lacks.
    body = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}
    frame = b"".join(codec.encode_response(ApiKey.API_VERSIONS, 3, 9, body))
    assert frame[:4] == b"\x00\x00\x00\x09"
    # No header tag buffer: error code 0, then the compact empty array (1), throttle (0 x4), and
    # the body's own empty tag buffer.
    assert frame[4:] == b"\x00\x00\x01\x00\x00\x00\x00\x00"
    kp = ApiVersionsResponse.decode(frame, version=3, header=True)
    assert kp.header.correlation_id == 9 and kp.error_code == 0
    # Other flexible responses do carry the header tag buffer.
    frame = b"".join(codec.encode_response(ApiKey.METADATA, 9, 9, {}))
    assert frame[4] == 0  # the empty header tag buffer


# -- zero copy, tagged fields, errors -------------------------------------------------------------


def test_produce_records_are_not_copied():
    batch = bytearray(b"x" * 1000)
    view = memoryview(batch)
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": view}]}],
    }
    for version in (3, 9, 11):
        chunks = codec.encode_request(ApiKey.PRODUCE, version, 1, "c", body)
        same = [c for c in chunks if isinstance(c, memoryview) and c.obj is batch]
        assert len(same) == 1 and same[0].nbytes == 1000
        header, decoded, _ = codec.decode_request(b"".join(chunks))
        assert decoded["topic_data"][0]["partition_data"][0]["records"] == bytes(batch)


def test_unknown_tagged_fields_are_skipped():
    message = codec.RESPONSES[ApiKey.INIT_PRODUCER_ID]
    body = {"throttle_time_ms": 0, "error_code": 0, "producer_id": 5, "producer_epoch": 1}
    data = bytearray(codec.encode_bytes(message, 2, body))
    assert data[-1] == 0  # empty tag buffer
    # Replace it with two tags we do not know: 7 (3 bytes) and 40 (0 bytes).
    data[-1:] = bytes([2, 7, 3, 1, 2, 3, 40, 0])
    assert codec.decode(message, 2, bytes(data))[0] == body


def test_known_tagged_field_round_trip_and_omitted_when_default():
    message = codec.RESPONSES[ApiKey.PRODUCE]
    part = {
        "index": 0,
        "error_code": 6,
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
    }
    body = {
        "responses": [{"name": "t", "partition_responses": [part]}],
        "throttle_time_ms": 0,
        "node_endpoints": [],
    }
    plain = codec.encode_bytes(message, 10, body)
    part["current_leader"] = {"leader_id": 4, "leader_epoch": 9}
    tagged = codec.encode_bytes(message, 10, body)
    # Default tagged value: not sent. Set: tag 0, size 8 (two int32), then the struct.
    assert len(tagged) == len(plain) + 2 + 8 + 1
    assert codec.decode(message, 10, tagged)[0] == body


@pytest.mark.parametrize(
    ("body", "exc"),
    [
        ({"topics": "abc"}, TypeError),
        ({"topics": [{"name": 5}]}, TypeError),
        ({"topics": [{"nme": "x"}]}, ValueError),
        ({"allow_auto_topic_creation": 1}, TypeError),
    ],
)
def test_bad_bodies_fail_at_encode(body, exc):
    with pytest.raises(exc):
        codec.encode(codec.REQUESTS[ApiKey.METADATA], 12, body)


def test_out_of_range_integer_names_the_field():
    with pytest.raises(ValueError, match="acks"):
        codec.encode(codec.REQUESTS[ApiKey.PRODUCE], 9, {"acks": 70000})


def test_non_ignorable_field_in_a_version_without_it():
    # Metadata v3 cannot say "do not auto-create": Java refuses too.
    with pytest.raises(errors.UnsupportedVersionError):
        codec.encode(codec.REQUESTS[ApiKey.METADATA], 3, {"allow_auto_topic_creation": False})
    # ... but an ignorable one is dropped silently.
    codec.encode(codec.REQUESTS[ApiKey.PRODUCE], 3, {"acks": 1, "timeout_ms": 1})


def test_unknown_version_and_api():
    with pytest.raises(errors.UnsupportedVersionError):
        codec.encode(codec.REQUESTS[ApiKey.PRODUCE], 13, {})
    with pytest.raises(errors.UnsupportedVersionError):
        codec.encode_request(99, 0, 1, None, {})


@pytest.mark.parametrize("cut", [1, 5, 10, 20])
def test_truncated_input_raises_protocol_error(cut):
    message = codec.RESPONSES[ApiKey.METADATA]
    body = {
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
        "topics": [
            {
                "name": "abc",
                "partitions": [
                    {"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                ],
            }
        ],
    }
    data = codec.encode_bytes(message, 12, body)
    with pytest.raises(codec.ProtocolError):
        codec.decode(message, 12, data[: len(data) - cut])


def test_absurd_array_length_is_refused():
    message = codec.RESPONSES[ApiKey.METADATA]
    data = struct.pack(">i", 2**30)  # v0: brokers array of a billion elements, then nothing
    with pytest.raises(codec.ProtocolError):
        codec.decode(message, 0, data)


def test_null_where_not_nullable():
    with pytest.raises(ValueError):
        codec.encode(codec.REQUESTS[ApiKey.METADATA], 0, {"topics": None})
    data = struct.pack(">i", -1)
    with pytest.raises(codec.ProtocolError):
        codec.decode(codec.REQUESTS[ApiKey.METADATA], 0, data)


def test_supported_versions_are_declared():
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        for version in (low, high):
            codec.REQUESTS[key].check_version(version)
            codec.RESPONSES[key].check_version(version)


def test_snake_case():
    assert codec.snake_case("TopicData") == "topic_data"
    assert codec.snake_case("timeoutMs") == "timeout_ms"
    assert codec.snake_case("IsrNodes") == "isr_nodes"
    assert codec.snake_case("ZkMigrationReady") == "zk_migration_ready"


def test_each_family_module_declares_what_the_registry_holds():
    """kafkacore/protocol/messages/ keeps one module per API family; the registry (MESSAGES,
    built in api_message_type) holds exactly the pairs the family modules declare, each under its
    own api key, and the package hands every declaration on."""
    import ast
    import importlib
    import pkgutil
    from pathlib import Path

    from kafkacore.protocol import messages

    not_families = {"api_message_type", "message_spec", "header"}
    declared: dict[int, dict[str, object]] = {}
    for info in pkgutil.iter_modules(messages.__path__):
        module = importlib.import_module(f"{messages.__name__}.{info.name}")
        # A family imports only the protocol's lower layers: api_keys and message_spec (so the
        # registry above it is built without a cycle).
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for alias in node.names}
        if info.name != "api_message_type":
            assert imported <= {"__future__", "typing", "kafkacore.protocol.api_keys",
                                "kafkacore.protocol.messages.message_spec"}, info.name
        if info.name in not_families:
            continue
        for name in module.__all__:
            declaration = getattr(module, name)
            assert getattr(messages, name) is declaration
            declared.setdefault(declaration["apiKey"], {})[declaration["type"]] = declaration
    assert set(declared) == set(MESSAGES) == set(ApiKey)
    for key, (request, response) in MESSAGES.items():
        assert declared[key]["request"] is request and declared[key]["response"] is response
        assert request["apiKey"] == response["apiKey"] == key
