"""The network layer under attack and under its own bugs: supervised threads, the acceptor out of
file descriptors, the control socket's surface (docs/broker/network.rst, security.rst)."""

from __future__ import annotations

import os
import resource
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from reactor_client import api_versions, connect, recv_frame
from support.children import child_env
from waits import wait_until

from kafkacore import KafkaProducer, errors
from kafkacore.broker import Broker
from kafkacore.broker.network.faults import ControlServer, ControlSocketPathError, FaultInjector
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey


@pytest.fixture
def broker():
    with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as b:
        yield b


# -- threads that die in silence ----------------------------------------------------------------


def test_a_processor_survives_an_exception_in_its_loop(broker):
    processor = broker.socket_server.processors[0]
    original = processor.close_excess_idle
    raised = []

    def broken() -> None:
        if not raised:
            raised.append(True)
            raise RuntimeError("a bug in the processor loop")
        original()

    processor.close_excess_idle = broken
    wait_until(lambda: processor.failures == 1, what="the processor's failed turn")
    assert processor.is_alive()
    # Every new connection is answered, those handed to this processor too (round-robin).
    for correlation_id in range(4):
        with connect(broker) as s:
            assert api_versions(s, correlation_id)[1]["error_code"] == 0
    assert processor.statistics()["accepted"] >= 2


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_processor_gets_no_more_connections(broker):
    processor = broker.socket_server.processors[1]

    def die() -> None:
        raise SystemExit("the thread ends")  # not an Exception: nothing can keep it running

    processor.do_work = die
    processor.wakeup()
    processor.join(10)
    assert not processor.is_alive()
    for correlation_id in range(4):  # would be handed to the dead one every other time
        with connect(broker) as s:
            assert api_versions(s, correlation_id)[1]["error_code"] == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_failing_turn_is_retried_and_a_dead_thread_is_reported(caplog):
    class Flaky(ShutdownableThread):
        def __init__(self) -> None:
            super().__init__("flaky")
            self.turns = 0

        def do_work(self) -> bool | None:
            self.turns += 1
            if self.turns <= 2:
                raise ValueError(f"turn {self.turns} fails")
            if self.turns == 3:
                raise SystemExit("not an Exception: the thread dies")
            return None

    deaths = []
    t = Flaky()
    t.on_death = deaths.append
    t.start()
    assert t.await_shutdown(10)
    assert t.failures == 2 and t.turns == 3
    assert deaths == [t]
    assert any(r.levelname == "CRITICAL" and "flaky died" in r.getMessage()
               for r in caplog.records)
    # The same error twice in a row is logged once (a failure that repeats cannot flood the log).
    assert sum("uncaught error" in r.getMessage() for r in caplog.records) == 1


# -- the acceptor out of file descriptors --------------------------------------------------------


def _start_with_few_fds(tmp_path: Path, nofile: int):
    stderr = open(tmp_path / "broker.log", "wb")  # noqa: SIM115 - closed by the caller

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.broker", "--log-level", "INFO",
         "--config", "num.network.threads=1"],
        stdout=subprocess.PIPE, stderr=stderr, env=child_env(), cwd=tempfile.gettempdir(),
        preexec_fn=limit)
    line = process.stdout.readline().decode()
    assert line.startswith("kafkacore-broker listening on "), (tmp_path / "broker.log").read_text()
    host, port = line.rsplit(" ", 1)[1].strip().rsplit(":", 1)
    return process, stderr, (host, int(port))


def test_out_of_file_descriptors_the_acceptor_backs_off_and_serves_what_it_has(tmp_path):
    process, stderr, address = _start_with_few_fds(tmp_path, nofile=48)
    log_path = tmp_path / "broker.log"
    sockets: list[socket.socket] = []
    try:
        first = socket.create_connection(address, timeout=10)
        sockets.append(first)
        assert api_versions(first, 1)[1]["error_code"] == 0
        for _ in range(60):  # more than the broker has descriptors for
            sockets.append(socket.create_connection(address, timeout=10))
        wait_until(lambda: "accept failed" in log_path.read_text(), what="EMFILE in accept")
        started = time.monotonic()
        for correlation_id in range(2, 200):  # the connection it has is still served
            assert api_versions(first, correlation_id)[1]["error_code"] == 0
        elapsed = time.monotonic() - started
        warnings = log_path.read_text().count("accept failed")
        # One warning per 10 s interval (before: one per failed accept, thousands a second).
        assert warnings <= 2 + elapsed / 10, f"{warnings} warnings in {elapsed:.1f} s"
        # Descriptors come back: the connections waiting in the backlog are accepted and served.
        last = sockets.pop()
        for s in sockets[1:]:
            s.close()
        del sockets[1:]
        sockets.append(last)
        assert api_versions(last, 7)[1]["error_code"] == 0
    finally:
        for s in sockets:
            s.close()
        process.terminate()
        process.wait(30)
        stderr.close()


# -- the control socket ---------------------------------------------------------------------------


def test_the_control_socket_is_owner_only_whatever_the_umask(tmp_path):
    path = tmp_path / "c.sock"
    old = os.umask(0)
    try:
        server = ControlServer(FaultInjector(), path).start()
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    finally:
        server.stop()


def test_the_control_socket_refuses_a_path_that_is_taken(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("not yours")
    with pytest.raises(ControlSocketPathError, match="not a socket"):
        ControlServer(FaultInjector(), precious).start()
    assert precious.read_text() == "not yours"
    (tmp_path / "dir").mkdir()
    with pytest.raises(ControlSocketPathError):
        ControlServer(FaultInjector(), tmp_path / "dir").start()
    live = ControlServer(FaultInjector(), tmp_path / "live.sock").start()
    try:
        with pytest.raises(ControlSocketPathError, match="another process"):
            ControlServer(FaultInjector(), tmp_path / "live.sock").start()
    finally:
        live.stop()


def test_the_stale_socket_of_a_killed_broker_is_replaced(tmp_path):
    path = tmp_path / "stale.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, never listening, never unlinked: what a SIGKILL leaves
    dead.close()
    server = ControlServer(FaultInjector(), path).start()
    try:
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        server.stop()


# -- memory held by clients that never read ------------------------------------------------------

_MIB = 1 << 20


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _fill_topic(broker, name: str, mib: int) -> None:
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers,
                        "batch.size": _MIB, "linger.ms": 20}) as producer:
        for i in range(mib * 8):
            producer.send(name, bytes([i % 251]) * (_MIB // 8 - 100), partition=0)
        producer.flush(timeout=60)


def _fetch_frame(name: str, correlation_id: int, max_bytes: int) -> bytes:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes,
            "isolation_level": 0,
            "topics": [{"topic": name, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": max_bytes}]}]}
    payload = b"".join(codec.encode_request(ApiKey.FETCH, 4, correlation_id, "t", body))
    return len(payload).to_bytes(4, "big") + payload


def _never_reading_connection(broker) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel holds little for us
    s.settimeout(10)
    s.connect((broker.advertised_host, broker.advertised_port))
    return s


def _total(broker, counter: str) -> int:
    return sum(p.get(counter, 0) for p in broker.socket_server.statistics())


def test_fetch_answers_for_clients_that_never_read_are_not_held_in_memory():
    with Broker({"num.network.threads": "2", "num.io.threads": "2"}) as broker:
        _fill_topic(broker, "big", 8)
        sockets = []
        try:
            before = _rss_bytes()
            responses_before = _total(broker, "responses")
            for i in range(20):
                s = _never_reading_connection(broker)
                s.sendall(_fetch_frame("big", i, 16 * _MIB))
                sockets.append(s)
            wait_until(lambda: _total(broker, "responses") >= responses_before + 20,
                       what="20 fetch answers queued")
            grown = _rss_bytes() - before
            # 20 answers of 8 MiB each: 160 MiB if copied; a file region each with sendfile.
            assert grown < 48 * _MIB, f"the broker grew by {grown / _MIB:.0f} MiB"
        finally:
            for s in sockets:
                s.close()


def test_a_connection_that_never_reads_its_answer_is_closed_after_the_idle_bound():
    with Broker({"num.network.threads": "1", "connections.max.idle.ms": "500"}) as broker:
        _fill_topic(broker, "big", 2)
        s = _never_reading_connection(broker)
        try:
            s.sendall(_fetch_frame("big", 1, 16 * _MIB))
            wait_until(lambda: _total(broker, "blocked_closed") == 1,
                       what="the blocked connection closed")
            assert broker.socket_server.statistics()[0]["connections"] == 0
        finally:
            s.close()


def test_half_sent_requests_hold_at_most_queued_max_request_bytes():
    config = {"num.network.threads": "2", "socket.request.max.bytes": str(8 * _MIB),
              "queued.max.request.bytes": str(10 * _MIB)}
    with Broker(config) as broker:
        pool = broker.socket_server.memory_pool
        attackers = []
        try:
            for i in range(5):  # each announces 8 MiB and sends a little of it
                s = connect(broker)
                # (little enough to fit the socket buffers: a waiting connection is not read)
                s.sendall((8 * _MIB).to_bytes(4, "big") + b"\0" * 32768)
                attackers.append(s)
                if i == 0:  # the first one holds the memory; the others wait
                    wait_until(lambda: pool.used == 8 * _MIB, what="the first reservation")
            wait_until(lambda: _total(broker, "waiting_for_memory") == 4,
                       what="the requests beyond the pool waiting for memory")
            assert pool.used <= 10 * _MIB
            with connect(broker) as s:  # a small request still fits beside them
                assert api_versions(s, 1)[1]["error_code"] == 0
            attackers.pop(0).close()  # its 8 MiB come back: the next waiter gets them
            wait_until(lambda: _total(broker, "waiting_for_memory") == 3,
                       what="memory handed to a waiting connection")
            assert pool.used <= 10 * _MIB
        finally:
            for s in attackers:
                s.close()
        wait_until(lambda: pool.used == 0, what="every reservation given back")


def test_the_controller_fencer_survives_an_error_and_still_fences(tmp_path):
    from kafkacore.broker.config.kafka_config import BrokerConfig
    from kafkacore.broker.controller.quorum_controller import QuorumController

    controller = QuorumController(BrokerConfig({
        "process.roles": "controller", "log.dirs": str(tmp_path),
        "broker.session.timeout.ms": "200"}))
    heartbeats = controller.heartbeats
    original = heartbeats.expired
    failed = []

    def expired_once_broken() -> list[int]:
        if not failed:
            failed.append(True)
            raise RuntimeError("a bug in one fencing pass")
        return original()

    heartbeats.expired = expired_once_broken
    controller.start()
    try:
        controller.register_broker(1, "127.0.0.1", 9092, "incarnation-1")
        # The pass that raised is logged and the next ones run: the silent broker is fenced.
        wait_until(lambda: 1 in heartbeats.fenced, what="broker 1 fenced")
        assert failed and controller._fencer.failures == 1 and controller._fencer.is_alive()
    finally:
        controller.shutdown()


# -- SASL: hashing off the network threads, guessing slowed per source ---------------------------


def _sasl_call(s: socket.socket, api_key: int, version: int, correlation_id: int, body):
    payload = b"".join(codec.encode_request(api_key, version, correlation_id, "t", body))
    s.sendall(len(payload).to_bytes(4, "big") + payload)
    return codec.decode_response(api_key, version, recv_frame(s))[1]


def _plain_attempt(broker, user: str, password: str) -> int:
    """One PLAIN authentication on a new connection; its error code."""
    with connect(broker) as s:
        assert _sasl_call(s, ApiKey.SASL_HANDSHAKE, 1, 1, {"mechanism": "PLAIN"})[
            "error_code"] == 0
        answer = _sasl_call(s, ApiKey.SASL_AUTHENTICATE, 1, 2,
                            {"auth_bytes": f"\0{user}\0{password}".encode()})
        return answer["error_code"]


@pytest.fixture
def sasl_broker():
    with Broker({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "num.network.threads": "1",
                 "sasl.enabled.mechanisms": "PLAIN", "sasl.users": "alice:secret"}) as b:
        yield b


def test_a_password_check_does_not_stall_the_network_thread(sasl_broker, monkeypatch):
    from kafkacore.broker.security.authentication import PlainCredential

    checking, release = threading.Event(), threading.Event()
    original = PlainCredential.matches

    def slow_matches(self, password: str) -> bool:  # as a very slow hash would be
        checking.set()
        release.wait(30)
        return original(self, password)

    monkeypatch.setattr(PlainCredential, "matches", slow_matches)
    answers: list[int] = []
    attempt = threading.Thread(
        target=lambda: answers.append(_plain_attempt(sasl_broker, "alice", "secret")))
    attempt.start()
    try:
        assert checking.wait(10)
        # The only network thread still answers others while the password is being checked.
        with connect(sasl_broker, timeout_s=5) as s:
            assert api_versions(s, 9)[1]["error_code"] == 0
    finally:
        release.set()
        attempt.join(30)
    assert answers == [0]


def test_failed_attempts_slow_down_their_source(sasl_broker):
    base_s = 0.1  # connection.failed.authentication.delay.ms
    started = time.monotonic()
    for _ in range(5):
        failed = _plain_attempt(sasl_broker, "alice", "guess")
        assert failed == errors.SaslAuthenticationFailedError.errno
    elapsed = time.monotonic() - started
    # Attempts 2..5 waited 0.1, 0.2, 0.4 and 0.8 s first (a lower bound: it cannot be faster).
    assert elapsed >= base_s * (1 + 2 + 4 + 8)
    # Every failure counted against the source (how many attempts found their turn already
    # due is the machine's business: a slow client reaches the broker after the wait).
    executor = sasl_broker.socket_server.authentication_executor
    assert executor.failures_of("127.0.0.1") == 5
    # The right password from that source is accepted, after the wait.
    assert _plain_attempt(sasl_broker, "alice", "secret") == 0
