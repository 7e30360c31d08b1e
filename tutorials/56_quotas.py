"""Client quotas: one client held to its byte rate, the others untouched.

We start kafkacore's broker with short quota windows (3 of a second, so the tutorial is quick;
Kafka's default is 11), then:

1. give the client id ``slow`` a ``producer_byte_rate`` of 100 KB/s with AlterClientQuotas,
   written here with kafkacore's own codec on a plain socket so the request is in view;
2. read it back with DescribeClientQuotas;
3. let confluent-kafka's producer, as ``slow``, send 400 KB: the broker answers with throttle
   times (librdkafka reports them to ``throttle_cb``) and its sensor measures the rate held at
   the bound;
4. send as much from another client id: no quota applies, nothing is throttled, no sensor.

Every claim is checked with ``assert``; the rates are the broker's own measurements, not a
stopwatch.  The same quota from a shell, against any broker::

    kafka-configs.sh --bootstrap-server 127.0.0.1:9092 --alter --entity-type clients \\
        --entity-name slow --add-config producer_byte_rate=102400

Needs: confluent-kafka (the ``test`` extra).  See docs/broker/quotas.rst.
"""

import socket
import struct
import time
from typing import Any

from confluent_kafka import Producer

from kafkacore.admin import create_topics
from kafkacore.broker.server.broker_server import Broker
from kafkacore.errors import Errors
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

BOUND = 100 * 1024  # bytes per second


def call(address: tuple[str, int], api_key: ApiKey, version: int, body: dict[str, Any]) -> Any:
    """One request on a connection of its own; the response's body."""
    frame = b"".join(bytes(c) for c in codec.encode_request(api_key, version, 1, "tutorial",
                                                              body))
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        data = s.recv(size, socket.MSG_WAITALL)
    correlation_id, response = codec.decode_response(api_key, version, data)
    assert correlation_id == 1
    return response


def produce(bootstrap: str, topic: str, client_id: str) -> list[int]:
    """400 records of 1 KB as ``client_id``; the throttle times the producer heard, in ms
    (librdkafka gives them in seconds)."""
    heard: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id,
                         "batch.size": 16 * 1024, "linger.ms": 5,
                         "throttle_cb": lambda event: heard.append(round(event.throttle_time * 1000))})
    for _ in range(400):
        producer.produce(topic, b"x" * 1024)
        producer.poll(0)
    assert producer.flush(60) == 0, "every record acknowledged"
    deadline = time.monotonic() + 10  # librdkafka reports throttle times from poll
    while not any(heard) and client_id == "slow" and time.monotonic() < deadline:
        producer.poll(0.1)
    return [t for t in heard if t > 0]


def main() -> None:
    with Broker({"quota.window.num": "3"}) as broker:
        bootstrap = broker.bootstrap_servers
        host, port = bootstrap.rsplit(":", 1)
        address = (host, int(port))
        create_topics(bootstrap, {"metered": 1})

        # --- start alter
        answer = call(address, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [
            {"entity": [{"entity_type": "client-id", "entity_name": "slow"}],
             "ops": [{"key": "producer_byte_rate", "value": float(BOUND), "remove": False}]}]})
        [entry] = answer["entries"]
        assert entry["error_code"] == Errors.NONE, entry
        # --- end alter

        described = call(address, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"strict": False, "components": [
            {"entity_type": "client-id", "match_type": 0, "match": "slow"}]})  # 0: exact
        [quota] = described["entries"]
        values = {v["key"]: v["value"] for v in quota["values"]}
        print("quota of client id slow:", values)
        assert values == {"producer_byte_rate": float(BOUND)}

        # --- start throttled
        heard = produce(bootstrap, "metered", "slow")
        rate = broker.quotas.produce.rate("ANONYMOUS", "slow")
        assert rate is not None
        print(f"slow: 400 KB sent; {len(heard)} answers carried a throttle time "
              f"(up to {max(heard)} ms); the broker measured {rate / 1024:.0f} KB/s "
              f"against a bound of {BOUND // 1024} KB/s")
        assert heard, "the producer was told to wait"
        # The bound, plus at most one request: Kafka records a request, then throttles.
        assert rate <= BOUND * 1.25, rate
        # --- end throttled

        # --- start unthrottled
        other = produce(bootstrap, "metered", "fast")
        print(f"fast: 400 KB sent, {len(other)} throttle times; no quota, so no sensor: "
              f"{broker.quotas.produce.rate('ANONYMOUS', 'fast')}")
        assert other == [] and broker.quotas.produce.rate("ANONYMOUS", "fast") is None
        # --- end unthrottled


if __name__ == "__main__":
    main()
