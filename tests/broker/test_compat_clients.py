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
    compare(client, got[client], generate.SINGLE_CALLS, diagnosis(logs, client, alive))


def diagnosis(logs: pathlib.Path, client: str, alive: bool) -> str:
    """For a failure's message: the broker's state, the ends of its log and the client's."""
    def tail(name):
        path = logs / name
        lines = path.read_text(errors="replace").splitlines()[-25:] if path.exists() else []
        return f"\n-- the end of {path}:\n" + "\n".join(lines)

    state = "running" if alive else "NOT running"
    return f"\nthe broker is {state} after the clients{tail('broker.log')}{tail(f'{client}.log')}"


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
