"""The server-side partition assignors of the consumer group protocol (KIP-848): Kafka's
``UniformAssignor`` (``uniform``, the default) and ``RangeAssignor`` (``range``).

An assignor is a pure function of the group's members (each with its subscribed topics), the
subscribed topics' partition counts and the current target assignment; it returns each member's
new target.  The coordinator runs it whenever the group epoch moves past the assignment epoch.
See docs/broker/groups.rst.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kafkacore.broker.config.kafka_config import CONSUMER_GROUP_ASSIGNORS

#: member id -> topic id -> the partitions of that topic
Assignment = dict[uuid.UUID, frozenset[int]]


class UniformAssignor:
    """Spreads every subscribed partition so that members' counts differ by at most one where
    their subscriptions allow it, and keeps a partition where it was (sticky): fewer partitions
    move, so fewer are revoked."""

    name = "uniform"

    def assign(self, subscriptions: Mapping[str, frozenset[uuid.UUID]],
               partition_counts: Mapping[uuid.UUID, int],
               current: Mapping[str, Assignment]) -> dict[str, Assignment]:
        members = sorted(subscriptions)
        if not members:
            return {}
        partitions = [(t, p) for t in sorted(partition_counts, key=str)
                      for p in range(partition_counts[t])
                      if any(t in subscriptions[m] for m in members)]
        # Each member's fair share is ``floor`` partitions, ``extra`` of them one more; a
        # member keeps its current partitions up to its share.
        floor, extra = divmod(len(partitions), len(members))
        owned: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}
        surplus: dict[str, list[tuple[uuid.UUID, int]]] = {}
        taken = set()
        for m in members:
            mine = [(t, p) for t, ps in sorted(current.get(m, {}).items(),
                                               key=lambda kv: str(kv[0]))
                    if t in subscriptions[m] and t in partition_counts
                    for p in sorted(ps) if p < partition_counts[t]]
            owned[m], surplus[m] = mine[:floor], mine[floor:]
            taken.update(owned[m])
        for m in members:
            if extra and surplus[m]:
                owned[m].append(surplus[m][0])
                taken.add(surplus[m][0])
                extra -= 1
        # The others go, one at a time, to the least loaded member subscribed to their topic.
        for t, p in partitions:
            if (t, p) in taken:
                continue
            eligible = [m for m in members if t in subscriptions[m]]
            chosen = min(eligible, key=lambda m: (len(owned[m]), m))
            owned[chosen].append((t, p))
        return {m: _by_topic(owned[m]) for m in members}


class RangeAssignor:
    """Per topic, the members subscribed to it (sorted by member id) get consecutive ranges of
    its partitions, the first ones one more when the count does not divide: members subscribed
    to the same co-partitioned topics get the same partition numbers of each."""

    name = "range"

    def assign(self, subscriptions: Mapping[str, frozenset[uuid.UUID]],
               partition_counts: Mapping[uuid.UUID, int],
               current: Mapping[str, Assignment]) -> dict[str, Assignment]:
        owned: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in subscriptions}
        for t, count in partition_counts.items():
            members = sorted(m for m, topics in subscriptions.items() if t in topics)
            if not members:
                continue
            share, extra = divmod(count, len(members))
            start = 0
            for i, m in enumerate(members):
                n = share + (1 if i < extra else 0)
                owned[m].extend((t, p) for p in range(start, start + n))
                start += n
        return {m: _by_topic(tps) for m, tps in owned.items()}


def _by_topic(tps: list[tuple[uuid.UUID, int]]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for t, p in tps:
        out.setdefault(t, set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


#: ``group.consumer.assignors``' names -> the assignor; the first is the default.
_BY_NAME = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
ASSIGNORS = {name: _BY_NAME[name] for name in CONSUMER_GROUP_ASSIGNORS}
