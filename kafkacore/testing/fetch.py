"""Read back what a producer wrote, with our own Fetch codec: for tests, tutorials and demos.

kafkacore is a producer; this is the one place it fetches, to look at a partition's record batches
exactly as the broker stores them (headers, producer ids, sequence numbers) without a consumer.
"""

from __future__ import annotations

from kafkacore import errors
from kafkacore.admin import refresh_metadata
from kafkacore.metadata import Metadata
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.protocol.api_keys import ApiKey

__all__ = ["fetch_record_batches"]


def fetch_record_batches(
    bootstrap: str, topic: str, partition: int, *, timeout_ms: int = 30000
) -> list[bytes]:
    """The partition's record batches as the broker stores them, raw bytes, oldest first.

    For looking at what a producer wrote (headers, producer ids, sequence numbers): it reads
    with our own Fetch codec (v12, topics by name) from offset 0 until a fetch returns nothing.
    Decode the batches with :func:`kafkacore.core.iter_batches` or any other record reader.
    """
    from kafkacore.core.records import iter_batches

    deadline = clock_ms() + timeout_ms
    metadata = Metadata(allow_auto_topic_creation=False)
    metadata.add_topic(topic)
    found: list[bytes] = []
    with NetworkClient(bootstrap, metadata, request_timeout_ms=timeout_ms) as client:
        cluster = refresh_metadata(client, deadline)
        leader = cluster.leader_for(topic, partition)
        if leader is None:
            raise errors.UnknownTopicOrPartitionError(f"{topic}-{partition} has no leader")
        offset = 0
        while True:
            remaining = deadline - clock_ms()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(f"fetching {topic}-{partition} took too long")
            wanted = {"partition": partition, "fetch_offset": offset,
                      "partition_max_bytes": 4 << 20}
            body = {
                "max_wait_ms": 100,
                "min_bytes": 1,
                "max_bytes": 8 << 20,
                "topics": [{"topic": topic, "partitions": [wanted]}],
                "forgotten_topics_data": [],
            }
            client.await_ready(leader, remaining)
            done: list = []
            client.send(leader, ApiKey.FETCH, body, callback=done.append, api_version=12)
            while not done:
                if clock_ms() > deadline:
                    raise errors.KafkaTimeoutError(f"fetching {topic}-{partition} took too long")
                client.poll(100)
            if done[0].error is not None:
                raise done[0].error
            answer = done[0].body["responses"][0]["partitions"][0]
            if answer["error_code"]:
                raise errors.for_code(answer["error_code"])(f"fetching {topic}-{partition}")
            data = bytes(answer["records"] or b"")
            batches = list(iter_batches(data)) if data else []
            if not batches:
                return found
            # Split the fetched bytes back into one bytes object per batch.
            start = 0
            for batch in batches:
                end = start + 12 + batch.batch_length  # baseOffset + batchLength + the rest
                found.append(data[start:end])
                start = end
            offset = batches[-1].base_offset + batches[-1].last_offset_delta + 1
