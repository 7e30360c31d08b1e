"""Exactly once through SIGKILLs: the transactional copier (examples/transactional_copier.py) on
a 3-broker cluster, its coordinator, an output leader and itself killed again and again
(Kafka's system test ``transactions_test.py``, on loopback).

    PYTHONPATH=. python benchmarks/bench_copier.py [--records 100000] [--kills 3]
        [--producer kafkacore confluent] [--json benchmarks/results/copier.json]

For each producer: a fresh 3-broker :class:`kafkacore.broker.Cluster` (topics with replication
factor 3, ``min.insync.replicas`` 2), ``--records`` records written to a 3-partition input
topic, then one copier process copying it to a 3-partition output topic in transactions.  As
the copier's committed count crosses evenly spaced marks, in turn: (a) the broker leading the
copier's ``__transaction_state`` partition, (b) the leader of one output partition (each in
turn), (c) the copier process are SIGKILLed; a broker is restarted once the copier has committed
again without it (and its partitions are back in sync before the next kill), a copier at once.
The copier may not copy past a limit just short of the next mark (its ``--limit-file``), raised
only as each kill falls: it cannot finish before the last one, however slow the harness.
Then a confluent-kafka read_committed consumer reads the output to its end: every input record
exactly once, in each partition in the input's order.  Every wait is bounded.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

from kafkacore.admin import create_topics
from kafkacore.broker.group.group_metadata_manager import OFFSETS_TOPIC, partition_for
from kafkacore.broker.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC
from kafkacore.testing.cluster import Cluster

ROOT = pathlib.Path(__file__).resolve().parent.parent
COPIER = ROOT / "examples" / "transactional_copier.py"
PARTITIONS = 3
TXN_PARTITIONS = 5  # fewer than Kafka's 50: a faster start
CLUSTER_CONFIG = {"transaction.state.log.num.partitions": str(TXN_PARTITIONS),
                  "replica.lag.time.max.ms": "2000",
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}
KINDS = ("coordinator", "output_leader", "copier")


class CopierRunError(AssertionError):
    pass


def make_topics(cluster: Cluster, *names: str) -> None:
    configs = {"min.insync.replicas": "2"}
    result = create_topics(cluster.bootstrap_servers, {n: PARTITIONS for n in names},
                           replication_factor=3, configs=configs)
    assert result == {n: 0 for n in names}, result
    for name in names:
        for p in range(PARTITIONS):
            cluster.wait_for_isr(name, p, [1, 2, 3])
        cluster.wait_for_topic(name)


def value_of(partition: int, i: int) -> bytes:
    return b"%d:%08d" % (partition, i)


def fill_input(bootstrap: str, topic: str, n: int) -> dict[int, list[bytes]]:
    """``n`` records, round robin over the partitions; returns each partition's values in order."""
    from kafkacore import KafkaProducer

    expected: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    with KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        for i in range(n):
            p = i % PARTITIONS
            value = value_of(p, i)
            producer.send(topic, value, partition=p)
            expected[p].append(value)
        producer.flush(120)
    return expected


class Copier:
    """One copier process at a time; its stdout's ``committed <n>`` lines feed ``committed``,
    its ``held <hold>`` lines ``held``."""

    def __init__(self, cluster: Cluster, args: list[str], log: pathlib.Path) -> None:
        self.cluster, self.args, self.log = cluster, args, log
        self.committed = 0
        self.held = ""
        self.process: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.starts = 0

    def start(self) -> None:
        env = dict(os.environ)  # the kafkacore this interpreter has (the tree is not built under tox)
        with open(self.log, "a") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(COPIER), "--bootstrap-servers",
                 self.cluster.bootstrap_servers, *self.args],
                stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        self.starts += 1
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("committed "):
                self.committed = max(self.committed, int(line.split()[1]))
            elif line.startswith("held "):
                self.held = line.split()[1]

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)

    def poll(self) -> int | None:
        assert self.process is not None
        return self.process.poll()


def wait_for(pred: Any, what: str, bound_s: float, copier: Copier | None = None) -> None:
    deadline = time.monotonic() + bound_s
    while not pred():
        if copier is not None and copier.poll() not in (None, 0):
            raise CopierRunError(f"the copier failed (exit {copier.poll()}) while waiting for "
                                 f"{what}; see {copier.log}")
        if time.monotonic() > deadline:
            raise CopierRunError(f"waited {bound_s} s for {what}")
        time.sleep(0.05)


def run_copy(cluster: Cluster, producer: str, n: int, kills_per_kind: int, *, work_dir:
             pathlib.Path, max_rate: float = 0.0, bound_s: float = 600.0,
             client_debug: str = "", spare_group_coordinator: bool | None = None
             ) -> dict[str, Any]:
    """Fill, copy under kills, verify; returns the figures (raises CopierRunError on a failed
    check).

    ``spare_group_coordinator`` (default: with confluent-kafka's producer): before a broker is
    killed, the copier's group coordinator is moved off it.  librdkafka keeps a killed group
    coordinator in its coordinator cache after the controller fenced the broker and the Metadata
    answer dropped it (as Kafka's does), and its ``send_offsets_to_transaction`` then waits for
    that broker without end, past its own timeout, even once the broker is back.
    """
    tag = uuid.uuid4().hex[:8]
    source, target = f"copier-in-{tag}", f"copier-out-{tag}"
    make_topics(cluster, source, target)
    expected = fill_input(cluster.bootstrap_servers, source, n)
    txn_id, group = f"copier-{tag}", f"g-{tag}"
    txn_partitions = int(cluster.config.get("transaction.state.log.num.partitions", "50"))
    txn_partition = partition_for(txn_id, txn_partitions)
    group_partition = partition_for(group, int(cluster.config.get(
        "offsets.topic.num.partitions", "50")))
    if spare_group_coordinator is None:
        spare_group_coordinator = producer == "confluent"
    hold, limit = work_dir / f"hold-{tag}", work_dir / f"limit-{tag}"
    copier = Copier(cluster, ["--input", source, "--output", target, "--group", group,
                              "--transactional-id", txn_id, "--producer", producer,
                              "--max-rate", str(max_rate), "--client-debug", client_debug,
                              "--hold-file", str(hold), "--limit-file", str(limit)],
                    work_dir / f"copier-{producer}-{tag}.log")
    plan = [KINDS[i % 3] for i in range(3 * kills_per_kind)]
    marks = [n * (i + 1) // (len(plan) + 1) for i in range(len(plan))]
    # Kill i falls once the copier has committed marks[i]; until then it may copy up to
    # limits[i], one short of the next mark (of n), so that it is still copying when the kill
    # falls and yet cannot finish before the last kill (the limit after it is n).
    limits = [following - 1 for following in [*marks[1:], n]]
    if any(lim <= m for lim, m in zip(limits, marks, strict=True)):
        raise ValueError(f"{n} records are too few for {len(plan)} kills")
    kills: list[dict[str, Any]] = []
    began = time.monotonic()
    holds = itertools.count(1)  # each hold's text, which the copier's "held" line repeats
    _write_whole(limit, str(limits[0]))
    copier.start()
    try:
        deadline = began + bound_s
        for i, (kind, mark) in enumerate(zip(plan, marks, strict=True)):
            wait_for(lambda m=mark: copier.committed >= m, f"{mark} records committed",
                     deadline - time.monotonic(), copier)
            at = copier.committed
            if copier.poll() is not None:
                raise CopierRunError(f"the copier exited {copier.poll()} before kill {i + 1} "
                                     f"({kind}), at {at} records of {n} (limit {limits[i]}); "
                                     f"see {copier.log}")
            # once this kill has fallen, the copier may go on to the next kill's limit (to the
            # end after the last kill)
            next_limit = limits[i + 1] if i + 1 < len(plan) else n
            if kind == "copier":
                copier.kill()
                _write_whole(limit, str(next_limit))
                copier.start()
                kills.append({"kind": kind, "at": at, "limit": limits[i]})
                continue
            if kind == "coordinator":
                topic, partition = TRANSACTION_STATE_TOPIC, txn_partition
            else:
                topic, partition = target, i // 3 % PARTITIONS
            victim = cluster.leader_of(topic, partition)
            moved = spare_group_coordinator and cluster.leader_of(OFFSETS_TOPIC,
                                                                  group_partition) == victim
            if moved:
                # librdkafka learns of the move only from a TxnOffsetCommit's NOT_COORDINATOR:
                # the move falls between two transactions, so that the commit after it is one
                # whose TxnOffsetCommit met the move and found the new coordinator (one already
                # past its TxnOffsetCommit would prove nothing)
                token = str(next(holds))
                _write_whole(hold, token)
                wait_for(lambda t=token: copier.held == t or copier.poll() == 0,
                         "the copier held", deadline - time.monotonic(), copier)
                at = copier.committed  # exact: its lines before "held" are read
                # room for that commit, and more after the kill (at < next_limit - 1)
                _write_whole(limit, str((at + next_limit) // 2))
                _move_off(cluster, OFFSETS_TOPIC, group_partition, victim)
                hold.unlink()
                wait_for(lambda a=at: copier.committed > a or copier.poll() == 0,
                         "a commit after the group coordinator moved",
                         deadline - time.monotonic(), copier)
                at = copier.committed
            killed_at = time.monotonic()
            cluster.kill(victim)
            _write_whole(limit, str(next_limit))  # room to commit without the broker
            cluster.wait_for_leader_change(topic, partition, victim)
            # the copier commits without the dead broker: the next leaders take over once the
            # controller has fenced it (broker.session.timeout.ms)
            wait_for(lambda a=at: copier.committed > a or copier.poll() == 0,
                     "a commit without the killed broker", deadline - time.monotonic(), copier)
            recovered_s = round(time.monotonic() - killed_at, 1)
            # No new transaction starts while the broker comes back, so that the next kill falls
            # while the copier copies rather than on a copier waiting at its limit, however long
            # the restart takes on a loaded machine; before another broker is killed, this one
            # must be back in sync too.
            _write_whole(hold, str(next(holds)))
            cluster.restart(victim)
            if any(k != "copier" for k in plan[i + 1:]):
                for t, ps in ((TRANSACTION_STATE_TOPIC, [txn_partition]),
                              (target, range(PARTITIONS)), (OFFSETS_TOPIC, [group_partition])):
                    for p in ps:
                        # Back in sync: every replica of the partition (an internal topic made
                        # while a broker was down has fewer than three).
                        state = cluster.partition_state(t, p)
                        replicas = state["replica_nodes"] if state else [1, 2, 3]
                        cluster.wait_for_isr(t, p, replicas,
                                             timeout_s=max(deadline - time.monotonic(), 1))
            hold.unlink()
            kills.append({"kind": kind, "at": at, "limit": limits[i], "broker": victim,
                          "partition": f"{topic}-{partition}", "group_coordinator_moved": moved,
                          "commit_without_it_s": recovered_s})
        wait_for(lambda: copier.poll() is not None, "the copier to finish",
                 deadline - time.monotonic())
        if copier.poll() != 0:
            raise CopierRunError(f"the copier exited {copier.poll()}; see {copier.log}")
    finally:
        if copier.poll() is None:  # a failed run: the copier would wait at its limit
            copier.kill()
        hold.unlink(missing_ok=True)
        limit.unlink(missing_ok=True)
    copy_s = time.monotonic() - began
    got = read_committed(cluster.bootstrap_servers, target)
    for p in range(PARTITIONS):
        if got[p] != expected[p]:
            raise CopierRunError(_difference(p, expected[p], got[p]))
    aborts = sum(line.startswith("aborting:") for line in copier.log.read_text().splitlines())
    return {"producer": producer, "records": n, "kills": kills, "copier_starts": copier.starts,
            "aborted_transactions": aborts,
            "seconds": round(copy_s, 1), "records_per_s": round(n / copy_s),
            "exactly_once_in_order": True}


def _write_whole(path: pathlib.Path, text: str) -> None:
    """Write a copier's control file by a rename: it reads the old text or the new, never part."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def _move_off(cluster: Cluster, topic: str, partition: int, broker: int) -> bool:
    """Move ``topic-partition``'s leadership off ``broker`` to another in-sync replica; False
    if ``broker`` did not lead it."""
    if cluster.leader_of(topic, partition) != broker:
        return False
    state = cluster.partition_state(topic, partition) or {}
    others = [r for r in state.get("isr_nodes", [1, 2, 3]) if r != broker]
    cluster.move_leader(topic, partition, others[0])
    return True


def _difference(partition: int, want: list[bytes], got: list[bytes]) -> str:
    first = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
                 min(len(want), len(got)))
    return (f"output partition {partition}: {len(got)} records, {len(set(got))} distinct, "
            f"{len(want)} expected; first difference at {first}: "
            f"want {want[first:first + 3]}, got {got[first:first + 3]}")


def read_committed(bootstrap: str, topic: str, bound_s: float = 120.0) -> dict[int, list[bytes]]:
    """Every committed record of ``topic``, per partition, with confluent-kafka: read to the
    end (the last stable offset, which is the end once no transaction is open)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{topic}",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + bound_s
        while len(at_end) < PARTITIONS:
            if time.monotonic() > deadline:
                raise CopierRunError(f"read {sum(map(len, out.values()))} records of {topic} "
                                     f"in {bound_s} s, partitions at their end: {at_end}")
            for m in consumer.consume(10_000, 0.5):
                if m.error():
                    if m.error().code() == m.error()._PARTITION_EOF:
                        at_end.add(m.partition())
                        continue
                    raise CopierRunError(f"verifying consumer: {m.error()}")
                at_end.discard(m.partition())
                out[m.partition()].append(m.value())
    finally:
        consumer.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--kills", type=int, default=3, help="kills of each kind")
    parser.add_argument("--producer", nargs="+", default=["kafkacore", "confluent"],
                        choices=("kafkacore", "confluent"))
    parser.add_argument("--max-rate", type=float, default=0.0)
    parser.add_argument("--bound-s", type=float, default=900.0)
    parser.add_argument("--client-debug", default="",
                        help="librdkafka debug contexts for confluent-kafka's producer")
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()
    results = []
    failed = False
    for producer in args.producer:
        with tempfile.TemporaryDirectory(prefix="bench-copier-") as tmp:
            work = pathlib.Path(tmp)
            with Cluster(3, log_dir=work / "cluster", config=CLUSTER_CONFIG) as cluster:
                try:
                    result = run_copy(cluster, producer, args.records, args.kills,
                                      work_dir=pathlib.Path(tempfile.gettempdir()),
                                      max_rate=args.max_rate, bound_s=args.bound_s,
                                      client_debug=args.client_debug)
                except CopierRunError as error:
                    failed = True
                    result = {"producer": producer, "records": args.records,
                              "exactly_once_in_order": False, "error": str(error)}
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps({"bench": "copier", "partitions": PARTITIONS,
                                         "replication_factor": 3, "min_insync_replicas": 2,
                                         "results": results}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
