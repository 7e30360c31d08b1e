"""NetworkClient and BrokerConnection against the real tansu broker, and against small socket
servers we start in the test for the faults tansu will not produce on demand (silence, wrong
correlation ids, an old ApiVersions).  The servers speak through our codec's broker side
(``decode_request``/``encode_response``), the same declarations our broker uses."""

from __future__ import annotations

import ast
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from support.scripted_broker import FakeBroker, api_versions_answer
from waits import wait_until

from kafkacore import errors
from kafkacore.metadata import Metadata
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.network.connection import BrokerConnection, ConnectionState
from kafkacore.network.errors import (
    ConnectionSetupTimeoutError,
    CorrelationIdMismatchError,
    DisconnectError,
    RequestTimeoutError,
)
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

# -- helpers -------------------------------------------------------------------------------------


def poll_until(client, condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        client.poll(50)


def wait_for_cluster(client, topic=None, timeout_s=10.0):
    md = client.metadata
    if topic is not None:
        md.add_topic(topic)
    md.request_update()
    poll_until(
        client,
        lambda: (
            not md.fetch().is_bootstrap and (topic is None or md.fetch().partition_count(topic))
        ),
        timeout_s,
    )
    return md.fetch()


def record_batch(values, key_prefix=b"k"):
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, value in enumerate(values):
        builder.append(
            i, timestamp=1_700_000_000_000 + i, key=key_prefix + b"%d" % i, value=value, headers=[]
        )
    return bytes(builder.build())


def produce_body(topic, batches, acks=-1):
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 10000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": p, "records": b} for p, b in batches.items()],
            }
        ],
    }


_READ_BACK = """
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, partitions, expected, timeout_s = sys.argv[1:]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkacore-test",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
consumer.assign([TopicPartition(topic, p, 0) for p in range(int(partitions))])
got = []
deadline = time.monotonic() + float(timeout_s)
while len(got) < int(expected) and time.monotonic() < deadline:
    msg = consumer.poll(0.5)
    if msg is None or msg.error():
        continue
    got.append((msg.partition(), msg.key(), msg.value()))
consumer.close()
print(repr(got))
"""


def read_back(bootstrap, topic, partitions, expected, timeout_s=20.0):
    """Every (partition, key, value) in the topic, read with confluent-kafka (librdkafka).

    In a child process: librdkafka's objects have crashed this test process during garbage
    collection while other threads ran (confluent-kafka-python issue #1761), and a crash there
    would take every later test with it.
    """
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _READ_BACK,
            bootstrap,
            topic,
            str(partitions),
            str(expected),
            str(timeout_s),
        ],
        capture_output=True,
        text=True,
        timeout=timeout_s + 30,
    )
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip())


def metadata_answer():
    # One broker (never contacted: the tests talk to the bootstrap id -1), no topics.
    return {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 1}], "topics": []}


def answer_versions_only(header, body):
    """Answer ApiVersions and Metadata; be silent to everything else."""
    if header["request_api_key"] == ApiKey.API_VERSIONS:
        return api_versions_answer()
    if header["request_api_key"] == ApiKey.METADATA:
        return metadata_answer()
    return None  # silence


@pytest.fixture
def fake():
    servers = []

    def make(handler):
        server = FakeBroker(handler)
        servers.append(server)
        return server

    yield make
    for s in servers:
        s.close()


# -- against tansu --------------------------------------------------------------------------------


def test_api_versions_negotiation_with_tansu(bootstrap):
    with NetworkClient(bootstrap, Metadata()) as client:
        client.await_ready(-1, 5000)
        theirs = client.broker_api_versions(-1)
        # TESTING.md: tansu 0.6 supports ApiVersions 0-4, Metadata 0-12, Produce 0-11, ...
        assert theirs[ApiKey.API_VERSIONS][1] >= 4
        # We take the highest version both sides support.
        # (Produce v12 is transaction version 2's: the Sender sends it only then.)
        assert client.api_version(-1, ApiKey.PRODUCE) == min(12, theirs[ApiKey.PRODUCE][1])
        assert client.api_version(-1, ApiKey.METADATA) == min(12, theirs[ApiKey.METADATA][1])
        assert client.api_version(-1, ApiKey.INIT_PRODUCER_ID) == 5
        assert client.api_version(-1, ApiKey.CREATE_TOPICS) == 7


def test_metadata_for_a_created_topic(bootstrap, make_topic, broker):
    topic = make_topic(4)
    with NetworkClient(bootstrap, Metadata()) as client:
        cluster = wait_for_cluster(client, topic)
        assert not cluster.is_bootstrap
        assert [n.port for n in cluster.nodes] == [broker.port]
        assert cluster.partition_count(topic) == 4
        leaders = {cluster.leader_for(topic, p) for p in range(4)}
        assert leaders == {cluster.nodes[0].node_id}
        assert len(cluster.available_partitions_for_topic(topic)) == 4
        assert cluster.partitions_for_node(cluster.nodes[0].node_id)


def test_produce_and_read_back_with_librdkafka(bootstrap, make_topic):
    topic = make_topic(2)
    values = {0: [b"zero-%d" % i for i in range(5)], 1: [b"one-%d" % i for i in range(7)]}
    batches = {p: memoryview(record_batch(v)) for p, v in values.items()}
    with NetworkClient(bootstrap, Metadata()) as client:
        cluster = wait_for_cluster(client, topic)
        leader = cluster.leader_for(topic, 0)
        client.await_ready(leader, 5000)
        done = []
        client.send(leader, ApiKey.PRODUCE, produce_body(topic, batches), callback=done.append)
        poll_until(client, lambda: done)
        highest = min(12, client.broker_api_versions(leader)[ApiKey.PRODUCE][1])
    response = done[0]
    assert response.error is None and response.api_version == highest
    assert response.request_body["topic_data"][0]["name"] == topic
    parts = response.body["responses"][0]["partition_responses"]
    assert sorted(p["index"] for p in parts) == [0, 1]
    assert all(p["error_code"] == 0 for p in parts)
    got = read_back(bootstrap, topic, 2, 12)
    expected = [(p, b"k%d" % i, v) for p, vs in values.items() for i, v in enumerate(vs)]
    assert sorted(got) == sorted(expected)


def test_list_offsets_after_produce(bootstrap, make_topic):
    topic = make_topic(1)
    with NetworkClient(bootstrap, Metadata()) as client:
        cluster = wait_for_cluster(client, topic)
        leader = cluster.leader_for(topic, 0)
        response = client.send_and_receive(
            leader, ApiKey.PRODUCE, produce_body(topic, {0: record_batch([b"a", b"b"])}), 5000
        )
        assert response.body["responses"][0]["partition_responses"][0]["error_code"] == 0
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        }
        response = client.send_and_receive(leader, ApiKey.LIST_OFFSETS, body, 5000)
    assert response.api_version >= 1
    assert response.response_body() is response.body
    part = response.body["topics"][0]["partitions"][0]
    assert part["error_code"] == 0
    # TESTING.md: tansu's end offset is the last batch's base offset + 1, so only ">= 1" holds
    # for a topic with one batch, whatever the number of records in it.
    assert part["offset"] >= 1


def test_fetch_reads_back_what_we_produced(bootstrap, make_topic):
    # Our Fetch codec against tansu; the records decoded by kafka-python's batch reader.
    from kafka.record.memory_records import MemoryRecords

    topic = make_topic(1)
    values = [b"alpha", b"beta", b"gamma"]
    with NetworkClient(bootstrap, Metadata()) as client:
        cluster = wait_for_cluster(client, topic)
        leader = cluster.leader_for(topic, 0)
        produced = client.send_and_receive(
            leader, ApiKey.PRODUCE, produce_body(topic, {0: record_batch(values)}), 5000
        )
        assert produced.body["responses"][0]["partition_responses"][0]["error_code"] == 0
        described = client.send_and_receive(
            leader, ApiKey.METADATA, {"topics": [{"name": topic}]}, 5000
        )
        topic_id = described.body["topics"][0]["topic_id"]
        assert topic_id.int != 0
        top = client.api_version(leader, ApiKey.FETCH)
        for version in sorted({12, top}):
            partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
            topics = [{"topic": topic, "topic_id": topic_id, "partitions": [partition]}]
            if version < 13:
                del topics[0]["topic_id"]
            else:
                del topics[0]["topic"]
            body = {
                "max_wait_ms": 100,
                "min_bytes": 1,
                "topics": topics,
                "forgotten_topics_data": [],
            }
            client.await_ready(leader, 5000)
            done = []
            client.send(leader, ApiKey.FETCH, body, callback=done.append, api_version=version)
            poll_until(client, lambda done=done: done)
            assert done[0].error is None and done[0].api_version == version
            part = done[0].body["responses"][0]["partitions"][0]
            assert part["error_code"] == 0
            records = MemoryRecords(part["records"])
            got = []
            while records.has_next():
                got.extend(r.value for r in records.next_batch())
            assert got == values


def test_acks_zero_completes_when_written(bootstrap, make_topic):
    topic = make_topic(1)
    with NetworkClient(bootstrap, Metadata()) as client:
        cluster = wait_for_cluster(client, topic)
        leader = cluster.leader_for(topic, 0)
        client.await_ready(leader, 5000)
        done = []
        body = produce_body(topic, {0: record_batch([b"fire", b"forget"])}, acks=0)
        client.send(leader, ApiKey.PRODUCE, body, callback=done.append, expect_response=False)
        assert client.in_flight_request_count(leader) == 0  # nothing to wait for
        poll_until(client, lambda: done)
        assert done[0].body is None and done[0].error is None
        with pytest.raises(errors.IllegalStateError, match="expecting no response"):
            done[0].response_body()  # no answer to read: a broken caller, not a None to index
    got = read_back(bootstrap, topic, 1, 2)
    assert sorted(v for _, _, v in got) == [b"fire", b"forget"]


def test_large_request_with_partial_writes(bootstrap, make_topic):
    # A small SO_SNDBUF makes the kernel take a few KB per sendmsg: the request goes out in many
    # partial writes, the rest of each half-written buffer kept as a memoryview.
    topic = make_topic(3)
    values = {p: [bytes([65 + p]) * 1000 + b"%d" % i for i in range(300)] for p in range(3)}
    batches = {p: record_batch(v) for p, v in values.items()}
    with NetworkClient(bootstrap, Metadata(), send_buffer_bytes=4096) as client:
        cluster = wait_for_cluster(client, topic)
        leader = cluster.leader_for(topic, 0)
        client.await_ready(leader, 5000)
        done = []
        client.send(leader, ApiKey.PRODUCE, produce_body(topic, batches), callback=done.append)
        poll_until(client, lambda: done, 30)
    assert done[0].error is None
    parts = done[0].body["responses"][0]["partition_responses"]
    assert all(p["error_code"] == 0 for p in parts)
    got = read_back(bootstrap, topic, 3, 900)
    assert len(got) == 900
    assert sorted(got) == sorted(
        (p, b"k%d" % i, v) for p, vs in values.items() for i, v in enumerate(vs)
    )


def test_partial_writes_keep_the_byte_stream_exact():
    # The peer reads slowly; whatever the kernel takes per call, the bytes that arrive must be
    # exactly the frames we meant to send, in order.
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    conn = BrokerConnection(-1, "127.0.0.1", port, client_id="c", send_buffer_bytes=4096)
    conn.connect(clock_ms())
    peer, _ = server.accept()
    if conn.state is ConnectionState.CONNECTING:
        conn.on_writable(clock_ms())  # connected: ApiVersions is queued
    big = bytes(range(256)) * 4096  # 1 MiB
    body = produce_body("t", {0: memoryview(big), 1: b"small"})
    from kafkacore.network.connection import InFlightRequest

    request = InFlightRequest(-1, 99, ApiKey.PRODUCE, 9, body, None, True, clock_ms())
    conn.enqueue(request, clock_ms())
    api_versions = b"".join(
        codec.encode_request(
            ApiKey.API_VERSIONS,
            4,
            conn.in_flight[0].correlation_id,
            "c",
            {"client_software_name": "kafkacore", "client_software_version": "0"},
        )
    )
    produce = b"".join(codec.encode_request(ApiKey.PRODUCE, 9, 99, "c", body))
    expected = (
        struct.pack(">i", len(api_versions))
        + api_versions
        + struct.pack(">i", len(produce))
        + produce
    )
    received = bytearray()
    calls = 0
    peer.settimeout(0.05)
    deadline = time.monotonic() + 20
    while len(received) < len(expected) and time.monotonic() < deadline:
        if conn.has_queued_sends:
            conn.on_writable(clock_ms())
            calls += 1
        try:
            received += peer.recv(1 << 16)
        except TimeoutError:
            continue
    assert not conn.has_queued_sends
    assert calls > 2  # really written in pieces
    assert bytes(received) == expected
    assert request.written
    conn.close()
    peer.close()
    server.close()


def test_broker_killed_mid_request_then_reconnect(make_topic):
    with LocalBroker() as broker:
        from kafkacore.admin import create_topics

        create_topics(broker.bootstrap, {"doomed": 1})
        with NetworkClient(
            broker.bootstrap, Metadata(), reconnect_backoff_ms=20, reconnect_backoff_max_ms=100
        ) as client:
            cluster = wait_for_cluster(client, "doomed")
            leader = cluster.leader_for("doomed", 0)
            client.await_ready(leader, 5000)
            done = []
            client.send(
                leader,
                ApiKey.PRODUCE,
                produce_body("doomed", {0: record_batch([b"x"])}),
                callback=done.append,
            )
            broker.kill()
            poll_until(client, lambda: done)
            assert isinstance(done[0].error, DisconnectError)
            assert done[0].was_disconnected and not done[0].was_timed_out
            assert isinstance(done[0].error, errors.NetworkError)  # NETWORK_EXCEPTION, retriable
            assert done[0].error.retriable and done[0].error.invalid_metadata
            assert client.in_flight_request_count() == 0
            assert not client.is_ready(leader)
            # Same port again: after the backoff the client connects and negotiates anew.
            broker.start()
            deadline = time.monotonic() + 10
            while not client.ready(leader):
                assert time.monotonic() < deadline
                client.poll(50)
            assert client.api_version(leader, ApiKey.PRODUCE) == 11


def test_connection_refused_and_exponential_backoff(closed_port):
    port = closed_port  # nobody listens here
    with NetworkClient(
        f"127.0.0.1:{port}",
        Metadata(),
        reconnect_backoff_ms=100,
        reconnect_backoff_max_ms=400,
    ) as client:
        delays = []
        for _ in range(4):
            deadline = time.monotonic() + 5
            while not client.connection_failed(-1) or client.is_connecting(-1):
                assert time.monotonic() < deadline
                client.ready(-1)
                client.poll(20)
            delays.append(client.connection_delay(-1))
            assert not client.ready(-1)  # in backoff: no new attempt
            assert not client.is_connecting(-1)
            # The backoff runs out, then the next ready() starts a new attempt.
            wait_until(lambda: client.connection_delay(-1) == 0, "the backoff over", 5)
            client.ready(-1)
        # 100, 200, 400, 400 (capped), +/-20 % jitter but never above the max; measured just after
        # the failure (hence the -50 ms slack).
        for got, base in zip(delays, (100, 200, 400, 400), strict=True):
            assert base * 0.8 - 50 <= got <= min(base * 1.2, 400), delays  # the max is a cap
        assert client.least_loaded_node() in (-1, None)


def test_each_attempt_tries_the_next_resolved_address(fake, closed_port):
    # "localhost" can resolve to ::1 and 127.0.0.1, and a broker may listen on one only: a
    # failed attempt moves on to the next address (as Java does).  We stand in for the resolver
    # with two loopback addresses, the first refusing connections.
    server = fake(answer_versions_only)
    with NetworkClient(server.bootstrap, Metadata(), reconnect_backoff_ms=10) as client:
        client.ready(-1)  # creates the connection object and a first attempt
        conn = client._connections[-1]
        client.disconnect(-1)
        client.poll(0)
        refused = ("127.0.0.1", closed_port)
        conn._resolved = [
            (socket.AF_INET, socket.SOCK_STREAM, 6, refused),
            (socket.AF_INET, socket.SOCK_STREAM, 6, ("127.0.0.1", server.port)),
        ]
        conn._next_address = 0
        deadline = time.monotonic() + 5
        while not client.ready(-1):
            assert time.monotonic() < deadline
            client.poll(20)
        assert client.api_version(-1, ApiKey.PRODUCE) == 11
        assert conn._next_address == 1  # the refused one was skipped, the good one kept


def test_request_timeout_closes_the_connection(fake):
    server = fake(answer_versions_only)
    with NetworkClient(server.bootstrap, Metadata(), request_timeout_ms=400) as client:
        client.await_ready(-1, 5000)
        done = []
        sent_at = time.monotonic()
        client.send(
            -1,
            ApiKey.INIT_PRODUCER_ID,
            {"transactional_id": None, "transaction_timeout_ms": 1000},
            callback=done.append,
        )
        poll_until(client, lambda: done, 5)
        # Not before request.timeout.ms (no upper bound: poll_until bounds the wait at 5 s).
        assert time.monotonic() - sent_at >= 0.39
        assert isinstance(done[0].error, RequestTimeoutError)
        with pytest.raises(RequestTimeoutError):
            done[0].response_body()
        assert done[0].was_timed_out and done[0].was_disconnected
        assert done[0].error.retriable
        assert client.in_flight_request_count(-1) == 0
        assert not client.is_ready(-1)


def test_acks_zero_request_that_cannot_be_written_times_out(fake):
    # acks=0: nothing is awaited, but the bytes must still go out within request.timeout.ms.
    server = fake(answer_versions_only)
    with NetworkClient(
        server.bootstrap, Metadata(), request_timeout_ms=500, send_buffer_bytes=4096
    ) as client:
        client.await_ready(-1, 5000)
        poll_until(client, lambda: client.in_flight_request_count(-1) == 0)  # metadata done
        server.reading = False
        done = []
        big = produce_body("t", {0: b"x" * (8 << 20)}, acks=0)
        start = time.monotonic()
        client.send(-1, ApiKey.PRODUCE, big, callback=done.append, expect_response=False)
        poll_until(client, lambda: done, 5)
        assert time.monotonic() - start >= 0.45  # the upper bound is poll_until's 5 s
        assert isinstance(done[0].error, RequestTimeoutError)


def test_max_in_flight_limits_ready(fake):
    server = fake(answer_versions_only)
    with NetworkClient(
        server.bootstrap,
        Metadata(),
        max_in_flight_requests_per_connection=2,
        request_timeout_ms=5000,
    ) as client:
        client.await_ready(-1, 5000)
        poll_until(client, lambda: client.in_flight_request_count(-1) == 0)  # metadata done
        body = {"transactional_id": None, "transaction_timeout_ms": 1000}
        client.send(-1, ApiKey.INIT_PRODUCER_ID, body)
        # Queued, not yet written: no second request until the first is on its way (Java's
        # canSendMore).
        assert not client.ready(-1)
        poll_until(client, lambda: client.ready(-1), 5)
        client.send(-1, ApiKey.INIT_PRODUCER_ID, body)
        client.poll(50)
        assert client.in_flight_request_count(-1) == 2
        assert not client.ready(-1)  # written, but two in flight is the limit
        with pytest.raises(errors.IllegalStateError):
            client.send(-1, ApiKey.INIT_PRODUCER_ID, body)


INIT_PID_BODY = {"transactional_id": None, "transaction_timeout_ms": 1000}


def test_a_response_right_before_the_close_still_counts(fake):
    # The broker answers, then closes: the answer must reach its callback, not a disconnect.
    def handler(header, body):
        if header["request_api_key"] in (ApiKey.API_VERSIONS, ApiKey.METADATA):
            return answer_versions_only(header, body)
        return ("close", {"error_code": 0, "producer_id": 77, "producer_epoch": 3})

    server = fake(handler)
    with NetworkClient(server.bootstrap, Metadata()) as client:
        client.await_ready(-1, 5000)
        poll_until(client, lambda: client.in_flight_request_count(-1) == 0)  # metadata done
        done = []
        client.send(-1, ApiKey.INIT_PRODUCER_ID, INIT_PID_BODY, callback=done.append)
        poll_until(client, lambda: done and not client.is_connecting(-1), 5)
        assert done[0].error is None and done[0].body["producer_id"] == 77
        poll_until(client, lambda: client.connection_failed(-1) or not client.is_ready(-1), 5)
        assert len(done) == 1


def test_an_undecodable_response_fails_its_request_once(fake):
    def handler(header, body):
        if header["request_api_key"] in (ApiKey.API_VERSIONS, ApiKey.METADATA):
            return answer_versions_only(header, body)
        return b"\x00"  # InitProducerId needs 14 bytes here, not 1

    server = fake(handler)
    with NetworkClient(server.bootstrap, Metadata()) as client:
        client.await_ready(-1, 5000)
        poll_until(client, lambda: client.in_flight_request_count(-1) == 0)  # metadata done
        done = []
        client.send(-1, ApiKey.INIT_PRODUCER_ID, INIT_PID_BODY, callback=done.append)
        poll_until(client, lambda: done, 5)
        client.poll(50)
        assert len(done) == 1
        assert isinstance(done[0].error, DisconnectError)
        assert isinstance(done[0].error.__cause__, codec.ProtocolError)
        assert not client.is_ready(-1)


def test_correlation_id_mismatch_is_fatal_for_the_connection(fake):
    def handler(header, body):
        if header["request_api_key"] in (ApiKey.API_VERSIONS, ApiKey.METADATA):
            return answer_versions_only(header, body)
        return (
            header["correlation_id"] + 1000,
            {"error_code": 0, "producer_id": 1, "producer_epoch": 0},
        )

    server = fake(handler)
    with NetworkClient(server.bootstrap, Metadata()) as client:
        client.await_ready(-1, 5000)
        done = []
        client.send(
            -1,
            ApiKey.INIT_PRODUCER_ID,
            {"transactional_id": None, "transaction_timeout_ms": 1000},
            callback=done.append,
        )
        poll_until(client, lambda: done, 5)
        assert isinstance(done[0].error, CorrelationIdMismatchError)
        assert not client.is_ready(-1)


def test_api_versions_falls_back_when_the_broker_is_older(fake):
    # An old broker: ApiVersions up to v2.  It answers our v4 with UNSUPPORTED_VERSION in the v0
    # layout, listing what it supports; we retry with v2 (as Java's NetworkClient does).
    old = {ApiKey.API_VERSIONS: 2, ApiKey.PRODUCE: 8, ApiKey.INIT_PRODUCER_ID: None}

    def handler(header, body):
        if header["request_api_key"] != ApiKey.API_VERSIONS:
            return None
        if header["request_api_version"] > 2:
            answer = api_versions_answer(old)
            answer["error_code"] = 35
            answer["_v0"] = True
            return answer
        return api_versions_answer(old)

    server = fake(handler)
    with NetworkClient(server.bootstrap, Metadata()) as client:
        client.await_ready(-1, 5000)
        versions = [
            h["request_api_version"]
            for h, _ in server.requests
            if h["request_api_key"] == ApiKey.API_VERSIONS
        ]
        assert versions == [4, 2]
        assert client.api_version(-1, ApiKey.API_VERSIONS) == 2
        assert client.api_version(-1, ApiKey.PRODUCE) == 8
        assert client.api_version(-1, ApiKey.INIT_PRODUCER_ID) is None  # broker lacks it
        # A request for an API the broker lacks fails through its callback, not with a hang.
        done = []
        client.send(
            -1,
            ApiKey.INIT_PRODUCER_ID,
            {"transactional_id": None, "transaction_timeout_ms": 1},
            callback=done.append,
        )
        client.poll(0)
        assert isinstance(done[0].error, errors.UnsupportedVersionError)


def test_wakeup_from_another_thread(fake):
    server = fake(answer_versions_only)
    with NetworkClient(server.bootstrap, Metadata()) as client:
        client.await_ready(-1, 5000)
        poll_until(client, lambda: client.in_flight_request_count(-1) == 0)  # metadata done
        timer = threading.Timer(0.2, client.wakeup)
        start = time.monotonic()
        timer.start()
        client.poll(20000)
        elapsed = time.monotonic() - start
        timer.join()
        # Woken, not timed out: well before the 20 s poll timeout.
        assert 0.15 <= elapsed < 10


def test_connection_setup_timeout():
    # A listener whose accept queue is full: the kernel drops our SYN, connect never finishes.
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        fillers.append(s)
    time.sleep(0.1)
    try:
        with NetworkClient(
            f"127.0.0.1:{port}", Metadata(), socket_connection_setup_timeout_ms=300
        ) as client:
            client.ready(-1)
            if (
                client.is_connecting(-1)
                and client._connections[-1].state is ConnectionState.CONNECTING
            ):
                start = time.monotonic()
                poll_until(client, lambda: client.connection_failed(-1), 5)
                assert time.monotonic() - start >= 0.25  # the upper bound is poll_until's
                assert isinstance(client._connections[-1].close_error, ConnectionSetupTimeoutError)
            else:  # pragma: no cover - the kernel accepted anyway; nothing to time out
                pytest.skip("the kernel completed the connect despite the full backlog")
    finally:
        for s in fillers:
            s.close()
        server.close()


def test_idle_connections_are_closed(fake):
    server = fake(answer_versions_only)
    with NetworkClient(server.bootstrap, Metadata(), connections_max_idle_ms=200) as client:
        client.await_ready(-1, 5000)
        poll_until(client, lambda: not client.is_ready(-1) and not client.is_connecting(-1), 5)
        assert not client.connection_failed(-1)  # a clean close, not a failure
        assert client.connection_delay(-1) == 0  # reconnect at once when needed
        client.await_ready(-1, 5000)


def test_bad_input_fails_at_the_call(bootstrap):
    with NetworkClient(bootstrap, Metadata()) as client:
        with pytest.raises(errors.IllegalStateError):
            client.send(-1, ApiKey.METADATA, {})  # not ready
        client.await_ready(-1, 5000)
        with pytest.raises(TypeError):
            client.send(-1, ApiKey.PRODUCE, {"acks": "all"})
        with pytest.raises(ValueError):
            client.send(-1, ApiKey.PRODUCE, {"no_such_field": 1})
    with pytest.raises(errors.ConfigError):
        NetworkClient("localhost", Metadata())
    with pytest.raises(ValueError):
        NetworkClient(bootstrap, Metadata(), request_timeout_ms=-1)
    client = NetworkClient(bootstrap, Metadata())
    client.close()
    with pytest.raises(errors.IllegalStateError):
        client.poll(0)


def test_close_fails_what_is_in_flight(fake):
    server = fake(answer_versions_only)
    client = NetworkClient(server.bootstrap, Metadata())
    client.await_ready(-1, 5000)
    done = []
    client.send(
        -1,
        ApiKey.INIT_PRODUCER_ID,
        {"transactional_id": None, "transaction_timeout_ms": 1},
        callback=done.append,
    )
    client.poll(0)
    client.close()
    assert len(done) == 1 and isinstance(done[0].error, DisconnectError)
