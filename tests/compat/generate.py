"""Make the client compatibility table: every driver against our broker, against tansu, and the
calls that need several brokers against a 3-broker Cluster; the results are written to
tests/compat/results.json and, as reStructuredText, to docs/compatibility_table.inc
(``make compat``; docs/compatibility.rst explains the table).

    python tests/compat/generate.py          # run every client, write both files
    python tests/compat/generate.py --check  # only check that the .inc is results.json's
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import harness  # noqa: E402
import run  # noqa: E402

RESULTS = run.HERE / "results.json"
TABLE = run.ROOT / "docs" / "compatibility_table.inc"
BROKERS = {"kafkacore": "kafkacore", "tansu": "tansu"}
#: Our broker's settings for the run: ACLs switched on (the anonymous user a super user, so
#: every other call is allowed), and a group's first rebalance without Kafka's 3 s wait.
OUR_CONFIG = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": "0",
}
SINGLE_CALLS = [c for c in harness.CALL_NAMES if c not in harness.CLUSTER_CALLS]


def run_on_broker(kind: str) -> dict[str, dict[str, dict[str, str]]]:
    """client -> call -> result, on one fresh broker of ``kind``; the cluster calls too on
    tansu (one node: it has no other), only the single-broker calls on ours."""
    from kafkacore.testing import LocalBroker

    config = OUR_CONFIG if kind == "kafkacore" else None
    calls = SINGLE_CALLS if kind == "kafkacore" else list(harness.CALL_NAMES)
    with LocalBroker(kind=kind, config=config) as broker:
        results = run.run_all(broker.bootstrap, calls=calls)
        if not broker.is_running():  # a table of a dead broker's answers says nothing
            raise SystemExit(f"the {kind} broker died under the clients: see {broker.log_path}")
        return results


def prepare_election(cluster, client: str) -> str:
    """A new three-replica topic whose partition 0 is led by a replica that is not its
    preferred one (the first of its replica list): a preferred election has to move it back."""
    name = harness.topic(cluster.bootstrap_servers,
                         f"{client}-elect-{uuid.uuid4().hex[:8]}".replace("_", "-"),
                         replication_factor=3)
    cluster.wait_for_isr(name, 0, [1, 2, 3])
    cluster.wait_for_topic(name)
    preferred = cluster.partition_state(name, 0)["replica_nodes"][0]
    cluster.move_leader(name, 0, next(b for b in (1, 2, 3) if b != preferred))
    return name


def run_on_cluster(clients) -> dict[str, dict[str, dict[str, str]]]:
    """The calls that need several brokers, one client at a time, on a 3-broker Cluster."""
    from kafkacore.testing.cluster import Cluster

    out: dict[str, dict[str, dict[str, str]]] = {c: {} for c in clients}
    with tempfile.TemporaryDirectory(prefix="kc-compat-") as base, \
            Cluster(3, log_dir=base, config=OUR_CONFIG) as cluster:
        for client in clients:
            env = {harness.ELECT_TOPIC_ENV: prepare_election(cluster, client)}
            out[client] = run.run_driver(client, cluster.bootstrap_servers,
                                         sorted(harness.CLUSTER_CALLS), env)
    return out


def collect() -> dict:
    clients = [c for c in run.CLIENTS if run.unavailable(c) is None]
    results: dict[str, dict] = {b: run_on_broker(b) for b in BROKERS}
    for client, calls in run_on_cluster(clients).items():
        results["kafkacore"][client].update(calls)
    versions = run.versions()
    return {
        "clients": {c: {"name": run.CLIENTS[c], "version": versions.get(c, ""),
                        "unavailable": run.unavailable(c)} for c in run.CLIENTS},
        "results": {b: {c: {call: results[b][c][call] for call in harness.CALL_NAMES}
                        for c in clients} for b in BROKERS},
    }


# -- the table -----------------------------------------------------------------------------------

MARK = {"works": "works", "fails": "**fails**", "absent": "\u2014"}


def cell(result: dict[str, str]) -> str:
    text = MARK[result["status"]]
    detail = result["detail"].replace("|", "/").replace("`", "'").replace("*", "\\*")
    if result["status"] == "absent":
        return text
    return f"{text}: {detail}" if detail else text


def counts(data: dict, broker: str, client: str) -> str:
    calls = data["results"][broker][client].values()
    offered = [r for r in calls if r["status"] != "absent"]
    return f"{sum(r['status'] == 'works' for r in offered)} of {len(offered)}"


def render(data: dict) -> str:
    """The .inc file: a summary, then per client, each call on each broker."""
    out = [".. Written by tests/compat/generate.py (make compat) from tests/compat/results.json;",
           "   do not edit by hand.", ""]
    clients = [c for c in run.CLIENTS if c in data["results"]["kafkacore"]]
    out += [".. list-table:: Calls that work, of those the client offers", "   :header-rows: 1", "",
            "   * - client", "     - version", *[f"     - on {b}" for b in BROKERS]]
    for c in clients:
        out += [f"   * - {data['clients'][c]['name']}", f"     - {data['clients'][c]['version']}",
                *[f"     - {counts(data, b, c)}" for b in BROKERS]]
    out.append("")
    for info in data["clients"].values():
        if info["unavailable"]:
            out += [f"{info['name']} did not run: {info['unavailable']}.", ""]
    out += [".. list-table:: Each call, each client, on our broker (\u2014: the client has no "
            "such call)", "   :header-rows: 1", "   :stub-columns: 1", "",
            "   * - call", *[f"     - {data['clients'][c]['name']}" for c in clients]]
    short = {"works": "works", "fails": "**fails**", "absent": "\u2014"}
    for call, title, _api in harness.CALLS:
        out += [f"   * - {title}",
                *[f"     - {short[data['results']['kafkacore'][c][call]['status']]}"
                  for c in clients]]
    out.append("")
    for c in clients:
        name = f"{data['clients'][c]['name']} {data['clients'][c]['version']}"
        out += [name, "-" * len(name), "",
                f".. list-table:: {data['clients'][c]['name']}: each call on each broker",
                "   :header-rows: 1", "   :widths: 20 20 30 30", "",
                "   * - call", "     - Kafka API", *[f"     - {b}" for b in BROKERS]]
        for call, title, api in harness.CALLS:
            out += [f"   * - {title}", f"     - {api}",
                    *[f"     - {cell(data['results'][b][c][call])}" for b in BROKERS]]
        out.append("")
    return "\n".join(out)


def load() -> dict:
    """The committed results (tests/compat/results.json)."""
    return json.loads(RESULTS.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="check the committed table against results.json, run nothing")
    args = parser.parse_args(argv)
    if args.check:
        if TABLE.read_text() != render(load()):
            print(f"{TABLE} is not what results.json makes: run make compat", file=sys.stderr)
            return 1
        return 0
    data = collect()
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    TABLE.write_text(render(data))
    for b in BROKERS:
        print(b, {c: counts(data, b, c) for c in data["results"][b]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
