"""The request reactor (SocketServer, RequestChannel, handlers) against real sockets."""

from __future__ import annotations

import os
import queue
import select
import socket
import stat
import sys
import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactor_client import (
    api_versions,
    api_versions_frame,
    closed_by_peer,
    connect,
    recv_frame,
)
from support.examples import examples
from waits import wait_until

from kafkacore import errors
from kafkacore.broker import Broker, BrokerConfig
from kafkacore.broker.network.processor_core import READ_AHEAD
from kafkacore.broker.network.request_queue import RequestQueue
from kafkacore.broker.network.selector import Poller, Wakeup
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture
def broker():
    with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as b:
        yield b


@pytest.fixture(scope="module")
def shared_broker():
    with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as b:
        yield b


def test_api_versions_every_version(broker):
    s = connect(broker)
    for version in range(5):
        correlation_id, body = api_versions(s, 100 + version, version)
        assert correlation_id == 100 + version
        assert body["error_code"] == 0
        assert {"api_key": 18, "min_version": 0, "max_version": 4} in body["api_keys"]
    counted = f"requests.api_key.{int(ApiKey.API_VERSIONS)}"  # counted by API key, per processor
    assert sum(p.get(counted, 0) for p in broker.socket_server.statistics()) == 5


def test_unsupported_api_versions_version_is_answered_in_v0(broker):
    s = connect(broker)
    frame = bytearray(api_versions_frame(7, 0))
    frame[6:8] = (9).to_bytes(2, "big")  # ApiVersions v9: not declared
    s.sendall(frame)
    correlation_id, body = codec.decode_response(18, 0, recv_frame(s))
    assert correlation_id == 7
    assert body["error_code"] == 35  # UNSUPPORTED_VERSION
    assert {"api_key": 18, "min_version": 0, "max_version": 4} in body["api_keys"]
    assert api_versions(s, 8)[1]["error_code"] == 0  # the connection goes on


def test_unknown_api_key_closes_only_that_connection(broker):
    bad, good = connect(broker), connect(broker)
    frame = bytearray(api_versions_frame(1, 0))
    frame[4:6] = (999).to_bytes(2, "big")
    bad.sendall(frame)
    assert closed_by_peer(bad)
    assert api_versions(good)[1]["error_code"] == 0


def test_pipelined_requests_are_answered_in_order(broker):
    s = connect(broker)
    versions = [i % 5 for i in range(200)]
    s.sendall(b"".join(api_versions_frame(i, v) for i, v in enumerate(versions)))
    for i, v in enumerate(versions):
        correlation_id, body = codec.decode_response(18, v, recv_frame(s))
        assert correlation_id == i
        assert body["error_code"] == 0


def test_pipelined_frames_of_every_size_are_cut_where_they_end(broker):
    """The processor reads small requests ahead (READ_AHEAD) and large ones to their end: frames
    that straddle a read, one larger than the read-ahead and one larger than a whole recv, all
    sent in one stream, are each answered once, in order."""
    def padded(correlation_id: int, pad: int) -> bytes:  # bytes after a body are ignored
        frame = api_versions_frame(correlation_id, 0)
        return (len(frame) - 4 + pad).to_bytes(4, "big") + frame[4:] + b"\0" * pad

    pads = [0, READ_AHEAD + 5, *[0] * 50, 3, READ_AHEAD - 20, 0, 300 * 1024, 0, 7, 0]
    s = connect(broker)
    sender = threading.Thread(
        target=s.sendall, args=(b"".join(padded(i, pad) for i, pad in enumerate(pads)),))
    sender.start()
    for i in range(len(pads)):
        correlation_id, body = codec.decode_response(18, 0, recv_frame(s))
        assert (correlation_id, body["error_code"]) == (i, 0)
    sender.join(10)
    assert api_versions(s, 999)[0] == 999  # and the stream goes on from there


def test_a_request_sent_just_before_the_close_is_still_handled(broker):
    """A client sends a Fetch that waits (a long poll: its connection is muted meanwhile), then
    an acks=0 Produce, and closes.  The Produce's bytes and the close arrive while the Fetch
    still waits; the Produce is appended all the same, once the Fetch is answered (Kafka
    processes a closing channel's completed requests before it closes it)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafkacore import admin

    topic = "closing-" + uuid.uuid4().hex[:8]
    admin.create_topics(f"127.0.0.1:{broker.socket_server.bound_port}", {topic: 1})
    batch = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                      producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                      batch_size=1 << 20)
    for offset, value in enumerate((b"fire", b"forget")):
        batch.append(offset, timestamp=None, key=None, value=value, headers=[])

    def frame(api_key, version, correlation_id, body) -> bytes:
        payload = b"".join(bytes(memoryview(c).cast("B")) for c in codec.encode_request(
            api_key, version, correlation_id, "closing", body))
        return len(payload).to_bytes(4, "big") + payload

    long_poll = frame(ApiKey.FETCH, 12, 1, {
        "replica_id": -1, "max_wait_ms": 2000, "min_bytes": 1 << 20, "max_bytes": 1 << 20,
        "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    produce = frame(ApiKey.PRODUCE, 9, 2, {
        "transactional_id": None, "acks": 0, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": bytes(batch.build())}]}]})
    s = connect(broker)
    s.sendall(long_poll)
    wait_until(lambda: broker.replica_manager.fetch_purgatory.watched() > 0,
               "the Fetch waiting in the purgatory")
    s.sendall(produce)
    s.close()
    log = broker.log_manager.get_log(topic, 0)
    wait_until(lambda: log.log_end_offset == 2, "the Produce sent before the close appended")


def test_handlers_write_answers_themselves_and_the_connection_goes_on(broker):
    """A handler writes its answer to the socket itself when nothing is ahead of it; the
    processor then only unmutes the connection (at its next turn, which the next request
    brings): every request is answered, in order, and the processor counts each answer."""
    s = connect(broker)
    for i in range(50):
        correlation_id, body = api_versions(s, i, i % 5)
        assert (correlation_id, body["error_code"]) == (i, 0)
    wait_until(lambda: sum(p.get("responses_written_by_handlers", 0)
                           for p in broker.socket_server.statistics()) == 50,
               "the processor to take note of the 50 answers the handlers wrote")
    assert sum(p.get("responses", 0) for p in broker.socket_server.statistics()) == 50


def test_processors_share_connections_round_robin(broker):
    sockets = [connect(broker) for _ in range(6)]
    for s in sockets:
        assert api_versions(s)[1]["error_code"] == 0
    stats = broker.socket_server.statistics()
    assert [p["accepted"] for p in stats] == [3, 3]
    assert [p["connections"] for p in stats] == [3, 3]


def test_max_connections_per_ip_refuses_the_extra_connection():
    with Broker({"max.connections.per.ip": "2"}) as b:
        first, second = connect(b), connect(b)
        third = connect(b)
        assert closed_by_peer(third)
        assert api_versions(first)[1]["error_code"] == 0
        assert api_versions(second)[1]["error_code"] == 0
        first.close()
        wait_until(lambda: b.socket_server.connection_quotas.get("127.0.0.1") == 1,
                   what="the closed connection to be counted out")
        assert api_versions(connect(b))[1]["error_code"] == 0


def test_max_connections_per_ip_overrides():
    with Broker({"max.connections.per.ip": "1",
                 "max.connections.per.ip.overrides": "127.0.0.1:3"}) as b:
        kept = [connect(b) for _ in range(3)]
        for s in kept:
            assert api_versions(s)[1]["error_code"] == 0
        assert closed_by_peer(connect(b))


def test_idle_connections_are_closed():
    with Broker({"connections.max.idle.ms": "200"}) as b:
        idle = connect(b)
        assert api_versions(idle)[1]["error_code"] == 0
        assert closed_by_peer(idle)
        assert api_versions(connect(b))[1]["error_code"] == 0
        assert sum(p.get("idle_closed", 0) for p in b.socket_server.statistics()) >= 1


def test_oversized_frame_closes_only_that_connection():
    with Broker({"socket.request.max.bytes": "1000"}) as b:
        big, good = connect(b), connect(b)
        big.sendall((1001).to_bytes(4, "big") + b"\0" * 100)
        assert closed_by_peer(big)
        negative = connect(b)
        negative.sendall((-5).to_bytes(4, "big", signed=True))
        assert closed_by_peer(negative)
        assert api_versions(good)[1]["error_code"] == 0


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x00\x00\x03abc",  # shorter than a header
        b"\x00\x00\x00\x10" + b"\xff" * 16,  # garbage
        api_versions_frame(1, 3)[:-3] + b"\x00\x00\x00",  # right size, wrong body
    ],
    ids=["short", "garbage", "bad-body"],
)
def test_bad_frames_close_only_that_connection(broker, frame):
    bad, good = connect(broker), connect(broker)
    bad.sendall(frame)
    assert closed_by_peer(bad)
    assert api_versions(good)[1]["error_code"] == 0


def test_bytes_left_over_after_the_body_are_ignored_as_kafka_does(broker):
    """Kafka reads what the schema declares and ignores the rest (librdkafka sends such bytes)."""
    frame = api_versions_frame(1, 0)
    s = connect(broker)
    s.sendall((len(frame) - 4 + 6).to_bytes(4, "big") + frame[4:] + b"\x00" * 6)
    correlation_id, body = codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))
    assert (correlation_id, body["error_code"]) == (1, 0)
    assert api_versions(s, 2)[1]["error_code"] == 0  # the connection goes on
    counted = sum(p.get("requests_with_trailing_bytes", 0)
                  for p in broker.socket_server.statistics())
    assert counted == 1


def test_client_disconnecting_mid_request(broker):
    gone = connect(broker)
    gone.sendall(api_versions_frame(1, 0)[:9])
    gone.close()
    assert api_versions(connect(broker))[1]["error_code"] == 0


def test_200_clients_at_once_and_one_sends_garbage(broker):
    sockets = [None] * 200
    barrier = threading.Barrier(200)
    results: dict[int, object] = {}

    def client(i: int) -> None:
        barrier.wait(30)
        s = connect(broker, timeout_s=30)
        sockets[i] = s
        if i == 57:
            s.sendall(b"\x00\x00\x00\x20" + bytes(range(32)))
            results[i] = closed_by_peer(s)
        else:
            results[i] = api_versions(s, i)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results.pop(57) is True
    assert sorted(results) == [i for i in range(200) if i != 57]
    for i, (correlation_id, body) in results.items():
        assert correlation_id == i and body["error_code"] == 0
    for s in sockets:
        s.close()


def test_a_client_that_never_reads_is_not_read_either(broker):
    """Muting bounds the broker's memory: once its responses back up, the broker stops reading
    the connection, so the client's writes stop going anywhere (its sends would block)."""
    hog = connect(broker)
    hog.setblocking(False)
    frame = api_versions_frame(1, 0)
    sent, bound = 0, 256 * 1024 * 1024
    while sent < bound:
        try:
            sent += hog.send(frame * 1000)
        except BlockingIOError:
            break
    assert sent < bound, "the broker kept reading a client that never reads"
    good = connect(broker)
    assert api_versions(good)[1]["error_code"] == 0


def test_handler_exception_answers_unknown_server_error_and_the_thread_goes_on():
    with Broker({"num.io.threads": "1"}) as b:

        def broken(request):
            raise RuntimeError("a bug in an API")

        b.apis.handlers[22] = broken  # InitProducerId: its response has a top-level error code
        s = connect(b)
        payload = b"".join(codec.encode_request(22, 0, 5, "t", {
            "transactional_id": None, "transaction_timeout_ms": 1000}))
        s.sendall(len(payload).to_bytes(4, "big") + payload)
        correlation_id, body = codec.decode_response(22, 0, recv_frame(s))
        assert (correlation_id, body["error_code"]) == (5, -1)  # UNKNOWN_SERVER_ERROR
        assert api_versions(s, 6)[1]["error_code"] == 0  # the one handler is still alive


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(max_size=300), honest_size=st.booleans())
def test_fuzz_random_frames_never_hurt_the_broker(shared_broker, payload, honest_size):
    bad = connect(shared_broker)
    size = len(payload) if honest_size else int.from_bytes(payload[:4].ljust(4, b"\0"), "big")
    try:
        bad.sendall(size.to_bytes(4, "big") + payload)
    except OSError:
        pass
    bad.close()
    assert api_versions(connect(shared_broker))[1]["error_code"] == 0


def test_broker_config_errors_name_the_key():
    with pytest.raises(errors.ConfigError, match="num.io.threads"):
        BrokerConfig({"num.io.threads": "many"})
    with pytest.raises(errors.ConfigError, match="max.connections.per.ip.overrides"):
        BrokerConfig({"max.connections.per.ip.overrides": "nohost"})
    with pytest.raises(errors.ConfigError, match="lisenters"):
        BrokerConfig({"lisenters": "PLAINTEXT://x:1"})
    with pytest.raises(errors.ConfigError, match="listener.security.protocol.map"):
        BrokerConfig({"listeners": "INTERNAL://x:1"})  # a name the protocol map lacks
    config = BrokerConfig({"broker.id": "7", "max.connections.per.ip.overrides": "a:1, b:2"})
    assert config["node.id"] == 7
    assert config["max.connections.per.ip.overrides"] == {"a": 1, "b": 2}
    assert config["num.network.threads"] == 3 and config["queued.max.requests"] == 500


@pytest.mark.parametrize("version", [0, 3])
def test_kafka_pythons_codec_reads_our_api_versions(broker, version):
    """kafka-python's own request and response classes (its encoder, its decoder) against us."""
    from kafka.protocol.old import api_versions as kp

    request_class = getattr(kp, f"ApiVersionsRequest_v{version}")
    response_class = getattr(kp, f"ApiVersionsResponse_v{version}")
    fields = {"client_software_name": "kafka-python", "client_software_version": "3",
              "tags": {}} if version >= 3 else {}
    request = request_class(**fields)
    request.with_header(correlation_id=42, client_id="kafka-python")
    s = connect(broker)
    s.sendall(request.encode(header=True, framed=True))
    response = response_class.decode(recv_frame(s), header=True)
    assert response.header.correlation_id == 42
    assert response.error_code == 0
    # Every API KafkaApis answers, at every version it answers, as kafka-python read them.
    answered = [tuple(k)[:3] for k in response.api_keys]
    assert answered == [(key, *broker.apis.supported_versions(key))
                        for key in sorted(broker.apis.handlers)]
    # The everyday APIs among them, from Kafka 4's oldest version to the newest we declare.
    assert {key: (low, high) for key, low, high in answered}.items() >= {
        ApiKey.PRODUCE: (3, 12), ApiKey.FETCH: (4, 17), ApiKey.LIST_OFFSETS: (1, 10),
        ApiKey.METADATA: (0, 12), ApiKey.JOIN_GROUP: (2, 9), ApiKey.API_VERSIONS: (0, 4),
        ApiKey.INIT_PRODUCER_ID: (0, 5)}.items()


def test_many_idle_connections_do_not_stop_the_others(broker):
    idle = [connect(broker) for _ in range(400)]
    wait_until(lambda: sum(p["connections"] for p in broker.socket_server.statistics()) >= 400,
               what="400 connections configured")
    assert api_versions(connect(broker))[1]["error_code"] == 0
    assert api_versions(idle[-1], 9)[0] == 9
    for s in idle:
        s.close()
    wait_until(lambda: broker.socket_server.connection_quotas.total <= 1,
               what="closed connections counted out")


# -- the hand-offs: RequestQueue and the processors' wake-ups ------------------------------------


def _sleeping_handler(q: RequestQueue, got: list) -> tuple[threading.Thread, Wakeup]:
    """A handler thread that takes one request from ``q`` (sleeping until it comes)."""
    wake = Wakeup()

    def run() -> None:
        while not got:
            item = q.get(wake, timeout_s=30)
            if item is not None:
                got.append(item)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, wake


def test_a_put_hands_its_request_to_the_handler_that_sleeps():
    q = RequestQueue(10)
    got: list = []
    t, wake = _sleeping_handler(q, got)
    wait_until(lambda: q.waiting_handlers == 1, "the handler sleeping on the queue")
    assert q.put("request") is wake  # the caller owes that handler its wake-up ...
    wake.wake()  # ... and pays it
    t.join(30)
    assert got == ["request"]


def test_a_busy_handler_takes_the_next_request_without_sleeping():
    q = RequestQueue(10)
    assert q.put("a") is None and q.put("b") is None  # nobody sleeps: nobody to wake
    wake = Wakeup()
    assert [q.get(wake, 30), q.get(wake, 30)] == ["a", "b"]
    assert q.waiting_handlers == 0 and len(q) == 0


def test_a_handler_whose_wait_ends_empty_handed_leaves_no_trace():
    q = RequestQueue(10)
    wake = Wakeup()
    assert q.get(wake, 0.01) is None  # nothing came: a timeout ...
    assert q.waiting_handlers == 0  # ... and the next put does not hand the request to a stale sleeper
    assert q.put("a") is None and q.get(wake, 30) == "a"
    with pytest.raises(ValueError, match="queued.max.requests=0"):
        RequestQueue(0)


def test_the_request_queue_is_bounded_and_a_get_makes_room():
    q = RequestQueue(2)
    q.put("a")
    q.put("b")
    with pytest.raises(queue.Full):
        q.put("c", timeout_s=0.01)
    blocked = threading.Thread(target=q.put, args=("c", 30), daemon=True)
    blocked.start()
    wait_until(lambda: q.waiting_puts == 1, "the third put waiting for room")
    wake = Wakeup()
    assert q.get(wake, 30) == "a"
    blocked.join(30)
    assert not blocked.is_alive()
    assert [q.get(wake, 30), q.get(wake, 30)] == ["b", "c"]


def test_no_request_is_lost_between_sleeping_handlers_and_putting_processors():
    """Four handlers and two processors hand over 4,000 requests through a small queue; each
    is taken exactly once, and every owed wake-up is paid (the handlers never stay asleep)."""
    q = RequestQueue(8)
    taken: list = []
    done = threading.Event()

    def handler() -> None:
        wake = Wakeup()
        while not done.is_set():
            # Longer than the wait below: a lost wake-up leaves requests queued while every
            # handler sleeps, and the test fails instead of a timeout hiding it.
            item = q.get(wake, timeout_s=120)
            if item is not None:
                taken.append(item)

    def processor(base: int) -> None:
        for i in range(2000):
            sleeper = q.put(base + i, timeout_s=30)
            if sleeper is not None:
                sleeper.wake()

    handlers = [threading.Thread(target=handler, daemon=True) for _ in range(4)]
    for t in handlers:
        t.start()
    processors = [threading.Thread(target=processor, args=(b,)) for b in (0, 10_000)]
    for t in processors:
        t.start()
    for t in processors:
        t.join(60)
    wait_until(lambda: len(taken) == 4000, "every request taken by a handler")
    done.set()
    q.wake_all()
    assert sorted(taken) == [*range(2000), *range(10_000, 12_000)]


def test_a_wakeup_wakes_its_sleeper_once_however_often_it_was_woken():
    wake = Wakeup()
    assert wake.wait(0) is False  # nothing pending: the wait ends at its timeout
    slept = threading.Thread(target=lambda: got.append(wake.wait(30)), daemon=True)
    got: list[bool] = []
    slept.start()
    wake.wake()
    slept.join(30)
    assert got == [True]
    wake.wake()
    wake.wake()
    assert wake.wait(30) is True
    assert wake.wait(0) is False  # the two wake-ups were one
    wake.close()
    wake.close()  # a second close is harmless


def test_a_handler_pays_the_wake_ups_it_owes_whether_it_sleeps_or_not():
    q = RequestQueue(10)
    handler, processors = Wakeup(), [Wakeup(), Wakeup()]
    owed = list(processors)
    assert q.get(handler, 0, owed) is None  # nothing queued: paid on the way to sleep
    assert owed == [] and all(p.wait(0) for p in processors)
    q.put("a")
    owed = list(processors)
    assert q.get(handler, 30, owed) == "a"  # a request waiting: paid once it is taken
    assert owed == [] and all(p.wait(0) for p in processors)


def test_a_request_is_taken_before_the_wake_ups_are_paid():
    """Paying a wake-up lets go of the GIL, and another handler may take a request then:
    the one this handler saw is already its own (it used to find the queue empty and fail)."""
    q = RequestQueue(10)
    q.put("a")
    q.put("b")
    taken_meanwhile = []

    class AnotherHandlerRunsMeanwhile:
        def wake(self) -> None:
            taken_meanwhile.append(q.get(Wakeup(), 0))

    owed = [AnotherHandlerRunsMeanwhile(), AnotherHandlerRunsMeanwhile()]
    assert q.get(Wakeup(), 0, owed) == "a"
    assert taken_meanwhile == ["b", None] and owed == [] and len(q) == 0


def test_the_poller_reports_ready_descriptors_and_pays_wake_ups_on_the_way():
    poller = Poller()
    a, b = socket.socketpair()
    try:
        poller.register(a.fileno(), select.POLLIN)
        assert poller.poll(0) == []
        b.send(b"x")
        assert poller.poll(30) == [(a.fileno(), select.POLLIN)]
        poller.modify(a.fileno(), select.POLLOUT)
        assert poller.poll(30) == [(a.fileno(), select.POLLOUT)]
        poller.unregister(a.fileno())
        assert poller.poll(0) == []
        # More owed wake-ups than are paid without the GIL: every one is paid all the same.
        wakes = [Wakeup() for _ in range(40)]
        owed = list(wakes)
        assert poller.poll(0, owed) == [] and owed == []
        assert all(w.wait(0) for w in wakes)
        # What epoll refuses comes back as the OSError it is, and a wrong wake-up as a TypeError.
        poller.register(a.fileno(), select.POLLIN)
        with pytest.raises(FileExistsError):
            poller.register(a.fileno(), select.POLLIN)
        with pytest.raises(FileNotFoundError):
            poller.unregister(b.fileno())
        with pytest.raises(TypeError):
            poller.poll(0, ["not a wake-up"])
        # A NaN timeout is refused before any owed wake-up is taken, so none is lost.
        owed = [wakes[0]]
        with pytest.raises(ValueError, match="NaN"):
            poller.poll(float("nan"), owed)
        with pytest.raises(ValueError, match="NaN"):
            wakes[1].wait(float("nan"), owed)
        assert owed == [wakes[0]]
        poller.close()
        with pytest.raises(ValueError, match="closed poller"):
            poller.poll(0)
    finally:
        a.close()
        b.close()
        poller.close()


def test_a_closed_wake_up_keeps_its_descriptor_while_a_waker_can_still_write_it():
    # A processor copies the descriptors of the wake-ups it owes and writes them after letting
    # go of the GIL.  Had close() freed the number in between, a file opened meanwhile could take
    # it and receive those 8 bytes: the descriptor lives as long as the Wakeup object does.
    wake = Wakeup()
    fd = wake.fd
    owed = [wake]
    wake.close()
    assert wake.closed
    assert stat.S_ISREG(os.fstat(fd).st_mode) is False  # still open: still the eventfd
    poller = Poller()
    try:
        assert poller.poll(0, owed) == [] and owed == []
    finally:
        poller.close()
    assert os.read(fd, 8) == (1).to_bytes(8, sys.byteorder)  # the owed wake-up went to it
    assert wake.wait(0) is False  # nobody sleeps on a closed wake-up; it only waits out the time


def test_a_full_request_queue_holds_back_the_clients_and_serves_them_all():
    """queued.max.requests=1 and one handler: processors wait for room (back-pressure), paying
    the wake-ups they owe first, and every client is answered."""
    with Broker({"num.network.threads": "2", "num.io.threads": "1",
                 "queued.max.requests": "1"}) as b:
        sockets = [connect(b) for _ in range(20)]
        for i, s in enumerate(sockets):  # all sent before any answer is read
            s.sendall(b"".join(api_versions_frame(i * 10 + k, 3) for k in range(10)))
        for i, s in enumerate(sockets):
            for k in range(10):
                correlation_id, body = codec.decode_response(18, 3, recv_frame(s))
                assert (correlation_id, body["error_code"]) == (i * 10 + k, 0)
            s.close()
