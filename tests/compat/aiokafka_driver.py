"""aiokafka: its AIOKafkaProducer, AIOKafkaConsumer and AIOKafkaAdminClient, call by call
(tests/compat/harness.py says what a driver does)."""

from __future__ import annotations

import asyncio
import functools

import harness
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.structs import OffsetAndMetadata
from harness import RECORDS, TIMEOUT_S, check

TIMEOUT_MS = int(TIMEOUT_S * 1000)
VALUES = [b"v%d" % i for i in range(RECORDS)]


def run(coroutine_function):
    """A call written as a coroutine, run to its end in a loop of its own (bounded)."""

    @functools.wraps(coroutine_function)
    def call(bootstrap, name):
        return asyncio.run(asyncio.wait_for(coroutine_function(bootstrap, name), TIMEOUT_S * 2))

    return call


class Admin:
    def __init__(self, bootstrap):
        self.client = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)

    async def __aenter__(self):
        await self.client.start()
        return self.client

    async def __aexit__(self, *exc):
        await self.client.close()


def consumer(bootstrap, group=None, **more):
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                            request_timeout_ms=TIMEOUT_MS, enable_auto_commit=False,
                            auto_offset_reset="earliest", **more)


async def read(c, n=RECORDS):
    got = []
    while len(got) < n:
        batches = await c.getmany(timeout_ms=100, max_records=n - len(got))
        got.extend(r.value for records in batches.values() for r in records)
    return got


@run
async def produce(bootstrap, name):
    harness.topic(bootstrap, name)
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=TIMEOUT_MS)
    await p.start()
    try:
        for v in VALUES:
            await p.send_and_wait(name, v, partition=0)
    finally:
        await p.stop()


@run
async def consume(bootstrap, name):
    harness.filled(bootstrap, name)
    c = consumer(bootstrap)
    await c.start()
    try:
        c.assign([TopicPartition(name, 0)])
        got = await read(c)
    finally:
        await c.stop()
    check(got == VALUES, f"read back {got}")


@run
async def group_consume(bootstrap, name):
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name)
    await c.start()
    try:
        c.subscribe([name])
        got = await read(c)
        check(len(got) == RECORDS, f"read {len(got)} of {RECORDS} records")
        await c.commit()
        committed = await c.committed(TopicPartition(name, 0))
    finally:
        await c.stop()
    check(committed == RECORDS, f"committed offset {committed}")


async def committed_group(bootstrap, name, offset=5):
    """A group with no members that committed ``offset`` for partition 0 of topic ``name``."""
    harness.filled(bootstrap, name)
    c = consumer(bootstrap, name)
    await c.start()
    try:
        c.assign([TopicPartition(name, 0)])
        await c.commit({TopicPartition(name, 0): OffsetAndMetadata(offset, "")})
    finally:
        await c.stop()


@run
async def metadata(bootstrap, name):
    harness.topic(bootstrap, name)
    async with Admin(bootstrap) as a:
        check(name in await a.list_topics(), "topic not listed")


def _no_errors(response):
    """The error codes anywhere in a raw response object: none may be set."""
    codes = []

    def walk(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k == "error_code" and v:
                    codes.append(obj)
                walk(v)
        elif isinstance(obj, list | tuple):
            for v in obj:
                walk(v)

    walk(response.to_object() if hasattr(response, "to_object") else response)
    check(not codes, f"answered {codes}")


@run
async def create_topics(bootstrap, name):
    async with Admin(bootstrap) as a:
        _no_errors(await a.create_topics([NewTopic(name, 2, 1)], timeout_ms=TIMEOUT_MS))
        [described] = await a.describe_topics([name])
    check(len(described["partitions"]) == 2, "created topic has not 2 partitions")


@run
async def delete_topics(bootstrap, name):
    harness.topic(bootstrap, name)
    async with Admin(bootstrap) as a:
        _no_errors(await a.delete_topics([name], timeout_ms=TIMEOUT_MS))


@run
async def create_partitions(bootstrap, name):
    harness.topic(bootstrap, name)
    async with Admin(bootstrap) as a:
        _no_errors(await a.create_partitions({name: NewPartitions(3)}, timeout_ms=TIMEOUT_MS))


async def _retention(a, name):
    [response] = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    _no_errors(response)
    [resource] = response.to_object()["resources"]
    return {c["config_names"]: c["config_value"] for c in resource["config_entries"]}["retention.ms"]


@run
async def describe_configs(bootstrap, name):
    harness.topic(bootstrap, name)
    async with Admin(bootstrap) as a:
        check(await _retention(a, name) == "604800000", "retention.ms is not Kafka's default")


@run
async def alter_configs(bootstrap, name):
    harness.topic(bootstrap, name)
    async with Admin(bootstrap) as a:
        for response in await a.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name, {"retention.ms": "23456"})]):
            _no_errors(response)
        check(await _retention(a, name) == "23456", "retention.ms not changed")


@run
async def delete_records(bootstrap, name):
    harness.filled(bootstrap, name)
    tp = TopicPartition(name, 0)
    async with Admin(bootstrap) as a:
        result = await a.delete_records({tp: RecordsToDelete(5)}, timeout_ms=TIMEOUT_MS)
    check(result[tp] == 5, f"low watermark {result}")


@run
async def list_offsets(bootstrap, name):
    harness.filled(bootstrap, name)
    tp = TopicPartition(name, 0)
    c = consumer(bootstrap)
    await c.start()
    try:
        ends = await c.end_offsets([tp])
    finally:
        await c.stop()
    check(ends[tp] == RECORDS, f"end offsets {ends}")


@run
async def list_groups(bootstrap, name):
    await committed_group(bootstrap, name)
    async with Admin(bootstrap) as a:
        listed = await a.list_consumer_groups()
    check(name in {g[0] for g in listed}, f"listed {listed}")


@run
async def describe_groups(bootstrap, name):
    await committed_group(bootstrap, name)
    async with Admin(bootstrap) as a:
        [response] = await a.describe_consumer_groups([name])
    _no_errors(response)
    [group] = response.to_object()["groups"]
    check(group["group"] == name and group["state"] == "Empty", f"described {group}")


@run
async def list_group_offsets(bootstrap, name):
    await committed_group(bootstrap, name)
    async with Admin(bootstrap) as a:
        offsets = await a.list_consumer_group_offsets(name)
    check(offsets[TopicPartition(name, 0)].offset == 5, f"offsets {offsets}")


@run
async def describe_cluster(bootstrap, name):
    async with Admin(bootstrap) as a:
        cluster = await a.describe_cluster()
    check(cluster["brokers"] and cluster["controller_id"] is not None, f"described {cluster}")
    return "reads Metadata"


@run
async def transactions(bootstrap, name):
    harness.topic(bootstrap, name)
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=name,
                         request_timeout_ms=TIMEOUT_MS)
    await p.start()
    try:
        async with p.transaction():
            for v in VALUES:
                await p.send(name, v, partition=0)
    finally:
        await p.stop()
    c = consumer(bootstrap, isolation_level="read_committed")
    await c.start()
    try:
        c.assign([TopicPartition(name, 0)])
        got = await read(c)
    finally:
        await c.stop()
    check(got == VALUES, f"read back {got}")


NO_CALL = "no call"

if __name__ == "__main__":
    harness.main({
        "consumer_group_consume": "no call (the classic group protocol only)",
        "produce": produce, "consume": consume, "group_consume": group_consume,
        "metadata": metadata, "create_topics": create_topics, "delete_topics": delete_topics,
        "create_partitions": create_partitions, "describe_configs": describe_configs,
        "incremental_alter_configs": "no call (aiokafka 0.14 sends AlterConfigs only)",
        "alter_configs": alter_configs, "delete_records": delete_records,
        "list_offsets": list_offsets, "list_groups": list_groups,
        "describe_groups": describe_groups, "list_group_offsets": list_group_offsets,
        "alter_group_offsets": "no call (a consumer's commit() only)",
        "offset_delete": NO_CALL, "delete_groups": NO_CALL,
        "describe_cluster": describe_cluster, "describe_topic_partitions": NO_CALL,
        "describe_log_dirs": NO_CALL, "elect_leaders": NO_CALL, "acls": NO_CALL,
        "transactions": transactions,
    })
