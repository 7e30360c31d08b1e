"""Fresh topics for one test: a name nobody else uses, created over the wire."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kafkacore.admin import create_topics


def bootstrap_of(where: Any) -> str:
    """The address of a bootstrap string, a ``LocalBroker`` (``bootstrap``) or anything with
    ``bootstrap_servers`` (a ``Broker``, a ``Cluster``)."""
    if isinstance(where, str):
        return where
    return where.bootstrap if hasattr(where, "bootstrap") else where.bootstrap_servers


def new_topic(where: Any, partitions: int = 1, *, prefix: str = "t", replication_factor: int = 1,
              configs: Mapping[str, str] | None = None) -> str:
    """Create a uniquely named topic on ``where`` (see :func:`bootstrap_of`); returns its name."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    created = create_topics(bootstrap_of(where), {name: partitions},
                            replication_factor=replication_factor, configs=configs)
    assert created == {name: 0}, created
    return name


def new_replicated_topic(cluster: Any, partitions: int = 1, *, prefix: str = "r",
                         timeout_s: float = 30.0) -> str:
    """A topic on every broker of a 3-broker ``Cluster``: replication factor 3,
    ``min.insync.replicas=2``, returned once every partition's ISR is full and every broker
    knows the topic."""
    name = new_topic(cluster, partitions, prefix=prefix, replication_factor=3,
                     configs={"min.insync.replicas": "2"})
    for p in range(partitions):
        cluster.wait_for_isr(name, p, [1, 2, 3], timeout_s=timeout_s)
    cluster.wait_for_topic(name)
    return name
