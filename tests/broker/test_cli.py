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


@pytest.mark.parametrize("mistake", ["port in use", "log dir is a file", "TLS without keystore"])
def test_start_up_mistakes_are_one_line_and_exit_2(tmp_path, mistake):
    taken = socket.create_server(("127.0.0.1", 0))
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    args, words = {
        "port in use": (["--listeners", f"PLAINTEXT://127.0.0.1:{taken.getsockname()[1]}",
                         "--log-dirs", str(tmp_path / "data")],
                        "cannot listen: Address already in use"),
        "log dir is a file": (["--log-dirs", str(a_file)], f"log dir {a_file} is not a directory"),
        "TLS without keystore": (["--listeners", "SSL://127.0.0.1:0", "--log-dirs",
                                  str(tmp_path / "data")], "a TLS listener needs a keystore"),
    }[mistake]
    try:
        done = subprocess.run([sys.executable, "-m", "kafkacore.broker", *args], env=_env(),
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert done.returncode == 2
    assert done.stdout == ""  # no ready line
    assert done.stderr.startswith(f"kafkacore-broker: error: {words}"), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["kafkacore.broker"], ["kafkacore.broker", "cluster"],
                                     ["kafkacore.testing"]])
def test_help_is_plain_text_and_every_option_has_some(command):
    done = subprocess.run([sys.executable, "-m", *command, "--help"], env=_env(),
                          capture_output=True, text=True, timeout=60, cwd=ROOT.parent)
    assert done.returncode == 0 and "`" not in done.stdout, done.stdout
    lines = done.stdout.split("options:", 1)[1].splitlines()
    for i, line in enumerate(lines):
        option = line.strip()
        if not option.startswith("-"):
            continue
        # Help text follows on the same line after two spaces, or on the next, indented line.
        following = lines[i + 1] if i + 1 < len(lines) else ""
        has_help = "  " in option or (following.startswith(" " * 10)
                                      and not following.strip().startswith("-"))
        assert has_help, f"{option!r} has no help text"
