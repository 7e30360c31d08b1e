"""BrokerConfig: the broker's settings, by Kafka's names and with Kafka's defaults (``KafkaConfig``).

Settings arrive as a dict of strings (the way ``server.properties`` or ``--config key=value``
gives them) or of Python values; each is parsed once here, and a bad one raises
:class:`~kafkacore.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.kafka_broker_settings import KAFKA_BROKER_SETTINGS, SYNONYMS


def _int(low: int | None = None) -> Callable[[str, Any], int]:
    def parse(key: str, value: Any) -> int:
        if isinstance(value, bool):
            raise errors.ConfigError(f"{key}: expected an integer, got {value!r}")
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise errors.ConfigError(f"{key}: expected an integer, got {value!r}") from None
        if low is not None and number < low:
            raise errors.ConfigError(f"{key}: must be at least {low}, got {number}")
        return number

    return parse


def _float(low: float, high: float) -> Callable[[str, Any], float]:
    def parse(key: str, value: Any) -> float:
        if isinstance(value, bool):
            raise errors.ConfigError(f"{key}: expected a number, got {value!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise errors.ConfigError(f"{key}: expected a number, got {value!r}") from None
        if not low <= number <= high:
            raise errors.ConfigError(f"{key}: must be in [{low}, {high}], got {number}")
        return number

    return parse


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise errors.ConfigError(f"{key}: expected true or false, got {value!r}")


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise errors.ConfigError(f"{key}: expected a string, got {value!r}")
    return value


def _overrides(key: str, value: Any) -> dict[str, int]:
    """``"host:n,host:n"`` -> {host: n} (``max.connections.per.ip.overrides``)."""
    if isinstance(value, Mapping):
        items = [(str(h), v) for h, v in value.items()]
    else:
        items = []
        for part in _str(key, value).split(","):
            part = part.strip()
            if not part:
                continue
            host, sep, number = part.rpartition(":")
            if not sep or not host:
                raise errors.ConfigError(f"{key}: expected host:count, got {part!r}")
            items.append((host.strip(), number))
    return {host: _int(0)(key, n) for host, n in items}


class Password(str):
    """A secret setting's value: a ``str`` whose ``repr`` hides it (Kafka's ``Password``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "[hidden]"

    def value(self) -> str:
        return str.__str__(self)


def _secret(key: str, value: Any) -> Password:
    return Password(_str(key, value))


def _pem(key: str, value: Any) -> str:
    if _str(key, value).upper() != "PEM":
        raise errors.ConfigError(f"{key}: only PEM stores are supported, got {value!r}")
    return "PEM"


def _choice(*choices: str) -> Callable[[str, Any], str]:
    def parse(key: str, value: Any) -> str:
        text = _str(key, value).strip().lower()
        if text not in choices:
            raise errors.ConfigError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
        return text

    return parse


@dataclass(frozen=True)
class _Setting:
    default: Any
    parse: Callable[[str, Any], Any]
    doc: str


#: The ``authorizer.class.name`` that switches ACLs on (Kafka 4's KRaft authorizer).
STANDARD_AUTHORIZER_CLASS = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

#: Every setting the broker knows: name -> (default, parser, meaning).  Names and defaults are
#: Kafka's (``KafkaConfig`` / ``ServerLogConfigs`` / ``SocketServerConfigs``).
SETTINGS: dict[str, _Setting] = {
    "node.id": _Setting(1, _int(0), "this broker's id (broker.id is the older name)"),
    "cluster.id": _Setting("kafkacore-cluster", _str, "the cluster id sent in Metadata"),
    "listeners": _Setting("PLAINTEXT://127.0.0.1:0", _str, "where to listen; port 0 = a free one"),
    "advertised.listeners": _Setting("", _str, "the address given to clients (default: listeners)"),
    "log.dirs": _Setting("", _str, "comma-separated data directories (default: a temp dir)"),
    "num.partitions": _Setting(1, _int(1), "partitions of an auto-created topic"),
    "auto.create.topics.enable": _Setting(True, _bool, "create a topic on first Metadata/Produce"),
    "default.replication.factor": _Setting(1, _int(1), "replication factor of new topics"),
    "num.network.threads": _Setting(3, _int(1), "Processor threads"),
    "num.io.threads": _Setting(8, _int(1), "KafkaRequestHandler threads"),
    "socket.request.max.bytes": _Setting(104857600, _int(1), "largest request frame accepted"),
    "socket.send.buffer.bytes": _Setting(102400, _int(-1), "SO_SNDBUF (-1: the OS default)"),
    "socket.receive.buffer.bytes": _Setting(102400, _int(-1), "SO_RCVBUF (-1: the OS default)"),
    "connections.max.idle.ms": _Setting(600000, _int(1), "close connections idle this long"),
    "queued.max.requests": _Setting(500, _int(1), "bound of the shared request queue"),
    # Kafka's default is -1 (no bound: the JVM heap bounds it); a Python process has no heap
    # limit, so ours is bounded, at twice socket.request.max.bytes (docs/broker/network.rst).
    "queued.max.request.bytes": _Setting(
        209715200, _int(-1), "bytes of requests being read or handled, all connections (-1: no bound)"),
    "max.connections": _Setting(2147483647, _int(0), "connections accepted at most, in all"),
    "max.connections.per.ip": _Setting(2147483647, _int(0), "connections from one address"),
    "max.connections.per.ip.overrides": _Setting({}, _overrides, "host:n,host:n exceptions"),
    "quota.window.num": _Setting(11, _int(1), "samples of a client quota's rate sensor"),
    "quota.window.size.seconds": _Setting(1, _int(1), "seconds of each such sample"),
    "log.flush.interval.messages": _Setting(9223372036854775807, _int(1), "fsync every N"),
    "log.flush.interval.ms": _Setting(
        None, _int(0), "fsync at least this often (unset: log.flush.scheduler.interval.ms)"),
    "log.segment.bytes": _Setting(1073741824, _int(14), "roll a segment at this size"),
    "log.retention.ms": _Setting(604800000, _int(-1), "delete segments older than this"),
    "log.retention.bytes": _Setting(-1, _int(-1), "delete the oldest segments beyond this size"),
    "log.index.interval.bytes": _Setting(4096, _int(0), "bytes between offset index entries"),
    # -- the log's periodic tasks, run by the KafkaScheduler (docs/broker/log.rst) --
    "background.threads": _Setting(10, _int(1), "threads of the KafkaScheduler"),
    "log.retention.check.interval.ms": _Setting(
        300000, _int(1), "how often retention deletes old segments"),
    "log.flush.scheduler.interval.ms": _Setting(
        9223372036854775807, _int(1), "how often each log's flush.ms is checked"),
    "log.flush.offset.checkpoint.interval.ms": _Setting(
        60000, _int(0), "how often recovery points are written (0: once)"),
    "log.flush.start.offset.checkpoint.interval.ms": _Setting(
        60000, _int(0), "how often log start offsets are written (0: once)"),
    "log.initial.task.delay.ms": _Setting(30000, _int(0), "delay of the first log tasks"),
    "producer.id.expiration.check.interval.ms": _Setting(
        600000, _int(1), "how often idle producer ids are forgotten"),
    "log.dir.failure.probe.interval.ms": _Setting(
        1000, _int(1), "how often an offline log dir is probed (ours: Kafka never retries)"),
    "message.max.bytes": _Setting(1048588, _int(0), "largest record batch accepted"),
    # -- the log cleaner (docs/broker/log_cleaner.rst) --
    "log.cleanup.policy": _Setting(
        "delete", _choice("delete", "compact", "compact,delete", "delete,compact"),
        "a topic's default cleanup.policy"),
    "log.cleaner.enable": _Setting(True, _bool, "run the log cleaner (compacted topics)"),
    "log.cleaner.threads": _Setting(1, _int(0), "cleaner threads"),
    "log.cleaner.backoff.ms": _Setting(15000, _int(0), "a cleaner's sleep when no log is dirty"),
    "log.cleaner.dedupe.buffer.size": _Setting(
        134217728, _int(1), "memory of the offset maps, all cleaner threads together"),
    "log.cleaner.io.buffer.size": _Setting(
        524288, _int(1024), "bytes a cleaner reads from a segment at a time"),
    "log.cleaner.io.buffer.load.factor": _Setting(
        0.9, _float(0.01, 1.0), "how full an offset map may get"),
    "log.cleaner.io.max.bytes.per.second": _Setting(
        1.7976931348623157e308, _float(1.0, 1.7976931348623157e308),
        "bytes read and written per second, all cleaner threads together"),
    "log.cleaner.min.cleanable.ratio": _Setting(
        0.5, _float(0.0, 1.0), "a topic's default min.cleanable.dirty.ratio"),
    "log.cleaner.min.compaction.lag.ms": _Setting(0, _int(0), "default min.compaction.lag.ms"),
    "log.cleaner.max.compaction.lag.ms": _Setting(
        9223372036854775807, _int(1), "default max.compaction.lag.ms"),
    "log.cleaner.delete.retention.ms": _Setting(86400000, _int(0), "default delete.retention.ms"),
    # -- security (docs/broker/security.rst) --
    "listener.security.protocol.map": _Setting(
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", _str,
        "listener name -> security protocol, NAME:PROTOCOL,..."),
    "ssl.keystore.type": _Setting("PEM", _pem, "PEM only (KIP-651)"),
    "ssl.keystore.location": _Setting("", _str, "PEM file: certificate chain (and key)"),
    "ssl.keystore.certificate.chain": _Setting("", _str, "the certificate chain as PEM text"),
    "ssl.keystore.key": _Setting("", _secret, "the private key as PEM text"),
    "ssl.key.location": _Setting("", _str, "PEM file of the key, if not in the keystore file"),
    "ssl.key.password": _Setting("", _secret, "password of an encrypted private key"),
    "ssl.truststore.type": _Setting("PEM", _pem, "PEM only (KIP-651)"),
    "ssl.truststore.location": _Setting("", _str, "PEM file of the CAs client certificates need"),
    "ssl.truststore.certificates": _Setting("", _str, "the trusted CAs as PEM text"),
    "ssl.client.auth": _Setting("none", _choice("none", "requested", "required"),
                                "ask clients for a certificate (mutual TLS)"),
    "ssl.enabled.protocols": _Setting("TLSv1.2,TLSv1.3", _str, "TLS versions accepted"),
    "sasl.enabled.mechanisms": _Setting("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", _str,
                                        "the SASL mechanisms offered"),
    "sasl.users": _Setting("", _secret, "user:password,... for every SASL mechanism"),
    "connections.max.reauth.ms": _Setting(0, _int(0), "session lifetime (KIP-368); 0: forever"),
    "sasl.server.max.receive.size": _Setting(
        524288, _int(1), "largest frame accepted before SASL authentication completes"),
    "connection.failed.authentication.delay.ms": _Setting(
        100, _int(0), "close a refused connection this much later (KIP-306)"),
    # -- authorization (docs/broker/security.rst) --
    "authorizer.class.name": _Setting(
        "", _str, "org.apache.kafka.metadata.authorizer.StandardAuthorizer switches ACLs on; "
                  "empty: everyone may do anything"),
    "super.users": _Setting("", _str, "principals allowed everything, User:a;User:b"),
    "allow.everyone.if.no.acl.found": _Setting(
        False, _bool, "allow an operation on a resource that no ACL names"),
    "inter.broker.listener.name": _Setting(
        "", _str, "the listener brokers use to reach one another (default: the first)"),
    "sasl.mechanism.inter.broker.protocol": _Setting(
        "PLAIN", _str, "the SASL mechanism of the inter-broker listener's clients"),
    "controller.listener.names": _Setting(
        "", _str, "a broker: the controller's listener, whose protocol it speaks (default: "
                  "PLAINTEXT)"),
    "sasl.mechanism.controller.protocol": _Setting(
        "PLAIN", _str, "the SASL mechanism a broker authenticates to the controller with"),
    "group.min.session.timeout.ms": _Setting(6000, _int(0), "shortest session a member may ask"),
    "group.max.session.timeout.ms": _Setting(1800000, _int(0), "longest session a member may ask"),
    "group.initial.rebalance.delay.ms": _Setting(
        3000, _int(0), "how long an empty group's first rebalance waits for more members"),
    "group.max.size": _Setting(2147483647, _int(1), "members a group may have at most"),
    "group.consumer.heartbeat.interval.ms": _Setting(
        5000, _int(1), "how often a consumer group (KIP-848) member heartbeats"),
    "group.consumer.session.timeout.ms": _Setting(
        45000, _int(1), "a consumer group member silent this long is removed"),
    "group.consumer.min.session.timeout.ms": _Setting(
        45000, _int(1), "the smallest group.consumer.session.timeout.ms allowed"),
    "group.consumer.max.size": _Setting(
        2147483647, _int(1), "members a consumer group may have at most"),
    "group.consumer.assignors": _Setting(
        "uniform,range", _str, "the server-side assignors, the first the default"),
    "group.consumer.migration.policy": _Setting(
        "bidirectional", _choice("disabled", "upgrade", "downgrade", "bidirectional"),
        "may a classic group become a consumer group when a consumer-protocol member joins "
        "(upgrade, bidirectional), and back when the last one leaves (downgrade, "
        "bidirectional)"),
    "offsets.topic.num.partitions": _Setting(50, _int(1), "partitions of __consumer_offsets"),
    "offsets.topic.replication.factor": _Setting(
        3, _int(1), "replication factor of __consumer_offsets (at most the live brokers)"),
    "offsets.topic.segment.bytes": _Setting(
        104857600, _int(1), "segment.bytes of __consumer_offsets (small: its cleaner runs sooner)"),
    "offsets.commit.timeout.ms": _Setting(
        5000, _int(1), "how long an OffsetCommit waits for the offsets topic's replicas"),
    # -- transactions (docs/broker/transactions.rst) --
    "transaction.state.log.num.partitions": _Setting(50, _int(1),
                                                     "partitions of __transaction_state"),
    "transaction.state.log.replication.factor": _Setting(
        3, _int(1), "replication factor of __transaction_state (at most the live brokers)"),
    "transaction.state.log.min.isr": _Setting(
        2, _int(1), "min.insync.replicas of __transaction_state (at most its replicas)"),
    "transaction.state.log.segment.bytes": _Setting(104857600, _int(1),
                                                    "segment.bytes of __transaction_state"),
    "transaction.max.timeout.ms": _Setting(
        900000, _int(1), "the longest transaction.timeout.ms a producer may ask"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": _Setting(
        10000, _int(1), "how often the coordinator aborts the transactions past their timeout"),
    "transactional.id.expiration.ms": _Setting(
        604800000, _int(1), "forget a transactional id unused this long"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": _Setting(
        3600000, _int(1), "how often the coordinator forgets expired transactional ids"),
    # -- the cluster (docs/broker/replication.rst) --
    "process.roles": _Setting("", _str, "broker, controller, or empty: one broker that is its "
                                          "own controller (a cluster of one); broker,controller:"
                                          " a combined node, one of the quorum's voters if "
                                          "controller.quorum.voters names several"),
    "controller.quorum.bootstrap.servers": _Setting(
        "", _str, "host:port of the controller, or of several: a broker moves to the next on "
                  "NOT_CONTROLLER or a dead connection"),
    "controller.quorum.voters": _Setting(
        "", _str, "id@host:port of each controller; more than one makes them a Raft quorum "
                  "(docs/broker/quorum.rst)"),
    "controller.quorum.election.timeout.ms": _Setting(
        1000, _int(1), "a voter that hears no leader this long (plus up to as much at random) "
                       "stands for election"),
    "controller.quorum.fetch.timeout.ms": _Setting(
        2000, _int(1), "a follower whose leader is silent this long stands; a leader not "
                       "fetched from by a majority for 1.5 times it resigns"),
    "metadata.log.max.record.bytes.between.snapshots": _Setting(
        20 * 1024 * 1024, _int(1), "a quorum controller snapshots its image after applying "
                                   "this many bytes of records since its last snapshot, and the "
                                   "quorum's log forgets the entries before its older snapshots"),
    "broker.session.timeout.ms": _Setting(9000, _int(1), "fence a broker silent this long"),
    "broker.heartbeat.interval.ms": _Setting(2000, _int(1), "between a broker's heartbeats"),
    # Ours (Kafka has no such cap): see docs/broker/admin.rst.
    "max.partitions.per.broker": _Setting(
        10000, _int(1), "partition replicas one broker may hold; CreateTopics and "
                        "CreatePartitions beyond it are refused (POLICY_VIOLATION)"),
    "min.insync.replicas": _Setting(1, _int(1), "acks=all needs this many in-sync replicas"),
    "replica.lag.time.max.ms": _Setting(30000, _int(1), "drop a follower behind this long "
                                                         "from the ISR"),
    "replica.fetch.wait.max.ms": _Setting(500, _int(0), "a follower's fetch max wait"),
    "replica.fetch.max.bytes": _Setting(1048576, _int(1), "a follower's bytes per partition"),
    "max.incremental.fetch.session.cache.slots": _Setting(
        1000, _int(0), "fetch sessions the broker keeps (0: none, every fetch is full)"),
    "min.incremental.fetch.session.eviction.ms": _Setting(
        120000, _int(0), "a fetch session younger than this is not evicted for another"),
    "replica.fetch.backoff.ms": _Setting(1000, _int(0), "a follower's pause after an error"),
    "replica.socket.timeout.ms": _Setting(30000, _int(1), "inter-broker socket timeout"),
    "replica.high.watermark.checkpoint.interval.ms": _Setting(
        5000, _int(1), "how often high watermarks are written to disk"),
}

#: Older names Kafka still reads, mapped to the current one.
ALIASES = {"broker.id": "node.id"}


class BrokerConfig:
    """The parsed settings.  ``config["num.io.threads"]`` or ``config.get(...)``.

    A name Kafka's broker knows but this one has no counterpart for is accepted and listed in
    ``without_effect`` (``kafkacore-broker`` names them once at start), so Kafka's own
    ``server.properties`` starts it; a name Kafka does not know raises with a did-you-mean (a
    misspelt setting must not be ignored in silence), except those that start with ``x.``
    (kept as strings for experiments).
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        parsed = {name: s.default for name, s in SETTINGS.items()}
        values = _with_synonyms(values or {})
        #: The settings given that Kafka knows and this broker has no use for, in given order.
        self.without_effect: list[str] = []
        #: The settings as given (by their names as given), before a combined node's are
        #: rewritten below: what ``KafkaRaftServer`` splits into its voter's and its broker's.
        self.values_given: dict[str, Any] = dict(values)
        #: ``process.roles=broker,controller`` (Kafka's combined mode, its stock file's): one
        #: node, which acts as its own controller as with no ``process.roles``.  With several
        #: voters in ``controller.quorum.voters`` the process is one of a quorum instead:
        #: ``kafkacore-broker`` runs it as a ``KafkaRaftServer`` (docs/broker/quorum.rst).
        self.combined_roles = _roles(values.get("process.roles")) == {"broker", "controller"}
        if self.combined_roles:
            values = {**values, "process.roles": ""}
            if "controller.quorum.bootstrap.servers" in values:
                # Its own controller: it asks no other node.
                self.without_effect.append("controller.quorum.bootstrap.servers")
        #: The settings given (server.properties), by their current names: DescribeConfigs
        #: tells them (STATIC_BROKER_CONFIG) from defaults.
        self.given = frozenset(ALIASES.get(k, k) for k in (values or {}) if isinstance(k, str))
        for key, value in (values or {}).items():
            if not isinstance(key, str):
                raise errors.ConfigError(f"setting names are strings, got {key!r}")
            name = ALIASES.get(key, key)
            setting = SETTINGS.get(name)
            if setting is None:
                if name.startswith("listener.name."):
                    # Per-listener overrides (Kafka's ListenerName.configPrefix), e.g.
                    # listener.name.sasl_ssl.plain.sasl.jaas.config; read by the listener.
                    parsed[name] = Password(_str(key, value)) if "jaas" in name else value
                    continue
                if name.startswith("x."):
                    parsed[name] = value
                    continue
                if name in KAFKA_BROKER_SETTINGS:
                    self.without_effect.append(name)
                    continue
                raise errors.ConfigError(f"unknown broker setting {key!r}{_did_you_mean(key)}")
            parsed[name] = setting.parse(key, value)
        protocols = parse_protocol_map(parsed["listener.security.protocol.map"])
        #: Every listener, in the order of ``listeners`` (the first answers ``bootstrap_servers``).
        self.listeners = parse_listeners("listeners", parsed["listeners"], protocols)
        advertised = parse_listeners(
            "advertised.listeners", parsed["advertised.listeners"] or parsed["listeners"],
            protocols,
        )
        #: The controller listeners a combined node is given and does not open: its controller
        #: is in-process, and no other node asks it for anything.
        self.unopened_controller_listeners: list[str] = []
        if self.combined_roles:
            names = {n.strip().upper() for n in parsed["controller.listener.names"].split(",")}
            self.unopened_controller_listeners = [e.name for e in self.listeners
                                                  if e.name in names]
            self.listeners = [e for e in self.listeners if e.name not in names]
            advertised = [e for e in advertised if e.name not in names]
            if not self.listeners:
                raise errors.ConfigError("listeners: only controller listeners are given; "
                                         "the broker needs one for clients")
        #: listener name -> the EndPoint given to clients that came in on it.
        self.advertised = {e.name: e for e in advertised}
        for endpoint in self.listeners:
            if endpoint.name not in self.advertised:
                raise errors.ConfigError(
                    f"advertised.listeners: no address for listener {endpoint.name}")
        self.listener_host, self.listener_port = self.listeners[0].host, self.listeners[0].port
        inter_broker = parsed["inter.broker.listener.name"].strip().upper()
        named = [e for e in self.listeners if e.name == inter_broker]
        if inter_broker and not named:
            raise errors.ConfigError(f"inter.broker.listener.name: {inter_broker} is not in "
                                     f"listeners")
        #: The listener other brokers fetch from and this broker registers with the controller.
        self.inter_broker_listener = named[0] if named else self.listeners[0]
        authorizer = parsed["authorizer.class.name"].strip()
        if authorizer not in ("", STANDARD_AUTHORIZER_CLASS):
            raise errors.ConfigError(f"authorizer.class.name: only {STANDARD_AUTHORIZER_CLASS} "
                                     f"is known, got {authorizer!r}")
        _check_consumer_group_settings(parsed)
        first = self.advertised[self.listeners[0].name]
        self.advertised_host, self.advertised_port = first.host, first.port
        if not parsed["log.dirs"]:
            parsed["log.dirs"] = tempfile.mkdtemp(prefix="kafkacore-broker-")
            self.log_dirs_are_temporary = True
        else:
            self.log_dirs_are_temporary = False
        self._values = parsed

    @property
    def log_dirs(self) -> list[str]:
        return [d.strip() for d in self._values["log.dirs"].split(",") if d.strip()]

    def __getitem__(self, name: str) -> Any:
        return self._values[ALIASES.get(name, name)]

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(ALIASES.get(name, name), default)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"BrokerConfig(listeners={self['listeners']!r}, log.dirs={self['log.dirs']!r})"


@dataclass(frozen=True)
class EndPoint:
    """One listener: ``NAME://host:port`` and its security protocol (Kafka's ``EndPoint``)."""

    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}."""
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, protocol = part.strip().partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise errors.ConfigError(
                f"listener.security.protocol.map: expected NAME:PROTOCOL with PROTOCOL one of "
                f"{', '.join(SECURITY_PROTOCOLS)}, got {part.strip()!r}")
        out[name.strip().upper()] = protocol
    return out


def parse_listeners(key: str, text: str, protocols: dict[str, str]) -> list[EndPoint]:
    """``NAME://host:port,...`` -> EndPoints; each name must be in the protocol map, once."""
    out: list[EndPoint] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, address = part.partition("://")
        name = name.upper()
        if not sep:
            raise errors.ConfigError(f"{key}: expected NAME://host:port, got {part!r}")
        if name not in protocols:
            raise errors.ConfigError(
                f"{key}: listener {name} is not in listener.security.protocol.map")
        if any(e.name == name for e in out):
            raise errors.ConfigError(f"{key}: listener {name} is given twice")
        host, sep, port = address.rpartition(":")
        if not sep:
            raise errors.ConfigError(f"{key}: expected NAME://host:port, got {part!r}")
        host = host.strip("[]") or "0.0.0.0"
        try:
            number = int(port)
        except ValueError:
            raise errors.ConfigError(f"{key}: port must be a number, got {port!r}") from None
        if not 0 <= number <= 65535:
            raise errors.ConfigError(f"{key}: port out of range: {number}")
        out.append(EndPoint(name, host, number, protocols[name]))
    if not out:
        raise errors.ConfigError(f"{key}: no listener in {text!r}")
    return out


def _with_synonyms(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with Kafka's older names read into the current ones (``log.retention.hours``
    into ``log.retention.ms`` when that is not given; the first synonym given wins, as in Kafka)."""
    out = dict(values)
    for name, synonyms in SYNONYMS.items():
        for synonym, factor in synonyms:
            if synonym not in out:
                continue
            value = out.pop(synonym)
            if name in out:
                continue
            if factor == 1:
                out[name] = value
            else:
                number = _int(-1)(synonym, value)
                out[name] = -1 if number < 0 else number * factor  # -1: no limit
    return out


def _roles(value: Any) -> set[str]:
    return {r.strip().lower() for r in str(value or "").split(",") if r.strip()}


def _did_you_mean(key: str) -> str:
    """``; did you mean 'log.retention.hours'?`` for the closest name Kafka or we know."""
    known = set(SETTINGS) | KAFKA_BROKER_SETTINGS | set(ALIASES)
    close = difflib.get_close_matches(key.replace("_", "."), known, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else " (not a Kafka broker setting)"


def is_sensitive(name: str) -> bool:
    """Is the setting a secret (a password, a private key), which DescribeConfigs never shows?"""
    setting = SETTINGS.get(ALIASES.get(name, name))
    return setting is not None and setting.parse is _secret


#: The server-side assignors this broker has (``kafkacore.broker.group.assignors``), by the
#: names ``group.consumer.assignors`` gives them; the group coordinator builds its table in
#: this order, so a name here without an assignor fails at import.
CONSUMER_GROUP_ASSIGNORS = ("uniform", "range")


def _check_consumer_group_settings(parsed: dict[str, Any]) -> None:
    """The consumer group protocol's settings (KIP-848), checked together as Kafka does."""
    session_ms = parsed["group.consumer.session.timeout.ms"]
    if session_ms < parsed["group.consumer.min.session.timeout.ms"]:
        raise errors.ConfigError(
            f"group.consumer.session.timeout.ms ({session_ms}) is below "
            f"group.consumer.min.session.timeout.ms "
            f"({parsed['group.consumer.min.session.timeout.ms']})")
    names = [n.strip() for n in parsed["group.consumer.assignors"].split(",") if n.strip()]
    unknown = [n for n in names if n not in CONSUMER_GROUP_ASSIGNORS]
    if unknown or not names:
        raise errors.ConfigError(f"group.consumer.assignors: unknown assignors {unknown} "
                                 f"(known: {', '.join(CONSUMER_GROUP_ASSIGNORS)})")
