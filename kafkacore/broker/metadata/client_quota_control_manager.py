"""``ClientQuotaControlManager``: the client quotas (KIP-546), as the controller keeps them.

A quota belongs to an **entity**: a user, a client id, or a user and a client id together; a
null name is the type's default (every user, every client id without its own quota).  Each
entity has values by key (``producer_byte_rate``, ``consumer_byte_rate``,
``request_percentage``).  Every change is a ``ClientQuotaRecord`` in the metadata log: one key of
one entity, set or removed, as in KRaft.  The controller keeps one of these, and so does each
broker (its image, replayed from the same records): AlterClientQuotas is checked here, and
DescribeClientQuotas answered from here.  See docs/broker/admin.rst.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from kafkacore import errors
from kafkacore.errors import Errors

USER = "user"
CLIENT_ID = "client-id"
#: the keys we know and whether each must be a whole number (Kafka's ``QuotaConfigs``: the byte
#: rates are LONG, the request percentage a DOUBLE)
QUOTA_KEYS = {"producer_byte_rate": True, "consumer_byte_rate": True,
              "request_percentage": False}

#: DescribeClientQuotas' match types (Kafka's ``ClientQuotaFilterComponent``)
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

#: an entity: its (type, name) pairs, sorted by type; a None name is the default
Entity = tuple[tuple[str, str | None], ...]


def entity_of(entity_data: Iterable[dict[str, Any]]) -> Entity:
    """An entity from its wire form (``[{entity_type, entity_name}]``), checked: a known type,
    each type once (Kafka's ``validateEntity``)."""
    pairs = [(e["entity_type"], e["entity_name"]) for e in entity_data]
    if not pairs:
        raise errors.InvalidRequestError("Invalid empty client quota entity")
    types = [t for t, _ in pairs]
    for t in types:
        if t not in (USER, CLIENT_ID):
            raise errors.InvalidRequestError(f"Unhandled client quota entity type: {t}")
    if len(set(types)) != len(types):
        raise errors.InvalidRequestError(f"Duplicate entity type in client quota entity: "
                                         f"{types}")
    return tuple(sorted(pairs))


def entity_data(entity: Entity) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


def check_value(key: str, value: float) -> None:
    """Kafka's checks of one quota value: a key it knows, a whole number for the byte rates,
    never negative."""
    whole = QUOTA_KEYS.get(key)
    if whole is None:
        raise errors.InvalidRequestError(f"Invalid configuration key {key}")
    if not math.isfinite(value) or value < 0:
        raise errors.InvalidRequestError(f"Invalid value {value} for configuration {key}: "
                                         "must be a non-negative number")
    if whole and value != int(value):
        raise errors.InvalidRequestError(f"Configuration {key} must be a Long value")


def client_quota_record(entity: Entity, key: str, value: float | None) -> dict[str, Any]:
    """A ``ClientQuotaRecord``: one key of one entity set, or removed (None)."""
    return {"type": "ClientQuotaRecord", "entity": entity_data(entity), "key": key,
            "value": value, "remove": value is None}


class ClientQuotaControlManager:
    """The quotas by entity; their changes checked and made as records."""

    def __init__(self) -> None:
        self.quotas: dict[Entity, dict[str, float]] = {}

    def alter(self, entries: list[dict[str, Any]], validate_only: bool
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """AlterClientQuotas: each entry's answer, and the records that make the accepted ones
        (none for ``validate_only``), already replayed here.  An entry is checked whole: an
        error changes nothing of it."""
        results, records = [], []
        for entry in entries:
            error: int = Errors.NONE
            message: str | None = None
            try:
                entity = entity_of(entry["entity"])
                keys = [op["key"] for op in entry["ops"]]
                if len(set(keys)) != len(keys):
                    raise errors.InvalidRequestError(f"Duplicate quota key in {keys}")
                for op in entry["ops"]:
                    if op["remove"]:
                        if op["key"] not in QUOTA_KEYS:
                            raise errors.InvalidRequestError(
                                f"Invalid configuration key {op['key']}")
                    else:
                        check_value(op["key"], op["value"])
                if not validate_only:
                    current = self.quotas.get(entity, {})
                    for op in entry["ops"]:
                        value = None if op["remove"] else float(op["value"])
                        if current.get(op["key"]) != value:
                            records.append(client_quota_record(entity, op["key"], value))
            except errors.BrokerResponseError as exc:
                error, message = exc.errno, exc.error_message
            results.append({"error_code": error, "error_message": message,
                            "entity": entry["entity"]})
        for record in records:
            self.replay(record)
        return results, records

    def replay(self, record: dict[str, Any]) -> None:
        """Apply a ClientQuotaRecord (from a change, or the log at start-up)."""
        entity: Entity = tuple(sorted((e["entity_type"], e["entity_name"])
                                      for e in record["entity"]))
        values = self.quotas.setdefault(entity, {})
        if record["remove"]:
            values.pop(record["key"], None)
            if not values:
                del self.quotas[entity]
        else:
            values[record["key"]] = record["value"]

    def records(self) -> list[dict[str, Any]]:
        """Every quota as records (a snapshot's part, or what an image must become)."""
        return [client_quota_record(entity, key, value)
                for entity, values in sorted(self.quotas.items(), key=lambda kv: repr(kv[0]))
                for key, value in sorted(values.items())]

    def describe(self, components: list[dict[str, Any]], strict: bool) -> list[dict[str, Any]]:
        """DescribeClientQuotas: the entities that match every component (and, ``strict``,
        have no other type), with their values.  A bad filter raises InvalidRequestError."""
        wanted: dict[str, tuple[int, str | None]] = {}
        for c in components:
            t = c["entity_type"]
            if t not in (USER, CLIENT_ID):
                raise errors.InvalidRequestError(f"Custom entity type {t!r} not supported")
            if t in wanted:
                raise errors.InvalidRequestError(f"Entity type {t} cannot appear more than "
                                                 "once in the filter")
            if c["match_type"] not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
                raise errors.InvalidRequestError(f"Unknown match type {c['match_type']}")
            if c["match_type"] == MATCH_EXACT and c["match"] is None:
                raise errors.InvalidRequestError("Request specified exact match with null "
                                                 "match name")
            wanted[t] = (c["match_type"], c["match"])
        found = []
        for entity, values in self.quotas.items():
            names = dict(entity)
            if strict and set(names) != set(wanted):
                continue
            if all(t in names and _matches(names[t], *m) for t, m in wanted.items()):
                found.append({"entity": entity_data(entity), "values": [
                    {"key": k, "value": v} for k, v in sorted(values.items())]})
        return found


def _matches(name: str | None, match_type: int, match: str | None) -> bool:
    if match_type == MATCH_EXACT:
        return name == match
    if match_type == MATCH_DEFAULT:
        return name is None
    return name is not None


__all__ = ["CLIENT_ID", "QUOTA_KEYS", "USER", "ClientQuotaControlManager", "Entity",
           "client_quota_record", "entity_of"]
