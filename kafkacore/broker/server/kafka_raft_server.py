"""``KafkaRaftServer``: a combined node of a quorum, a voter and a broker in one process.

``process.roles=broker,controller`` with ``controller.quorum.voters`` naming several nodes is
Kafka's combined mode: each process is one of the quorum's controllers and one of the cluster's
brokers.  Here the process runs a :class:`ControllerServer` (the voter, on the controller
listener that ``controller.quorum.voters`` names for this node) and a :class:`Broker` (on the
other listeners), and the broker reaches the quorum as every broker does, through the voters'
addresses (``controller.quorum.bootstrap.servers``): its own controller when that one is
active, another when not.  A combined node whose voters list only itself, or none, stays a
broker that is its own controller (``Broker`` alone).  See docs/broker/quorum.rst.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.controller.controller_server import ControllerServer
from kafkacore.broker.controller.kafka_raft_manager import parse_voters
from kafkacore.broker.server.broker_server import Broker
from kafkacore.errors import ConfigError, IllegalStateError

log = logging.getLogger(__name__)

#: the controller's directory inside the first log dir: its metadata log, its quorum-state and
#: its Raft log (a name that is no ``topic-partition``, so the broker's LogManager passes it by)
CONTROLLER_DIR = "__controller"

#: what the broker half is not given: the controller half's own settings
_CONTROLLER_ONLY = ("controller.quorum.voters", "controller.quorum.bootstrap.servers")
#: what the controller half is not given: the broker's listeners and what names them
_BROKER_ONLY = ("inter.broker.listener.name", "advertised.listeners",
                "controller.quorum.bootstrap.servers")


def is_combined_quorum(values: Mapping[str, Any]) -> bool:
    """Whether these settings ask for a combined node of a quorum of several voters."""
    roles = {r.strip() for r in str(values.get("process.roles", "")).split(",") if r.strip()}
    if roles != {"broker", "controller"}:
        return False
    try:
        return len(parse_voters(str(values.get("controller.quorum.voters", "")))) > 1
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def split_roles(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the controller's settings, the broker's) of a combined node: each half gets the
    listeners of its role and its own directory; everything else is shared."""
    given = dict(values)
    try:
        node_id = int(given.get("node.id", given.get("broker.id", -1)))
        voters = parse_voters(str(given.get("controller.quorum.voters", "")))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if node_id not in voters:
        raise ConfigError(f"controller.quorum.voters: node.id {node_id} is not a voter "
                          f"({sorted(voters)}); a combined node is one of the quorum")
    names = {n.strip().upper()
             for n in str(given.get("controller.listener.names", "CONTROLLER")).split(",")
             if n.strip()}
    listeners = [item.strip() for item in str(given.get("listeners", "")).split(",")
                 if item.strip()]
    mine = [item for item in listeners if item.partition("://")[0].strip().upper() in names]
    theirs = [item for item in listeners if item not in mine]
    if not mine:
        raise ConfigError(f"listeners: no controller listener ({', '.join(sorted(names))}) "
                          f"for the voter of node {node_id}")
    if not theirs:
        raise ConfigError("listeners: only controller listeners are given; the broker needs "
                          "one for clients")
    log_dirs = [d.strip() for d in str(given.get("log.dirs", "")).split(",") if d.strip()]
    if not log_dirs:
        raise ConfigError("log.dirs: a combined node of a quorum needs its directories named "
                          "(the voter's state must outlive the process)")
    controller = {k: v for k, v in given.items() if k not in _BROKER_ONLY}
    controller.update({"process.roles": "controller", "listeners": ",".join(mine),
                       "log.dirs": os.path.join(log_dirs[0], CONTROLLER_DIR)})
    broker = {k: v for k, v in given.items() if k not in _CONTROLLER_ONLY}
    advertised = [item.strip() for item in str(given.get("advertised.listeners", "")).split(",")
                  if item.strip() and item.partition("://")[0].strip().upper() not in names]
    broker.update({"process.roles": "broker", "listeners": ",".join(theirs),
                   "controller.quorum.bootstrap.servers": ",".join(
                       f"{host}:{port}" for host, port in voters.values())})
    if advertised:
        broker["advertised.listeners"] = ",".join(advertised)
    else:
        broker.pop("advertised.listeners", None)
    return controller, broker


class KafkaRaftServer:
    """A voter and a broker in one process (Kafka's ``KafkaRaftServer`` in combined mode):
    the controller starts first (it listens before the broker asks the quorum for its
    registration), and stops last."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        controller, broker = split_roles(values)
        self.controller = ControllerServer(BrokerConfig(controller))
        self.broker = Broker(BrokerConfig(broker))
        self.config = self.broker.config
        self._started = False

    @property
    def bootstrap_servers(self) -> str:
        """The broker's address (its first listener): what clients are given."""
        return self.broker.bootstrap_servers

    def start(self) -> KafkaRaftServer:
        self.controller.start()
        try:
            self.broker.start()
        except BaseException:
            self.controller.stop()
            raise
        self._started = True
        log.info("combined node %d: voter on %s, broker on %s", self.broker.broker_id,
                 self.controller.bootstrap_servers, self.broker.bootstrap_servers)
        return self

    def stop(self) -> None:
        if not self._started:
            raise IllegalStateError("the combined node has not started")
        self._started = False
        try:
            self.broker.stop()  # a controlled shutdown asks the quorum, which still has us
        finally:
            self.controller.stop()

    def __enter__(self) -> KafkaRaftServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
