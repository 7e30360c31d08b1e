"""The quorum's messages on the wire (``KafkaNetworkChannel``): every message of the Raft core
through Kafka's schemas and back, as the codec encodes and decodes them."""

from __future__ import annotations

import pytest

from kafkacore.broker.controller import kafka_network_channel as wire
from kafkacore.errors import Errors, UnsupportedVersionError
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.raft.raft_log import LeaderChangeMessage, LogEntry
from kafkacore.raft.raft_messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LeaderIdAndEpoch,
    ReplicaState,
    VoteRequest,
    VoteResponse,
)
from kafkacore.raft.raw_snapshot_reader import OffsetAndEpoch


def request_through_the_codec(api_key: int, version: int, body: dict) -> dict:
    frame = b"".join(bytes(c) for c in codec.encode_request(api_key, version, 7, "raft", body))
    header, decoded, trailing = codec.decode_request(frame)
    assert (header["request_api_key"], trailing) == (api_key, 0)
    return decoded


def response_through_the_codec(api_key: int, version: int, body: dict) -> dict:
    frame = b"".join(bytes(c) for c in codec.encode_response(api_key, version, 7, body))
    correlation_id, decoded = codec.decode_response(api_key, version, frame)
    assert correlation_id == 7
    return decoded


REQUESTS = [
    VoteRequest(5, 2, 4, 120),
    VoteRequest(4, 2, 4, 120, 1, pre_vote=True),
    BeginQuorumEpochRequest(2, 5),
    EndQuorumEpochRequest(2, 5, (3, 1)),
    FetchRequest(ReplicaState(3), 5, 120, 4, 500),
    FetchSnapshotRequest(3, 5, OffsetAndEpoch(400, 4), 8192, 4096),
]

RESPONSES = [
    (ApiKey.VOTE, VoteResponse(Errors.NONE, -1, 5, True)),
    (ApiKey.BEGIN_QUORUM_EPOCH, BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, 2, 6)),
    (ApiKey.END_QUORUM_EPOCH, EndQuorumEpochResponse(Errors.NONE, 2, 5)),
    (ApiKey.FETCH, FetchResponse(Errors.NONE, 3, LeaderIdAndEpoch(2, 5), EpochEndOffset(0, 0))),
    (ApiKey.FETCH, FetchResponse(Errors.NONE, 4, LeaderIdAndEpoch(2, 5), None, (
        LogEntry(3, 4, b'{"type": "TopicRecord"}'),
        LogEntry(4, 5, b"", LeaderChangeMessage(2, (1, 2, 3), (2, 3))),
        LogEntry(5, 5, b"x")))),
    # KIP-630: the follower is behind the log start, and must fetch this snapshot.
    (ApiKey.FETCH, FetchResponse(Errors.NONE, 410, LeaderIdAndEpoch(2, 5),
                                 snapshot_id=OffsetAndEpoch(400, 4))),
    (ApiKey.FETCH_SNAPSHOT, FetchSnapshotResponse(Errors.NONE, LeaderIdAndEpoch(2, 5),
                                                  OffsetAndEpoch(400, 4), 10_000, 8192,
                                                  b"a chunk\n that need not end on a line")),
    (ApiKey.FETCH_SNAPSHOT, FetchSnapshotResponse(Errors.SNAPSHOT_NOT_FOUND,
                                                  LeaderIdAndEpoch(2, 5), OffsetAndEpoch(9, 1))),
]


def test_every_request_goes_through_kafkas_schema_and_back():
    for request in REQUESTS:
        api_key, version, body = wire.request_to_wire(request, "cluster-1")
        decoded = request_through_the_codec(api_key, version, body)
        source, back = wire.request_from_wire(api_key, decoded)
        assert back == request
        assert source == {VoteRequest: 2, BeginQuorumEpochRequest: 2, EndQuorumEpochRequest: 2,
                          FetchRequest: 3, FetchSnapshotRequest: 3}[type(request)]
    assert [wire.request_to_wire(r, "c")[:2] for r in REQUESTS] == [
        (ApiKey.VOTE, 2), (ApiKey.VOTE, 2), (ApiKey.BEGIN_QUORUM_EPOCH, 0),
        (ApiKey.END_QUORUM_EPOCH, 0), (ApiKey.FETCH, wire.FETCH_VERSION),
        (ApiKey.FETCH_SNAPSHOT, 0)]


def test_a_pre_vote_needs_vote_v2_and_a_v0_vote_is_a_vote():
    api_key, _, body = wire.request_to_wire(VoteRequest(4, 2, 4, 120, 1, pre_vote=True), "c")
    with pytest.raises(UnsupportedVersionError, match="pre_vote"):
        request_through_the_codec(api_key, 0, body)  # v0 cannot carry it: never a silent vote
    body.pop("voter_id")
    body["topics"][0]["partitions"][0].pop("pre_vote")
    source, back = wire.request_from_wire(api_key, request_through_the_codec(api_key, 0, body))
    assert (source, back) == (2, VoteRequest(4, 2, 4, 120, -1, pre_vote=False))


def test_every_response_goes_through_kafkas_schema_and_back():
    for api_key, response in RESPONSES:
        version = {ApiKey.FETCH: wire.FETCH_VERSION, ApiKey.VOTE: wire.VOTE_VERSION}.get(api_key, 0)
        decoded = response_through_the_codec(api_key, version, wire.response_to_wire(response))
        assert wire.response_from_wire(api_key, decoded) == response


def test_a_quorum_request_for_another_partition_is_refused():
    api_key, version, body = wire.request_to_wire(BeginQuorumEpochRequest(2, 5), "c")
    body["topics"][0]["partitions"][0]["partition_index"] = 1
    with pytest.raises(ValueError, match="one partition"):
        wire.request_from_wire(api_key, request_through_the_codec(api_key, version, body))
