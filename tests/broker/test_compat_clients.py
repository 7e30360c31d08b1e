"""The client compatibility table (docs/compatibility.rst) is true today: every client driver
(tests/compat/) run against our broker does what the committed table says, call by call, and
the committed table is what the generator makes of its results.

A call that works now and did not when the table was made fails here too: the table is then
out of date, and ``make compat`` refreshes it.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

COMPAT = pathlib.Path(__file__).resolve().parent.parent / "compat"
sys.path.insert(0, str(COMPAT))

import generate  # noqa: E402  (tests/compat)
import harness  # noqa: E402
import run  # noqa: E402

from kafkacore.testing import LocalBroker  # noqa: E402

COMMITTED = generate.load()
OURS = "kafkacore" in os.environ.get("KAFKACORE_TEST_BROKERS", "tansu,kafkacore")
ours_only = pytest.mark.skipif(
    not OURS, reason="the clients judge our broker in the tier that runs it (tox.ini: py312)")


def test_the_committed_table_is_what_the_generator_writes():
    assert generate.TABLE.read_text() == generate.render(COMMITTED), (
        f"{generate.TABLE} was edited by hand or not regenerated: run make compat")


def expected(client: str, calls) -> dict[str, str]:
    table = COMMITTED["results"]["kafkacore"].get(client)
    if table is None:
        pytest.fail(f"{client} is not in the committed table: run make compat where it runs")
    return {call: table[call]["status"] for call in calls}


def compare(client: str, got: dict[str, dict[str, str]], calls, broker: str = "") -> None:
    want = expected(client, calls)
    broken = {call: got[call] for call in calls
              if want[call] == "works" and got[call]["status"] != "works"}
    assert not broken, f"{client}: calls the table says work do not: {broken}{broker}"
    changed = {call: (want[call], got[call]) for call in calls if want[call] != got[call]["status"]}
    assert not changed, (f"{client}: the table is out of date, run make compat "
                         f"(was, now): {changed}")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every available driver, side by side, against one fresh broker of ours; and, for a
    failure's message, whether the broker outlived them, and where its and the clients' logs
    are."""
    logs = tmp_path_factory.mktemp("compat")
    with LocalBroker(kind="kafkacore", config=generate.OUR_CONFIG, log_path=logs / "broker.log",
                     log_dirs=logs / "data") as broker:
        got = run.run_all(broker.bootstrap, calls=generate.SINGLE_CALLS, log_dir=logs)
        yield got, logs, broker.is_running()


@ours_only
@pytest.mark.parametrize("client", list(run.CLIENTS))
def test_each_client_call_does_what_the_table_says(client, results):
    reason = run.unavailable(client)
    if reason is not None:
        pytest.skip(reason)
    got, logs, alive = results
    failed = [call for call, result in got[client].items() if result["status"] == "fails"]
    compare(client, got[client], generate.SINGLE_CALLS, diagnosis(logs, client, alive, failed))


def diagnosis(logs: pathlib.Path, client: str, alive: bool, failed: list[str]) -> str:
    """For a failure's message: the broker's state, the lines of its log that name a failed
    call's topic or group, and the client's log while each failed call ran (the driver marks
    where each call starts: harness.CALL_MARK); the ends of both logs where nothing matches."""
    def read(name):
        path = logs / name
        return path, path.read_text(errors="replace").splitlines() if path.exists() else []

    def part(path, lines, what):
        return f"\n-- {what} of {path}:\n" + "\n".join(lines)

    broker_path, broker_lines = read("broker.log")
    names = [harness.resource_name(client, call) for call in failed]
    named = [line for line in broker_lines if any(n in line for n in names)][-60:]
    text = part(broker_path, named, f"the lines naming {names}") if named \
        else part(broker_path, broker_lines[-25:], "the end")
    client_path, client_lines = read(f"{client}.log")
    sections = 0
    for call in failed:
        starts = [i for i, line in enumerate(client_lines) if line == harness.CALL_MARK + call]
        if starts:
            ends = [i for i, line in enumerate(client_lines)
                    if i > starts[-1] and line.startswith(harness.CALL_MARK)]
            section = client_lines[starts[-1]:ends[0] if ends else len(client_lines)]
            text += part(client_path, section[-80:], f"{call} (its last 80 lines at most)")
            sections += 1
    if not sections:
        text += part(client_path, client_lines[-25:], "the end")
    state = "running" if alive else "NOT running"
    return f"\nthe broker is {state} after the clients{text}"


def offering_cluster_calls() -> list[str]:
    return [c for c in run.CLIENTS
            if any(r["status"] != "absent" for call, r in COMMITTED["results"]["kafkacore"].get(
                c, {}).items() if call in harness.CLUSTER_CALLS)]


@pytest.mark.cluster
@pytest.mark.parametrize("client", offering_cluster_calls())
def test_each_cluster_call_does_what_the_table_says(client, cluster):
    """The calls that need several brokers (a preferred election), on the session's cluster."""
    reason = run.unavailable(client)
    if reason is not None:
        pytest.skip(reason)
    offered = [c for c in sorted(harness.CLUSTER_CALLS) if expected(client, [c])[c] != "absent"]
    env = {harness.ELECT_TOPIC_ENV: generate.prepare_election(cluster, client)}
    compare(client, run.run_driver(client, cluster.bootstrap_servers, offered, env), offered)
