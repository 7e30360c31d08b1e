"""Brokers and clusters started from Python end with the process that started them, however it
ends (SIGKILL included), and the temporary directories the library made for them go too
(kafkacore.broker.server_common.lifeline).  Each test runs an owner process, takes the process ids its objects
report, ends the owner, and waits (bounded) until none of them runs and no directory is left."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile

import pytest
from support.children import child_env
from waits import wait_until

from kafkacore.broker.server_common import lifeline

# The owner: starts what argv names, prints the pids and directories its objects report, then
# waits for its end ("kill": to be SIGKILLed; "exit": it returns without closing anything).
OWNER = r"""
import json, os, sys, time
from kafkacore.testing.cluster import Cluster
from kafkacore.testing import LocalBroker

end, kinds = sys.argv[1], sys.argv[2:]
pids, dirs = [], []
for kind in kinds:
    if kind == "cluster":
        cluster = Cluster(brokers=2).start()
        pids += cluster.pids.values()
        dirs.append(str(cluster.base))
    else:
        broker = LocalBroker(kind=kind).start()
        pids.append(broker.pid)
        dirs += [broker.log_dirs] if broker.log_dirs else []
print(json.dumps({"pids": pids, "dirs": dirs}), flush=True)
if end == "kill":
    time.sleep(600)
"""


def _state(pid: int) -> str | None:
    """The process's state letter, or None if it does not exist (a zombie has ended: 'Z')."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _running(pid: int) -> bool:
    return _state(pid) not in (None, "Z")


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc's parent ids)."""
    parents: dict[int, int] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _wait_until_gone(pids: set[int], dirs: list[str]) -> None:
    wait_until(lambda: not any(_running(p) for p in pids)
               and not any(os.path.exists(d) for d in dirs),
               f"processes {sorted(pids)} ended and {dirs} removed")


def _start_owner(end: str, *kinds: str) -> tuple[subprocess.Popen[str], dict]:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, end, *kinds], stdout=subprocess.PIPE,
                             env=child_env(), text=True, cwd=tempfile.gettempdir())
    assert owner.stdout is not None
    line = owner.stdout.readline()  # bounded: the owner exits if a broker does not start
    assert line, f"the owner exited with {owner.wait()} before reporting"
    return owner, json.loads(line)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
@pytest.mark.parametrize("end", ["kill", "exit"])
def test_local_brokers_of_each_kind_end_with_their_owner(end):
    owner, report = _start_owner(end, "tansu", "kafkacore")
    try:
        pids = set(report["pids"])
        assert len(pids) == 2 and all(_running(p) for p in pids)
        assert len(report["dirs"]) == 1 and os.path.isdir(report["dirs"][0])
        children = _descendants(owner.pid)  # the brokers and the reaper
        assert pids < children
        if end == "kill":
            owner.kill()
        assert owner.wait(30) == (-signal.SIGKILL if end == "kill" else 0)
        _wait_until_gone(children, report["dirs"])
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdout.close()


@pytest.mark.cluster
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_a_cluster_and_a_local_broker_end_when_their_owner_is_sigkilled():
    owner, report = _start_owner("kill", "cluster", "tansu")
    try:
        pids = set(report["pids"])
        # the quorum's 3 controllers, 2 brokers, tansu
        assert len(pids) == 6 and all(_running(p) for p in pids)
        children = _descendants(owner.pid)
        assert pids < children
        owner.kill()
        owner.wait(30)
        _wait_until_gone(children, report["dirs"])
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdout.close()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_python_m_kafkacore_testing_sigkilled_leaves_nothing():
    child = subprocess.Popen([sys.executable, "-m", "kafkacore.testing"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env(), text=True,
                             cwd=tempfile.gettempdir())
    try:
        assert child.stdout.readline().strip()  # the bootstrap address: the broker is up
        up = child.stderr.readline()
        assert "pid " in up, up
        broker_pid = int(up.split("pid ")[1].split(",")[0])
        children = _descendants(child.pid)
        assert broker_pid in children and _running(broker_pid)
        child.kill()
        child.wait(30)
        _wait_until_gone(children, [])
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()


# An owner that starts our broker with a lifeline, as Cluster and LocalBroker do.
LIFELINE_OWNER = r"""
import subprocess, sys, time
from kafkacore.broker.server_common import lifeline
broker = lifeline.spawn([sys.executable, "-m", "kafkacore.broker", "--log-dirs", sys.argv[1]],
                        lifeline=True, stdout=subprocess.PIPE, stderr=open(sys.argv[2], "wb"))
print(broker.stdout.readline().decode().strip(), broker.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_our_broker_stops_by_its_lifeline_alone(tmp_path):
    """The reaper and the owner SIGKILLed together: the broker still sees its owner end."""
    stderr = tmp_path / "broker.log"
    owner = subprocess.Popen([sys.executable, "-c", LIFELINE_OWNER, str(tmp_path / "data"),
                              str(stderr)], stdout=subprocess.PIPE, env=child_env(), text=True,
                             cwd=tempfile.gettempdir())
    try:
        ready, _, pid = owner.stdout.readline().rpartition(" ")
        assert ready.startswith("kafkacore-broker listening on "), ready
        broker_pid = int(pid)
        reaper = _descendants(owner.pid) - {broker_pid}
        assert len(reaper) == 1 and _running(broker_pid)
        for p in reaper:
            os.kill(p, signal.SIGKILL)
        owner.kill()
        owner.wait(30)
        _wait_until_gone({broker_pid}, [])
        assert "the process that started this one has ended" in stderr.read_text()
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdout.close()


def test_a_broker_started_by_a_person_has_no_lifeline(monkeypatch):
    """Without the variable a Python owner sets, a broker watches nothing."""
    monkeypatch.delenv(lifeline.LIFELINE_ENV, raising=False)
    assert lifeline.watch_owner(lambda: None) is False


def test_remove_directory_removes_and_tells_the_reaper(tmp_path):
    made = tmp_path / "made-by-the-library"
    (made / "sub").mkdir(parents=True)
    (made / "sub" / "00000000000000000000.log").write_bytes(b"x" * 100)
    lifeline.own_directory(made)
    assert lifeline.remove_directory(made) is True
    assert not made.exists()
