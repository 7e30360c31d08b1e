"""What every client driver shares: the calls, in the table's order, and how a driver reports.

A driver is a script, ``<client>_driver.py`` (or ``.js``), run as ``driver BOOTSTRAP [CALL ...]``:
it performs each call it has (all of them, or those named) against the broker at ``BOOTSTRAP``
and prints one JSON object per call on its own line: ``{"call": ..., "status": "works" | "fails" | "absent", "detail": ...}``, after a
line whose status is ``running`` (so whoever runs it knows which call hung or crashed it).  A call
*works* when the client reported no error and what it did is seen (a record read back, a setting
described with its new value); *fails* carries the client's own error text; *absent* says the
client has no such call.  Names of topics and groups are ``<client>-<call>``, so several drivers
can share one broker.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Mapping

#: (call, what the table calls it, the Kafka API it exercises), in the table's order.
CALLS: tuple[tuple[str, str, str], ...] = (
    ("produce", "produce", "Produce"),
    ("consume", "consume (assigned partition)", "Fetch, ListOffsets"),
    ("group_consume", "group consume + commit", "JoinGroup, SyncGroup, OffsetCommit"),
    ("consumer_group_consume", "group consume, new protocol (KIP-848)",
     "ConsumerGroupHeartbeat, ConsumerGroupDescribe"),
    ("metadata", "list topics", "Metadata"),
    ("create_topics", "create topics", "CreateTopics"),
    ("delete_topics", "delete topics", "DeleteTopics"),
    ("create_partitions", "create partitions", "CreatePartitions"),
    ("describe_configs", "describe configs", "DescribeConfigs"),
    ("incremental_alter_configs", "alter configs (incremental)", "IncrementalAlterConfigs"),
    ("alter_configs", "alter configs (legacy)", "AlterConfigs"),
    ("delete_records", "delete records", "DeleteRecords"),
    ("list_offsets", "list offsets", "ListOffsets"),
    ("list_groups", "list groups", "ListGroups"),
    ("describe_groups", "describe groups", "DescribeGroups"),
    ("list_group_offsets", "list group offsets", "OffsetFetch"),
    ("alter_group_offsets", "alter group offsets", "OffsetCommit"),
    ("offset_delete", "delete group offsets", "OffsetDelete"),
    ("delete_groups", "delete groups", "DeleteGroups"),
    ("describe_cluster", "describe cluster", "DescribeCluster"),
    ("describe_topic_partitions", "describe topic partitions", "DescribeTopicPartitions"),
    ("describe_log_dirs", "describe log dirs", "DescribeLogDirs"),
    ("elect_leaders", "elect leaders", "ElectLeaders"),
    ("acls", "create, describe, delete ACLs", "CreateAcls, DescribeAcls, DeleteAcls"),
    ("transactions", "transactional produce + commit", "InitProducerId, AddPartitionsToTxn, EndTxn"),
)
CALL_NAMES = tuple(c[0] for c in CALLS)

#: Calls that need more than one broker (a leader that is not the preferred replica): run
#: against the 3-broker Cluster, on a topic prepared there (see ELECT_TOPIC_ENV).
CLUSTER_CALLS = frozenset({"elect_leaders"})
#: The environment variable naming the topic elect_leaders elects (the generator moved its
#: leader off the preferred replica); without it the driver makes its own one-replica topic,
#: where a preferred election is answered ELECTION_NOT_NEEDED.
ELECT_TOPIC_ENV = "KAFKACORE_COMPAT_ELECT_TOPIC"

RECORDS = 10
TIMEOUT_S = 15.0
#: Written to a driver's standard error (the client's log) before each call, so that a failure's
#: message can show that call's part of the log (tests/broker/test_compat_clients.py).
CALL_MARK = "-- kafkacore compat call: "


def resource_name(client: str, call: str) -> str:
    """The topic (and group, transactional id) a driver's ``call`` works on."""
    return f"{client}-{call}".replace("_", "-")


def short(text: str, limit: int = 160) -> str:
    """An error's first line, at most ``limit`` characters, with addresses and ids that change
    from run to run replaced (so the table does not change when nothing did)."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    line = re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", line)
    line = re.sub(r"localhost:\d+", "HOST:PORT", line)
    line = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "UUID", line)
    line = re.sub(r"\d+(\.\d+)?\s?ms\b", "N ms", line)
    line = re.sub(r"\b1\d{12}\b", "TIMESTAMP", line)  # milliseconds since 1970
    return line if len(line) <= limit else line[: limit - 1] + "\u2026"


def check(condition: object, what: str) -> None:
    """A call's effect, verified: a failed check is a failed call, with ``what`` as its text."""
    if not condition:
        raise AssertionError(what)


def report(call: str, status: str, detail: str = "") -> None:
    print(json.dumps({"call": call, "status": status, "detail": detail}), flush=True)


def main(calls: Mapping[str, Callable[[str, str], str | None] | str]) -> None:
    """Run a driver: ``calls`` maps each call to ``fn(bootstrap, name)`` (which may return a
    note for the table, e.g. which request the client really sent) or, for a call the client
    does not have, to the reason.  Every call in CALLS must be listed."""
    missing = set(CALL_NAMES) - set(calls)
    if missing:
        raise SystemExit(f"the driver does not say what it does for {sorted(missing)}")
    bootstrap, wanted = sys.argv[1], sys.argv[2:] or list(CALL_NAMES)
    # The clients' own log, to standard error: whoever runs the driver may keep it.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    client = sys.argv[0].rsplit("/", 1)[-1].removesuffix(".py").removesuffix("_driver")
    for call in wanted:
        fn = calls[call]
        if isinstance(fn, str):
            report(call, "absent", fn)
            continue
        report(call, "running")
        print(f"{CALL_MARK}{call}", file=sys.stderr, flush=True)
        try:
            note = fn(bootstrap, resource_name(client, call))
        except Exception as exc:  # the client's error, whatever its type, is the result
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            report(call, "fails", short(f"{type(exc).__name__}: {exc}"))
        else:
            report(call, "works", note or "")
    # A client's teardown is no call of the table (librdkafka can abort in it after a failed
    # admin call): every result is out, so leave without it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# -- what a call needs before it runs, made with kafkacore's own client, so that a call is judged
# -- alone (a client whose create_topics fails still has its produce judged) ----------------------


def topic(bootstrap: str, name: str, partitions: int = 1, replication_factor: int = 1) -> str:
    """The topic ``name``, created if it is not there yet."""
    from kafkacore.admin import create_topics

    create_topics(bootstrap, {name: partitions}, replication_factor=replication_factor)
    return name


def filled(bootstrap: str, name: str, records: int = RECORDS) -> str:
    """The topic ``name`` (one partition) with ``records`` records ``v0``, ``v1``, ... in it."""
    from kafkacore import KafkaProducer

    topic(bootstrap, name)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futures = [producer.send(name, value=b"v%d" % i, partition=0) for i in range(records)]
        for f in futures:
            f.get(timeout=TIMEOUT_S)
    finally:
        producer.close()
    return name


def elect_topic(bootstrap: str, name: str) -> tuple[str, bool]:
    """The topic whose partition 0 elect_leaders elects, and whether its leader was moved off
    the preferred replica (the generator's cluster run) or not (a one-replica topic made here,
    where Kafka answers ELECTION_NOT_NEEDED)."""
    prepared = os.environ.get(ELECT_TOPIC_ENV)
    return (prepared, True) if prepared else (topic(bootstrap, name), False)


def check_elected(prepared: bool, errors: Mapping[object, object]) -> None:
    """Each partition's answer to a preferred election: no error where a leader had to move;
    no error or ELECTION_NOT_NEEDED where the preferred replica already led."""
    check(errors, "no partition in the answer")
    for tp, error in errors.items():
        text = "" if error is None else str(error)
        quiet = not text or text in ("0", "NoError", "None") or "Success" in text
        not_needed = re.search(r"ELECTION_NOT_NEEDED|ElectionNotNeeded|\b84\b", text, re.I)
        check(quiet or (not prepared and not_needed), f"{tp}: {text}")
