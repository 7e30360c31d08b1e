"""Talk to a broker: negotiate versions, create a topic, read the cluster's metadata.

Run it from the repository's root:

    KAFKACORE_BOOTSTRAP=127.0.0.1:9092 python tutorials/10_talk_to_a_broker.py

Needs: a broker. Give its address in KAFKACORE_BOOTSTRAP, or set nothing and the script starts
kafkacore's own broker itself, on a free port (kafkacore.testing.given_or_local_broker; the
broker extra, pip install '.[broker]').
"""

# needs: broker

import contextlib

from kafkacore.admin import create_topics
from kafkacore.metadata import Metadata
from kafkacore.network.client import NetworkClient, clock_ms
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkacore.testing import given_or_local_broker

# The client closes (the stack) before the broker the script may have started stops.
with given_or_local_broker() as bootstrap, contextlib.ExitStack() as stack:
    print(f"broker at {bootstrap}")

    # 1. What goes on the wire first: an ApiVersions request, size-prefixed.
    request = b"".join(
        codec.encode_request(
            ApiKey.API_VERSIONS,
            4,
            1,
            "tutorial",
            {"client_software_name": "kafkacore", "client_software_version": "0.1.0"},
        )
    )
    frame = len(request).to_bytes(4, "big") + request
    print(f"ApiVersions v4 request, {len(frame)} bytes: {frame.hex(' ')}")
    assert frame[4:6] == b"\x00\x12"  # api key 18
    assert frame[6:8] == b"\x00\x04"  # version 4

    # 2. A client connects to the bootstrap address (node id -1 until metadata names it) and
    #    negotiates: for each API, the highest version both sides speak.
    metadata = Metadata()
    client = stack.enter_context(NetworkClient(bootstrap, metadata, client_id="tutorial"))
    client.await_ready(-1, 10_000)
    theirs = client.broker_api_versions(-1)
    print(f"\n{'api':<18}{'ours':>8}{'broker':>8}{'used':>6}")
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        if key not in theirs:  # e.g. SASL on a broker without SASL listeners: never sent there
            print(f"{ApiKey(key).name:<18}{f'{low}-{high}':>8}{'-':>8}{'-':>6}")
            continue
        b_low, b_high = theirs[key]
        used = client.api_version(-1, key)
        print(f"{ApiKey(key).name:<18}{f'{low}-{high}':>8}{f'{b_low}-{b_high}':>8}{used:>6}")
        assert used == min(high, b_high)

    # 3. Create a topic with our own CreateTopics codec (an existing topic is fine).
    topic = f"tutorial-{clock_ms()}"
    print(f"\ncreate_topics -> {create_topics(bootstrap, {topic: 3})}")

    # 4. Metadata: say we use the topic, ask for an update, and poll until the version moves.
    #    (In a producer the Sender thread polls; here we do it ourselves.)
    metadata.add_topic(topic)
    version = metadata.request_update()
    deadline = clock_ms() + 10_000
    while metadata.version <= version or not metadata.fetch().partition_count(topic):
        assert clock_ms() < deadline, "no metadata in 10 s"
        client.poll(100)
    cluster = metadata.fetch()
    print(f"metadata version {metadata.version}: cluster {cluster.cluster_id!r}")
    for node in cluster.nodes:
        print(f"  broker {node.node_id} at {node.host}:{node.port}")
    for p in cluster.partitions_for_topic(topic):
        print(
            f"  {topic}[{p.partition}] leader={p.leader} epoch={p.leader_epoch} "
            f"replicas={list(p.replicas)} isr={list(p.isr)}"
        )
    assert not cluster.is_bootstrap
    assert cluster.partition_count(topic) == 3
    assert all(cluster.leader_for(topic, p) is not None for p in range(3))

    # 5. A topic the broker does not know: the answer carries an error code, not partitions.
    metadata.allow_auto_topic_creation = False
    metadata.add_topic("no-such-topic-here")
    version = metadata.request_update()
    while metadata.version <= version:
        assert clock_ms() < deadline, "no metadata in 10 s"
        client.poll(100)
    errors = metadata.fetch().topic_errors
    print(f"\ntopic errors: {errors}  (3 = UNKNOWN_TOPIC_OR_PARTITION: keep waiting, maybe)")
    assert errors == {"no-such-topic-here": 3}
