"""``python -m kafkacore.broker`` as a separate process, and LocalBroker(kind="kafkacore")."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys

import pytest
from reactor_client import api_versions

import kafkacore
from kafkacore.testing import LocalBroker

# The kafkacore under test (installed in tox, the tree itself when built in place); the
# children run from a temporary directory so `python -m` cannot pick up an uncompiled tree.
ROOT = pathlib.Path(kafkacore.__file__).resolve().parent.parent


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _ask(address: str):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.settimeout(10)
        return api_versions(s, 3)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_cli_prints_its_address_serves_and_stops_cleanly(tmp_path, signum):
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.broker", "--log-dirs", str(tmp_path),
         "--config", "num.network.threads=2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("kafkacore-broker listening on "), line
        address = line.split()[-1]
        correlation_id, body = _ask(address)
        assert (correlation_id, body["error_code"]) == (3, 0)
        process.send_signal(signum)
        assert process.wait(30) == 0
        assert "stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_cli_names_a_bad_setting(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kafkacore.broker", "--config", "num.io.threads=lots"],
        capture_output=True, text=True, env=_env(), timeout=60, cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "num.io.threads" in done.stderr


def test_local_broker_runs_ours_and_restarts_it_on_the_same_port_after_kill_9(tmp_path):
    broker = LocalBroker(kind="kafkacore", log_dirs=tmp_path)
    with broker:
        first_pid = broker.pid
        assert _ask(broker.bootstrap)[1]["error_code"] == 0
        broker.kill()
        assert not broker.is_running()
        broker.start()
        assert broker.pid != first_pid
        assert _ask(broker.bootstrap)[1]["error_code"] == 0
    assert not broker.is_running()


def test_local_broker_kind_is_checked():
    with pytest.raises(ValueError, match="kind"):
        LocalBroker(kind="zookeeper")


def test_local_broker_deletes_only_the_log_dirs_it_made(tmp_path):
    with LocalBroker(kind="kafkacore") as broker:
        made = pathlib.Path(broker.log_dirs)
        assert _ask(broker.bootstrap)[1]["error_code"] == 0
        broker.kill()
        broker.start()  # a restart keeps the data
        assert made.is_dir()
    assert not made.exists() and not broker.is_running()
    with LocalBroker(kind="kafkacore", log_dirs=tmp_path) as broker:
        assert _ask(broker.bootstrap)[1]["error_code"] == 0
    assert tmp_path.is_dir() and any(tmp_path.iterdir())  # the caller's: kept, with its data


def test_local_broker_config_is_for_our_broker_only():
    with pytest.raises(ValueError, match="config"):
        LocalBroker(kind="tansu", config={"log.flush.interval.messages": "1"})
