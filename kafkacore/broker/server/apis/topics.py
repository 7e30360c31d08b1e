"""CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders, AlterPartitionReassignments and
ListPartitionReassignments: the requests that change which topics and partitions there are, and
who leads them.

In a cluster these are the controller's: after this broker's authorization checks, the request
goes to it as it came (:meth:`~kafkacore.broker.server.apis.base.KafkaApisBase.forward_to_controller`).
Alone, this broker makes the change itself, with the controller's checks
(:mod:`kafkacore.broker.controller.replication_control_manager`).  See docs/broker/apis.rst.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.config_source import ConfigSource
from kafkacore.broker.controller.controller_apis import (
    create_topic_result,
    election_results,
    reassignment_results,
)
from kafkacore.broker.controller.replication_control_manager import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    EXCESSIVE_BATCH_MESSAGE,
    EXCESSIVE_PARTITIONS_MESSAGE,
    MAX_PARTITIONS_PER_BATCH,
    MAX_RECORDS_PER_USER_OP,
    create_partitions_error,
    manual_assignment_error,
    partitions_added,
    total_partitions_requested,
)
from kafkacore.broker.log.log_manager import NewLog
from kafkacore.broker.metadata.metadata_cache import validate_topic_name
from kafkacore.broker.network.request_channel import Request
from kafkacore.broker.security.authorizer.acl import AclOperation, ResourceType
from kafkacore.broker.server.apis.base import ZERO_UUID, KafkaApisBase, body_of
from kafkacore.errors import Errors


class TopicApis(KafkaApisBase):
    """Kafka's ``handleCreateTopicsRequest``, ``handleDeleteTopicsRequest``,
    ``handleCreatePartitionsRequest``, ``handleElectLeaders``,
    ``handleAlterPartitionReassignmentsRequest`` and ``handleListPartitionReassignmentsRequest``."""

    def partition_cap_error(self, adding: int) -> str | None:
        """Why this broker, alone, may not take ``adding`` more partitions (None: it may):
        ``max.partitions.per.broker``, and the logs its descriptors allow."""
        held = self.log_manager.log_count
        cap = self.config["max.partitions.per.broker"]
        if held + adding > cap:
            return (f"Broker {self.broker_id} would hold {held + adding} partitions, "
                    f"more than max.partitions.per.broker={cap}.")
        if held + adding > self.log_manager.max_logs:
            return (f"Broker {self.broker_id} would hold {held + adding} partitions, "
                    f"more than its file descriptor limit allows ({self.log_manager.max_logs}).")
        return None

    # -- CreateTopics ----------------------------------------------------------------------------

    def handle_create_topics_request(self, request: Request) -> None:
        body = body_of(request)
        refused = [{"name": t["name"], "topic_id": ZERO_UUID,
                    "error_code": Errors.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
                    "num_partitions": -1, "replication_factor": -1, "configs": None}
                   for t in body["topics"] if not self.may_create_topic(request, t["name"])]
        if refused:
            body["topics"] = [t for t in body["topics"]
                              if t["name"] not in {r["name"] for r in refused}]
        if self.forward_to_controller(request, ("topics", refused)):
            return
        if total_partitions_requested(body["topics"], self.config["num.partitions"]) \
                > MAX_PARTITIONS_PER_BATCH:  # as the controller of a cluster refuses it
            self.respond(request, {"throttle_time_ms": 0, "topics": [*refused, *(
                create_topic_result(t["name"], Errors.POLICY_VIOLATION,
                                    EXCESSIVE_PARTITIONS_MESSAGE) for t in body["topics"])]})
            return
        counts = Counter(t["name"] for t in body["topics"])
        results = list(refused)
        new_logs: list[NewLog] = []
        # The request's topics are one batch of metadata records: one append, one fsync; then
        # their logs, created side by side.
        with self.metadata_cache.batch():
            for t in body["topics"]:
                results.append(self._create_one_topic(t, counts[t["name"]] > 1,
                                                      body.get("validate_only", False), new_logs))
        self.log_manager.get_or_create_logs(new_logs)
        self.respond(request, {"throttle_time_ms": 0, "topics": results})

    def _create_one_topic(self, t: dict[str, Any], repeated: bool, validate_only: bool,
                          new_logs: list[NewLog]) -> dict[str, Any]:
        """One topic's answer; its metadata recorded, its logs added to ``new_logs``."""
        name = t["name"]
        result: dict[str, Any] = {
            "name": name, "topic_id": ZERO_UUID, "error_code": Errors.NONE, "error_message": None,
            "num_partitions": -1, "replication_factor": -1, "configs": None,
        }

        def fail(code: int, message: str) -> dict[str, Any]:
            result.update(error_code=code, error_message=message)
            return result

        if repeated:
            return fail(Errors.INVALID_REQUEST,
                        f"topic {name!r} appears more than once in the request")
        try:
            validate_topic_name(name)
        except errors.InvalidTopicError as exc:
            return fail(Errors.INVALID_TOPIC_EXCEPTION, str(exc))
        if self.metadata_cache.get(name) is not None:
            return fail(Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        assignments = t["assignments"]
        if assignments:
            if t["num_partitions"] != -1 or t["replication_factor"] != -1:
                return fail(Errors.INVALID_REQUEST, "assignments come with num_partitions and "
                                             "replication_factor -1")
            indexes = sorted(a["partition_index"] for a in assignments)
            if indexes != list(range(len(indexes))):
                return fail(Errors.INVALID_PARTITIONS, "assigned partitions must be 0..n-1")
            if any(a["broker_ids"] != [self.broker_id] for a in assignments):
                return fail(Errors.INVALID_REPLICATION_FACTOR,
                            f"this cluster has one broker, {self.broker_id}")
            partitions = len(indexes)
        else:
            partitions = t["num_partitions"]
            if partitions == -1:
                partitions = self.config["num.partitions"]
            if partitions <= 0:
                return fail(Errors.INVALID_PARTITIONS, f"number of partitions must be positive, "
                                                f"got {partitions}")
            rf = t["replication_factor"]
            if rf not in (-1, 1):
                return fail(Errors.INVALID_REPLICATION_FACTOR,
                            f"replication factor {rf} is larger than the 1 broker available")
        configs: dict[str, str] = {}
        for c in t["configs"]:
            if c["value"] is not None:
                configs[c["name"]] = c["value"]
        try:
            config = self.topic_config(configs)
        except errors.InvalidConfigError as exc:
            return fail(Errors.INVALID_CONFIG, str(exc))
        over = self.partition_cap_error(partitions + len(new_logs))
        if over is not None:
            return fail(Errors.POLICY_VIOLATION, over)
        if not validate_only:
            meta, created = self.metadata_cache.add_topic(name, partitions, configs)
            if not created:  # created by another request meanwhile
                return fail(Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            new_logs.extend((name, p, config, meta.topic_id) for p in range(partitions))
            result["topic_id"] = meta.topic_id
        result.update(
            num_partitions=partitions,
            replication_factor=1,
            configs=[
                {"name": k, "value": v, "read_only": False,
                 "config_source": ConfigSource.TOPIC_CONFIG if k in configs
                 else ConfigSource.DEFAULT_CONFIG,
                 "is_sensitive": False}
                for k, v in config.to_properties().items()
            ],
        )
        return result

    # -- DeleteTopics ----------------------------------------------------------------------------

    def handle_delete_topics_request(self, request: Request) -> None:
        """Forget the topic (persisted first, so a crash cannot bring it back), then delete its
        partitions' logs.  v6 names a topic by name or by id; DELETE on the topic."""
        body = body_of(request)
        asked = [(t["name"], t["topic_id"]) for t in body["topics"]] \
            if request.api_version >= 6 else [(n, ZERO_UUID) for n in body["topic_names"]]
        results: list[dict[str, Any]] = []
        names: list[str] = []
        for name, topic_id in asked:
            if name is None:
                name = self.metadata_cache.name_of(topic_id)
                if name is None:
                    results.append(self._deleted(None, topic_id, Errors.UNKNOWN_TOPIC_ID,
                                                 f"no topic has id {topic_id}"))
                    continue
            if not self.authorize_topic(request, AclOperation.DELETE, name):
                results.append(self._deleted(name, topic_id, Errors.TOPIC_AUTHORIZATION_FAILED))
                continue
            names.append(name)
        if request.api_version >= 6:
            body["topics"] = [{"name": n, "topic_id": self.topic_id(n)} for n in names]
        else:
            body["topic_names"] = names
        if self.forward_to_controller(request, ("responses", results)):
            return
        for name in names:
            topic_id = self.topic_id(name)
            meta = self.metadata_cache.remove_topic(name)
            if meta is None:
                results.append(self._deleted(name, topic_id, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                             f"topic {name!r} does not exist"))
                continue
            for p in range(meta.partitions):
                self.log_manager.delete_log(name, p)
            results.append(self._deleted(name, topic_id, Errors.NONE))
        self.respond(request, {"throttle_time_ms": 0, "responses": results})

    @staticmethod
    def _deleted(name: str | None, topic_id: uuid.UUID, error: int,
                 message: str | None = None) -> dict[str, Any]:
        """One DeleteTopics answer."""
        return {"name": name, "topic_id": topic_id, "error_code": error, "error_message": message}

    # -- CreatePartitions ------------------------------------------------------------------------

    def handle_create_partitions_request(self, request: Request) -> None:
        """Add partitions to topics (never remove them: keys would change partition).  Kafka's
        checks: ALTER on the topic, a topic named once, then what the controller checks; in a
        cluster the controller adds them (forwarded), alone this broker does."""
        body = body_of(request)
        results: list[dict[str, Any]] = []
        counts = Counter(t["name"] for t in body["topics"])
        for t in body["topics"]:
            if counts[t["name"]] > 1:
                results.append({"name": t["name"], "error_code": Errors.INVALID_REQUEST,
                                "error_message": "Duplicate topic in request."})
            elif not self.authorize_topic(request, AclOperation.ALTER, t["name"]):
                results.append({"name": t["name"], "error_code": Errors.TOPIC_AUTHORIZATION_FAILED,
                                "error_message": None})
        refused = {r["name"] for r in results}
        body["topics"] = [t for t in body["topics"] if t["name"] not in refused]
        if self.forward_to_controller(request, ("results", results)):
            return
        current = {t["name"]: meta.partitions for t in body["topics"]
                   if (meta := self.metadata_cache.get(t["name"])) is not None}
        if partitions_added(current, body["topics"]) > MAX_RECORDS_PER_USER_OP:
            self.respond(request, {"throttle_time_ms": 0, "results": [*results, *(
                {"name": t["name"], "error_code": Errors.POLICY_VIOLATION,
                 "error_message": EXCESSIVE_BATCH_MESSAGE} for t in body["topics"])]})
            return
        for t in body["topics"]:
            error, message = self._create_partitions(t, body["validate_only"])
            results.append({"name": t["name"], "error_code": error, "error_message": message})
        self.respond(request, {"throttle_time_ms": 0, "results": results})

    def _create_partitions(self, t: dict[str, Any], validate_only: bool) -> tuple[int, str | None]:
        meta = self.metadata_cache.get(t["name"])
        if meta is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {t['name']!r} does not exist"
        error, message = create_partitions_error(meta.partitions, t["count"], t["assignments"])
        if error == Errors.NONE and t["assignments"] is not None:
            # Alone, every replica is this broker.
            error, message = manual_assignment_error(
                [a["broker_ids"] for a in t["assignments"]], {self.broker_id},
                {self.broker_id}, 1)
        if error == Errors.NONE:
            over = self.partition_cap_error(t["count"] - meta.partitions)
            if over is not None:
                error, message = Errors.POLICY_VIOLATION, over
        if error != Errors.NONE or validate_only:
            return error, message
        config = self.topic_config(meta.configs)
        for p in range(meta.partitions, t["count"]):
            self.log_manager.get_or_create_log(t["name"], p, config, meta.topic_id)
        self.metadata_cache.grow_topic(t["name"], t["count"])
        return Errors.NONE, None

    # -- ElectLeaders ----------------------------------------------------------------------------

    def handle_elect_leaders_request(self, request: Request) -> None:
        """ALTER on the cluster; the controller elects (forwarded).  Alone, this broker leads
        every partition already: no election is needed."""
        body = body_of(request)
        asked = body["topic_partitions"]
        wanted = [] if asked is None else [(t["topic"], p) for t in asked
                                           for p in t["partitions"]]
        error = Errors.NONE
        if not self.authorize(request, AclOperation.ALTER, ResourceType.CLUSTER):
            error = Errors.CLUSTER_AUTHORIZATION_FAILED
        elif body.get("election_type", ELECTION_PREFERRED) not in (ELECTION_PREFERRED,
                                                                   ELECTION_UNCLEAN):
            error = Errors.INVALID_REQUEST
        if error != Errors.NONE:
            self.respond(request, {"throttle_time_ms": 0, "error_code": error,
                                   "replica_election_results": election_results(
                                       dict.fromkeys(wanted, (error, None)))})
            return
        if self.forward_to_controller(request):
            return
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "replica_election_results": election_results({
                                   tp: (Errors.ELECTION_NOT_NEEDED, None)
                                   if self.partition_exists(*tp) else
                                   (Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
                                   for tp in wanted})})

    # -- AlterPartitionReassignments, ListPartitionReassignments (KIP-455) -----------------------

    def handle_alter_partition_reassignments_request(self, request: Request) -> None:
        """ALTER on the cluster; the controller moves the replicas (forwarded).  Alone, the
        only assignment there can be is this broker."""
        body = body_of(request)
        moves = [(t["name"], p["partition_index"], p["replicas"])
                 for t in body["topics"] for p in t["partitions"]]
        if not self.authorize(request, AclOperation.ALTER, ResourceType.CLUSTER):
            self.respond(request, {**reassignment_results(dict.fromkeys(
                [(n, i) for n, i, _ in moves], (Errors.CLUSTER_AUTHORIZATION_FAILED, None))),
                "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED})
            return
        if self.forward_to_controller(request):
            return
        me = [self.broker_id]
        self.respond(request, reassignment_results({
            (name, index): (Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            if not self.partition_exists(name, index) else
            (Errors.NO_REASSIGNMENT_IN_PROGRESS, None) if target is None else
            (Errors.NONE, None) if target == me else
            (Errors.INVALID_REPLICA_ASSIGNMENT, f"this cluster has one broker, {me[0]}")
            for name, index, target in moves}))

    def handle_list_partition_reassignments_request(self, request: Request) -> None:
        """DESCRIBE on the cluster; the controller knows the moves under way."""
        if not self.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER):
            self.send_error_response(request, Errors.CLUSTER_AUTHORIZATION_FAILED)
            return
        if self.forward_to_controller(request):
            return
        self.respond(request, {"throttle_time_ms": 0, "error_code": Errors.NONE,
                               "error_message": None, "topics": []})


__all__ = ["TopicApis"]
