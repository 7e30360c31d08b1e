"""Faults injected into our broker on purpose (kafkacore.broker.network.faults), seen by clients we did
not write (kafka-python) and by hand over a socket: fail_next, latency, isolation, and the
control socket of a broker running as another process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest
from kafka import KafkaProducer as KafkaPythonProducer
from kafka import errors as kafka_errors
from kafka.record.default_records import DefaultRecordBatchBuilder
from reactor_client import api_versions, closed_by_peer, recv_frame
from readback import read_kafka_python
from support.children import child_env
from support.topics import new_topic
from waits import wait_until

from kafkacore.broker import Broker
from kafkacore.broker.network.faults import (
    BrokerControl,
    BrokerControlError,
    BrokerControlTimeoutError,
    FaultInjector,
    InvalidFaultError,
    resolve_api,
    resolve_error,
    set_error_codes,
)
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.testing import LocalBroker

NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
LEADER_NOT_AVAILABLE = 5
COORDINATOR_NOT_AVAILABLE = 15


@pytest.fixture(scope="module")
def broker():
    with Broker({"num.network.threads": "1", "num.io.threads": "2",
                 "num.partitions": "1"}) as b:
        yield b


@pytest.fixture(autouse=True)
def no_faults_left(broker):
    yield
    broker.faults.reset()



def connect(broker):
    s = socket.create_connection((broker.advertised_host, broker.advertised_port), timeout=30)
    s.settimeout(30)
    return s


def call(s, api_key, version, body, correlation_id=1):
    payload = b"".join(bytes(memoryview(c).cast("B")) for c in codec.encode_request(
        api_key, version, correlation_id, "test-faults", body))
    s.sendall(len(payload).to_bytes(4, "big") + payload)
    got, response = codec.decode_response(api_key, version, recv_frame(s))
    assert got == correlation_id
    return response


def produce_body(topic, value=b"v", acks=1):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=None, value=value, headers=[])
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": bytes(builder.build())}]}]}


def kafka_python_producer(broker, **settings):
    return KafkaPythonProducer(bootstrap_servers=broker.bootstrap_servers,
                               api_version=(2, 5), **settings)


# -- names and shapes ----------------------------------------------------------------------------

def test_apis_and_errors_by_name_or_number():
    assert resolve_api("Produce") == resolve_api("PRODUCE") == resolve_api(0) == ApiKey.PRODUCE
    assert resolve_api("InitProducerId") == ApiKey.INIT_PRODUCER_ID
    assert resolve_error("NOT_LEADER_OR_FOLLOWER") == 6
    assert resolve_error("none") == 0 and resolve_error(7) == 7
    with pytest.raises(ValueError, match="unknown API"):
        resolve_api("Produse")
    with pytest.raises(ValueError, match="unknown error name"):
        resolve_error("NOT_A_LEADER")
    with pytest.raises(TypeError):
        resolve_error(1.5)
    faults = FaultInjector()
    with pytest.raises(ValueError, match="Produce only"):
        faults.fail_next("Fetch", [6], after_append=True)
    with pytest.raises(TypeError, match="list"):
        faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER")
    with pytest.raises(ValueError):
        faults.set_latency(-1)
    with pytest.raises(TypeError):
        faults.set_latency(0.5)
    assert faults.pending() == {}


def test_the_error_goes_to_the_shallowest_level_below_the_top():
    fetch = {"error_code": 0, "responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "records": b"abc", "high_watermark": 3}]}]}
    set_error_codes(fetch, NOT_LEADER_OR_FOLLOWER)
    assert fetch["error_code"] == 0  # the session-level code is not the partition's
    assert fetch["responses"][0]["partitions"][0] == {
        "partition_index": 0, "error_code": 6, "records": b"", "high_watermark": 3}
    top_only = {"error_code": 0, "producer_id": 5}
    assert set_error_codes(top_only, 15)["error_code"] == 15


# -- fail_next -----------------------------------------------------------------------------------

def test_produce_fails_before_the_append(broker):
    topic = new_topic(broker)
    broker.faults.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"])
    assert broker.faults.pending() == {"Produce": [NOT_LEADER_OR_FOLLOWER]}
    producer = kafka_python_producer(broker, retries=0, acks=1)
    try:
        with pytest.raises(kafka_errors.NotLeaderForPartitionError):
            producer.send(topic, b"first", partition=0).get(timeout=30)
        # Nothing was written: the next record is the log's first.
        assert producer.send(topic, b"second", partition=0).get(timeout=30).offset == 0
    finally:
        producer.close(10)
    assert [c.value for c in read_kafka_python(broker.bootstrap_servers, topic, 1, 1)] == [
        b"second"]
    assert broker.faults.pending() == {}


def test_produce_fails_after_the_append(broker):
    topic = new_topic(broker)
    broker.faults.fail_next("Produce", ["REQUEST_TIMED_OUT"], after_append=True)
    producer = kafka_python_producer(broker, retries=0, acks=1)
    try:
        with pytest.raises(kafka_errors.RequestTimedOutError):
            producer.send(topic, b"first", partition=0).get(timeout=30)
        assert producer.send(topic, b"second", partition=0).get(timeout=30).offset == 1
    finally:
        producer.close(10)
    # The client was told it failed; the log has it all the same.
    consumed = read_kafka_python(broker.bootstrap_servers, topic, 1, 2)
    assert [(c.offset, c.value) for c in consumed] == [(0, b"first"), (1, b"second")]


def test_errors_in_turn_and_zero_answers_normally(broker):
    topic = new_topic(broker)
    broker.faults.fail_next(ApiKey.PRODUCE, [0, NOT_LEADER_OR_FOLLOWER, "NONE", 7])
    with connect(broker) as s:
        codes = [call(s, ApiKey.PRODUCE, 9, produce_body(topic, b"%d" % i), i + 1)[
            "responses"][0]["partition_responses"][0]["error_code"] for i in range(5)]
    assert codes == [0, NOT_LEADER_OR_FOLLOWER, 0, REQUEST_TIMED_OUT, 0]
    assert [c.value for c in read_kafka_python(broker.bootstrap_servers, topic, 1, 3)] == [
        b"0", b"2", b"4"]


def test_a_kafka_python_producer_retries_through_not_leader(broker):
    topic = new_topic(broker)
    broker.faults.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 3)
    producer = kafka_python_producer(broker, retries=5, acks=1, retry_backoff_ms=10)
    try:
        assert producer.send(topic, b"x", partition=0).get(timeout=30).offset == 0
    finally:
        producer.close(10)
    assert broker.faults.pending() == {}


def test_fetch_metadata_and_init_producer_id_carry_the_error_where_clients_look(broker):
    topic = new_topic(broker)
    injected_before = broker.faults.status()["injected"]
    with connect(broker) as s:
        call(s, ApiKey.PRODUCE, 9, produce_body(topic))
        broker.faults.fail_next("Fetch", ["NOT_LEADER_OR_FOLLOWER"])
        fetch_body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                      "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                      "topics": [{"topic": topic, "partitions": [
                          {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                           "current_leader_epoch": -1, "log_start_offset": -1}]}],
                      "forgotten_topics_data": [], "rack_id": ""}
        failed = call(s, ApiKey.FETCH, 11, fetch_body, 2)
        assert failed["error_code"] == 0
        part = failed["responses"][0]["partitions"][0]
        assert (part["error_code"], part["records"]) == (NOT_LEADER_OR_FOLLOWER, b"")
        assert call(s, ApiKey.FETCH, 11, fetch_body, 3)["responses"][0]["partitions"][0][
            "records"]
        broker.faults.fail_next("Metadata", ["LEADER_NOT_AVAILABLE"])
        meta = call(s, ApiKey.METADATA, 9, {"topics": [{"name": topic}],
                                             "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False}, 4)
        assert meta["topics"][0]["error_code"] == LEADER_NOT_AVAILABLE
        broker.faults.fail_next("InitProducerId", ["COORDINATOR_NOT_AVAILABLE"])
        before = broker.producer_id_manager.generate_producer_id()
        pid = call(s, ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None,
                                                   "transaction_timeout_ms": -1,
                                                   "producer_id": -1, "producer_epoch": -1}, 5)
        assert pid["error_code"] == COORDINATOR_NOT_AVAILABLE
        # The handler did not run: no producer id was handed out for the failed request.
        assert broker.producer_id_manager.generate_producer_id() == before + 1
    injected = broker.faults.status()["injected"]
    assert {api: injected[api] - injected_before.get(api, 0)
            for api in ("Fetch", "Metadata", "InitProducerId")} == {
        "Fetch": 1, "Metadata": 1, "InitProducerId": 1}


# -- latency -------------------------------------------------------------------------------------

def _held_for(processor, sock):
    """The responses ``processor`` holds for ``sock``'s connection.  Not all it holds: another
    client of this module's broker (one an earlier test left, refreshing its metadata) may have
    an answer held too."""
    client = sock.getsockname()[:2]
    return [r for _, r in list(processor._held) if r.request.client_address == client]


def test_latency_holds_responses_without_blocking_the_network_thread(broker):
    (processor,) = broker.socket_server.processors
    broker.faults.set_latency(60_000)
    a, b = connect(broker), connect(broker)
    try:
        a.sendall(codec_api_versions_frame(1))
        wait_until(lambda: len(_held_for(processor, a)) == 1, bound_s=60,
                   what="a's response held")
        # The same network thread still reads b's request while a's answer waits.
        b.sendall(codec_api_versions_frame(2))
        wait_until(lambda: len(_held_for(processor, b)) == 1, bound_s=60,
                   what="b's response held too")
        assert len(_held_for(processor, a)) == 1
        a.setblocking(False)
        with pytest.raises(BlockingIOError):
            a.recv(1)  # held, not written
        a.setblocking(True)
        a.settimeout(30)
        broker.faults.set_latency(0)  # released at once
        assert codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(a))[0] == 1
        assert codec.decode_response(ApiKey.API_VERSIONS, 0, recv_frame(b))[0] == 2
    finally:
        a.close()
        b.close()


def test_latency_delays_each_response_at_least_that_long(broker):
    broker.faults.set_latency(300)
    with connect(broker) as s:
        for correlation_id in (1, 2):
            start = time.monotonic()
            assert api_versions(s, correlation_id)[0] == correlation_id
            assert time.monotonic() - start >= 0.3  # a lower bound: can never be early


def codec_api_versions_frame(correlation_id):
    payload = b"".join(codec.encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "t", {}))
    return len(payload).to_bytes(4, "big") + payload


# -- isolation -----------------------------------------------------------------------------------

def test_isolate_closes_and_refuses_connections_until_healed(broker):
    with connect(broker) as before:
        assert api_versions(before, 1)[0] == 1
        broker.faults.isolate()
        assert closed_by_peer(before)
    with connect(broker) as during:  # accepted by the kernel, then closed by the broker
        try:
            during.sendall(codec_api_versions_frame(2))
        except OSError:
            pass
        assert closed_by_peer(during)
    assert sum(p.statistics()["connections"] for p in broker.socket_server.processors) == 0
    broker.faults.heal()
    with connect(broker) as after:
        assert api_versions(after, 3)[0] == 3


def test_a_producer_carries_on_after_the_broker_heals(broker):
    topic = new_topic(broker)
    producer = kafka_python_producer(broker, retries=1000, acks=1, retry_backoff_ms=50,
                                     reconnect_backoff_ms=50, reconnect_backoff_max_ms=200,
                                     request_timeout_ms=5000, max_in_flight_requests_per_connection=1)
    try:
        assert producer.send(topic, b"before", partition=0).get(timeout=30).offset == 0
        broker.faults.isolate()
        pending = producer.send(topic, b"during", partition=0)
        # The producer knocks (and is turned away) while its record waits.
        wait_until(lambda: broker.socket_server.acceptor.isolated_refused >= 1,
                   bound_s=60, what="the producer reconnecting")
        assert not pending.is_done
        broker.faults.heal()
        assert pending.get(timeout=30).offset == 1
    finally:
        producer.close(10)


# -- the control socket, with the broker in another process ------------------------------------

@pytest.fixture(scope="module")
def broker_process():
    directory = tempfile.mkdtemp(prefix="kafkacore-faults-")
    control_path = os.path.join(directory, "control.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.broker", "--log-dirs", os.path.join(directory, "data"),
         "--control-socket", control_path, "--num-partitions", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=child_env(),
        cwd=directory)
    try:
        line = process.stdout.readline()
        assert line.startswith("kafkacore-broker listening on "), line
        yield line.split()[-1], control_path
    finally:
        process.terminate()
        process.wait(30)


def test_control_socket_switches_faults_in_another_process(broker_process):
    bootstrap, path = broker_process
    control = BrokerControl(path)
    topic = f"faults-{uuid.uuid4().hex[:10]}"
    producer = KafkaPythonProducer(bootstrap_servers=bootstrap, api_version=(2, 5), retries=0,
                                   acks=1)
    try:
        producer.send(topic, b"warm-up", partition=0).get(timeout=30)
        control.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"])
        assert control.status()["pending"] == {"Produce": [NOT_LEADER_OR_FOLLOWER]}
        with pytest.raises(kafka_errors.NotLeaderForPartitionError):
            producer.send(topic, b"refused", partition=0).get(timeout=30)
        control.fail_next(0, [REQUEST_TIMED_OUT], after_append=True)
        with pytest.raises(kafka_errors.RequestTimedOutError):
            producer.send(topic, b"appended", partition=0).get(timeout=30)
        status = control.status()
        assert status["injected"] == {"Produce": 2} and status["pending"] == {}
    finally:
        producer.close(10)
    consumed = read_kafka_python(bootstrap, topic, 1, 2)
    assert [c.value for c in consumed] == [b"warm-up", b"appended"]

    host, port = bootstrap.rsplit(":", 1)
    control.isolate()
    assert control.status()["isolated"] is True
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.settimeout(30)
        assert closed_by_peer(s)
    control.heal()
    control.set_latency(200)
    assert control.status()["latency_ms"] == 200
    control.set_latency(0)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.settimeout(30)
        assert api_versions(s, 9)[0] == 9


def test_control_reset_switches_every_fault_off(broker_process):
    _, path = broker_process
    control = BrokerControl(path)
    control.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 3)
    control.set_latency(60_000)
    control.isolate()
    assert control.status()["isolated"] is True
    control.reset()
    status = control.status()
    assert (status["pending"], status["latency_ms"], status["isolated"]) == ({}, 0, False)


def test_control_errors_are_typed(broker_process, tmp_path):
    _, path = broker_process
    control = BrokerControl(path)
    with pytest.raises(ValueError):  # checked at the call, before anything is sent
        control.fail_next("Produce", ["NO_SUCH_ERROR"])
    with pytest.raises(TypeError):
        control.set_latency("slow")
    # What the server refuses comes back as InvalidFaultError (a ValueError too).
    with pytest.raises(InvalidFaultError, match="unknown op"):
        control._call({"op": "explode"})
    with pytest.raises(InvalidFaultError, match="Produce only"):
        control._call({"op": "fail_next", "api": 1, "errors": [6], "after_append": True})
    # A line that is not JSON: answered, and the server keeps serving.
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(path)
        s.sendall(b"{not json\n")
        answer = json.loads(s.makefile("rb").readline())
        assert answer["ok"] is False
    assert control.status()["isolated"] is False
    with pytest.raises(BrokerControlError, match="cannot reach"):
        BrokerControl(str(tmp_path / "nobody.sock")).heal()


def test_control_waits_are_bounded(tmp_path):
    path = str(tmp_path / "silent.sock")
    silent = socket.socket(socket.AF_UNIX)
    silent.bind(path)
    silent.listen(1)  # accepts (in the kernel), never answers
    try:
        with pytest.raises(BrokerControlTimeoutError):
            BrokerControl(path, timeout_s=0.5).status()
    finally:
        silent.close()


def test_in_process_faults_are_thread_safe(broker):
    # Many threads queue errors at once: every one is queued, none lost.
    threads = [threading.Thread(target=broker.faults.fail_next, args=("Fetch", [6] * 100))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(broker.faults.pending()["Fetch"]) == 800


def test_a_local_broker_process_with_a_control_socket(tmp_path):
    with pytest.raises(ValueError, match="kafkacore"):
        LocalBroker(control_socket=tmp_path / "tansu.sock")
    with LocalBroker(kind="kafkacore", control_socket=tmp_path / "c.sock",
                     log_dirs=tmp_path / "data") as local:
        local.control.fail_next("ApiVersions", ["UNKNOWN_SERVER_ERROR"])
        with socket.create_connection((local.host, local.port), timeout=30) as s:
            s.settimeout(30)
            assert api_versions(s, 1)[1]["error_code"] == -1
            assert api_versions(s, 2)[1]["error_code"] == 0
        local.kill()  # the socket file stays behind; the next broker replaces it
        local.start()
        assert local.control.status()["injected"] == {}  # a new process, a new injector
