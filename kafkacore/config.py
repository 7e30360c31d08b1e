"""Every producer setting: its Java name, Kafka 4's default, its type, its check, one line of doc.

The settings are data: :data:`SETTINGS` is one table, and everything else here (coercion, the
error messages, :meth:`ProducerConfig.describe`, the table in the docs) reads it.  The names are
the Java producer's (``linger.ms``, ``batch.size``), the convention confluent-kafka shares; the
defaults are Kafka 4's Java producer defaults (docs/design.rst, principle 7).

After each value is checked on its own, :class:`ProducerConfig` applies the Java producer's rules
that tie settings together (``ProducerConfig.postProcessAndValidateIdempotenceConfigs`` and
``KafkaProducer.configureDeliveryTimeout``): a conflict the user asked for explicitly is an error;
a conflict that comes from a default is resolved quietly, the way Java resolves it.
"""

from __future__ import annotations

import difflib
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kafkacore.compat.librdkafka import DEBUG_CONTEXTS, PARTITIONERS
from kafkacore.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["SETTINGS", "ProducerConfig", "Setting"]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
#: Java's ``MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE``: the broker remembers the last
#: five batches per producer and partition, so at most five may be unacknowledged at once.
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


class _Invalid(ValueError):
    """Raised by a check; ProducerConfig turns it into a ConfigError naming key and value."""


@dataclass(frozen=True)
class Setting:
    """One row of the settings table."""

    #: The Java name, e.g. ``"linger.ms"``.
    name: str
    #: Kafka 4's default, in the form a user would write it (coerced like a user's value).
    default: Any
    #: The Java type: int, long, boolean, string, list, class (here: a callable).
    type: str
    #: Takes the user's value, returns the coerced value or raises ``_Invalid``.
    check: Callable[[Any], Any]
    #: What the check accepts, in words (shown in errors and in the docs table).
    allowed: str
    #: One line on what the setting does.
    doc: str

    @property
    def keyword(self) -> str:
        """The name as a Python keyword (``linger.ms`` becomes ``linger_ms``)."""
        return self.name.replace(".", "_")


# -- checks ------------------------------------------------------------------------------------
# Each check is a small function that returns the coerced value.  They accept what a Java
# ``Properties`` file would hold (strings) as well as Python values, and refuse anything whose
# meaning would be a guess (a float 5.5 for milliseconds, True for a number).


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise _Invalid("a bool is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        raise _Invalid("not a whole number")
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 10)
        except ValueError:
            raise _Invalid("not an integer") from None
    raise _Invalid(f"a {type(value).__name__} is not a number")


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        n = _integer(value)
        if not lo <= n <= hi:
            raise _Invalid("out of range")
        return n

    return check


def _range_text(lo: int, hi: int) -> str:
    if hi in (INT_MAX, LONG_MAX):
        return f"an integer >= {lo}" + (" (32-bit)" if hi == INT_MAX else "")
    return f"an integer in [{lo}, {hi}]"


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "true":
            return True
        if text == "false":
            return False
    raise _Invalid("not a boolean")


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"a {type(value).__name__} is not a string")
    return value


def _acks(value: Any) -> int:
    # Java's parseAcks: "all" is -1; the validator allows exactly all, -1, 0, 1.
    if isinstance(value, bool):
        raise _Invalid("a bool is not an acks value")
    if isinstance(value, int) and value in (-1, 0, 1):
        return value
    if isinstance(value, str) and value.strip() in ("all", "-1", "0", "1"):
        text = value.strip()
        return -1 if text == "all" else int(text)
    raise _Invalid("not an acks value")


COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")


def _compression_type(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in COMPRESSION_TYPES:
        return value.strip().lower()
    raise _Invalid("not a compression type")


def _gzip_level(value: Any) -> int:
    # zlib's levels, plus -1 for "zlib's default" (Deflater.DEFAULT_COMPRESSION).
    n = _integer(value)
    if n == -1 or 1 <= n <= 9:
        return n
    raise _Invalid("not a gzip level")


def _parse_address(entry: Any) -> tuple[str, int]:
    if isinstance(entry, tuple) and len(entry) == 2:
        host, port = entry
        if not isinstance(host, str):
            raise _Invalid(f"host {host!r} is not a string")
    elif isinstance(entry, str):
        text = entry.strip()
        if text.startswith("["):
            # [IPv6]:port
            close = text.find("]")
            if close < 0 or text[close + 1 : close + 2] != ":":
                raise _Invalid(f"{text!r} is not [ipv6-address]:port")
            host, port = text[1:close], text[close + 2 :]
        else:
            if text.count(":") > 1:
                raise _Invalid(f"{text!r}: write an IPv6 address in brackets, [::1]:9092")
            host, sep, port = text.rpartition(":")
            if not sep:
                raise _Invalid(f"{text!r} has no port (host:port)")
    else:
        raise _Invalid(f"{entry!r} is neither 'host:port' nor (host, port)")
    if not host or any(c.isspace() for c in host):
        raise _Invalid(f"bad host in {entry!r}")
    try:
        port_number = _integer(port)
    except _Invalid:
        raise _Invalid(f"bad port in {entry!r}") from None
    if not 1 <= port_number <= 65535:
        raise _Invalid(f"port {port_number} is outside 1..65535")
    return host, port_number


def _bootstrap_servers(value: Any) -> list[tuple[str, int]]:
    if isinstance(value, str):
        entries: list[Any] = value.split(",")
    elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int):
        entries = [value]  # a single (host, port) pair given bare
    elif isinstance(value, (list, tuple)):
        entries = list(value)
    else:
        raise _Invalid(f"a {type(value).__name__} is not a server list")
    # Java's LIST type trims each entry and skips empty ones ("a:1,,b:2" has two servers).
    servers = [_parse_address(e) for e in entries if not (isinstance(e, str) and not e.strip())]
    if not servers:
        raise _Invalid("no servers")
    return servers


def _callable_or_none(value: Any) -> Callable[..., Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise _Invalid("a class name is not a callable (pass the function itself)")
    if not callable(value):
        raise _Invalid(f"a {type(value).__name__} is not callable")
    return value


def _interceptors(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise _Invalid("not a list of interceptors")
    for obj in value:
        for method in ("on_send", "on_acknowledgement"):
            if not callable(getattr(obj, method, None)):
                raise _Invalid(f"{obj!r} has no {method}() method")
        close = getattr(obj, "close", None)
        if close is not None and not callable(close):
            raise _Invalid(f"{obj!r} has a close attribute that is not callable")
    return tuple(value)


def _transactional_id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid(f"a transactional id is a string, not {type(value).__name__}")
    if not value:
        raise _Invalid("an empty string is not a transactional id (None means none)")
    return value


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _security_protocol(value: Any) -> str:
    text = value.strip().upper() if isinstance(value, str) else None
    if text in SECURITY_PROTOCOLS:
        return text
    raise _Invalid("not a security protocol")


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _sasl_mechanism(value: Any) -> str:
    text = value.strip().upper() if isinstance(value, str) else None
    if text in SASL_MECHANISMS:
        return text
    raise _Invalid("not a SASL mechanism kafkacore speaks")


def _string_or_none(value: Any) -> str | None:
    return None if value is None else _string(value)


def _pem_type(value: Any) -> str:
    text = value.strip().upper() if isinstance(value, str) else None
    if text == "PEM":
        return text
    raise _Invalid("kafkacore reads PEM only (no JKS or PKCS12 stores)")


#: Settings whose values are secrets: shown as [hidden] by repr() and describe().
SECRET_SETTINGS = frozenset(
    {"sasl.password", "sasl.jaas.config", "ssl.key.password", "ssl.keystore.key"}
)

#: librdkafka's (confluent-kafka's) names for the same settings, so its configs work as they are.
ALIASES = {
    "ssl.ca.location": "ssl.truststore.location",
    "ssl.ca.pem": "ssl.truststore.certificates",
    "ssl.certificate.location": "ssl.keystore.location",
    "ssl.certificate.pem": "ssl.keystore.certificate.chain",
    "ssl.key.pem": "ssl.keystore.key",
    "sasl.mechanisms": "sasl.mechanism",
    "oauth_cb": "sasl.oauthbearer.token.provider",
    "queue.buffering.max.ms": "linger.ms",
    "message.timeout.ms": "delivery.timeout.ms",
    "message.max.bytes": "max.request.size",
    "compression.codec": "compression.type",
    "request.required.acks": "acks",
    "message.send.max.retries": "retries",
    "topic.metadata.refresh.interval.ms": "metadata.max.age.ms",
    "socket.send.buffer.bytes": "send.buffer.bytes",
    "socket.receive.buffer.bytes": "receive.buffer.bytes",
    "metadata.broker.list": "bootstrap.servers",
    "max.in.flight": "max.in.flight.requests.per.connection",
}

#: librdkafka's names for a setting kafkacore has in another unit: name -> (ours, conversion).
CONVERTED_ALIASES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "queue.buffering.max.kbytes": ("buffer.memory", lambda kbytes: _int_range(0, INT_MAX)(
        kbytes) * 1024),
}

#: Settings of other clients that kafkacore accepts and does not need: name -> why (logged).
NOT_NEEDED = {
    "api_version": "kafka-python's api_version is not needed: kafkacore asks each broker which "
                   "versions it speaks (ApiVersions) and uses the newest both know",
    "api.version.request": "kafkacore always asks brokers for their versions (ApiVersions)",
}

#: librdkafka's delivery callbacks: KafkaProducer would never call them (it reports through
#: futures and send()'s callback), so they are refused rather than accepted in silence.
NO_COUNTERPART = {
    "on_delivery": "pass it to send() (on_delivery=), or use kafkacore.compat.confluent.Producer",
    "dr_cb": "pass it to send() (on_delivery=), or use kafkacore.compat.confluent.Producer",
    "dr_msg_cb": "pass it to send() (on_delivery=), or use kafkacore.compat.confluent.Producer",
}

#: Every librdkafka setting that applies to a producer (``*`` or ``P`` in librdkafka's
#: CONFIGURATION.md), global and topic level.  Each is accepted: as an alias of a setting of
#: ours (:data:`ALIASES`), mapped to what kafkacore has (:data:`LIBRDKAFKA_MAPPED`), or
#: accepted without effect and named in one warning (:data:`LIBRDKAFKA_WITHOUT_EFFECT`).
LIBRDKAFKA_SETTINGS: tuple[str, ...] = (
    "builtin.features", "client.id", "metadata.broker.list", "bootstrap.servers",
    "message.max.bytes", "message.copy.max.bytes", "receive.message.max.bytes",
    "max.in.flight.requests.per.connection", "max.in.flight", "metadata.recovery.strategy",
    "metadata.recovery.rebootstrap.trigger.ms", "topic.metadata.refresh.interval.ms",
    "metadata.max.age.ms", "topic.metadata.refresh.fast.interval.ms",
    "topic.metadata.refresh.fast.cnt", "topic.metadata.refresh.sparse",
    "topic.metadata.propagation.max.ms", "topic.blacklist", "debug", "socket.timeout.ms",
    "socket.blocking.max.ms", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
    "socket.keepalive.enable", "socket.nagle.disable", "socket.max.fails", "broker.address.ttl",
    "broker.address.family", "socket.connection.setup.timeout.ms", "connections.max.idle.ms",
    "reconnect.backoff.jitter.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    "statistics.interval.ms", "enabled_events", "error_cb", "throttle_cb", "stats_cb", "log_cb",
    "log_level", "log.queue", "log.thread.name", "enable.random.seed", "log.connection.close",
    "background_event_cb", "socket_cb", "connect_cb", "closesocket_cb", "open_cb", "resolve_cb",
    "opaque", "default_topic_conf", "internal.termination.signal", "api.version.request",
    "api.version.request.timeout.ms", "api.version.fallback.ms", "broker.version.fallback",
    "allow.auto.create.topics", "security.protocol", "ssl.cipher.suites", "ssl.curves.list",
    "ssl.sigalgs.list", "ssl.key.location", "ssl.key.password", "ssl.key.pem", "ssl_key",
    "ssl.certificate.location", "ssl.certificate.pem", "ssl_certificate", "ssl.ca.location",
    "https.ca.location", "https.ca.pem", "ssl.ca.pem", "ssl_ca", "ssl.ca.certificate.stores",
    "ssl.crl.location", "ssl.keystore.location", "ssl.keystore.password", "ssl.providers",
    "ssl.engine.location", "ssl.engine.id", "ssl_engine_callback_data",
    "enable.ssl.certificate.verification", "ssl.endpoint.identification.algorithm",
    "ssl.certificate.verify_cb", "sasl.mechanisms", "sasl.mechanism", "sasl.kerberos.service.name",
    "sasl.kerberos.principal", "sasl.kerberos.kinit.cmd", "sasl.kerberos.keytab",
    "sasl.kerberos.min.time.before.relogin", "sasl.username", "sasl.password",
    "sasl.oauthbearer.config", "enable.sasl.oauthbearer.unsecure.jwt",
    "oauthbearer_token_refresh_cb", "sasl.oauthbearer.method", "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret", "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions", "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.grant.type",
    "sasl.oauthbearer.assertion.algorithm", "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem", "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.claim.aud", "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss", "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds", "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.jwt.template.file",
    "sasl.oauthbearer.metadata.authentication.type", "plugin.library.paths", "interceptors",
    "client.rack", "transactional.id", "transaction.timeout.ms", "enable.idempotence",
    "enable.gapless.guarantee", "queue.buffering.max.messages", "queue.buffering.max.kbytes",
    "queue.buffering.max.ms", "linger.ms", "message.send.max.retries", "retries",
    "retry.backoff.ms", "retry.backoff.max.ms", "queue.buffering.backpressure.threshold",
    "compression.codec", "compression.type", "batch.num.messages", "batch.size",
    "delivery.report.only.error", "dr_cb", "dr_msg_cb", "sticky.partitioning.linger.ms",
    "client.dns.lookup", "enable.metrics.push", "request.required.acks", "acks",
    "request.timeout.ms", "message.timeout.ms", "delivery.timeout.ms", "queuing.strategy",
    "produce.offset.report", "partitioner", "partitioner_cb", "msg_order_cmp", "compression.level",
)

#: Settings of confluent-kafka's Python layer (not librdkafka's) that a producer config holds.
CONFLUENT_PYTHON_SETTINGS = ("logger", "on_delivery", "oauth_cb")


def _log_level(value: Any) -> int:
    n = _integer(value)
    if not 0 <= n <= 7:
        raise _Invalid("a syslog level is 0..7")
    return n


def _logger(value: Any) -> Any:
    if not callable(getattr(value, "handle", None)) and not callable(getattr(value, "log", None)):
        raise _Invalid("not a logging.Logger")
    return value


def _debug(value: Any) -> tuple[str, ...]:
    contexts = tuple(c.strip() for c in _string(value).split(",") if c.strip())
    for c in contexts:
        if c not in DEBUG_CONTEXTS:
            close = difflib.get_close_matches(c, list(DEBUG_CONTEXTS), n=1)
            raise _Invalid(f"{c!r} is not a librdkafka debug context"
                           + (f"; did you mean {close[0]!r}?" if close else ""))
    return contexts


def _partitioner(value: Any) -> str:
    text = _string(value).strip()
    if text not in PARTITIONERS:
        raise _Invalid("not a librdkafka partitioner")
    return text


#: librdkafka settings with a meaning here, and their checks; :class:`ProducerConfig` keeps
#: their values in ``librdkafka`` and :func:`kafkacore.compat.librdkafka.attach` applies them
#: to a running producer (``partitioner`` and ``compression.level`` become our settings).
LIBRDKAFKA_MAPPED: dict[str, tuple[Callable[[Any], Any], str]] = {
    "debug": (_debug, "librdkafka's debug contexts, comma-separated: kafkacore's loggers at DEBUG"),
    "log_level": (_log_level, "0..7 (syslog): the level of the 'kafkacore' logger"),
    "logger": (_logger, "a logging.Logger that receives kafkacore's log"),
    "statistics.interval.ms": (_int_range(0, 86400000),
                               "0..86400000: how often stats_cb receives librdkafka's JSON"),
    "stats_cb": (_callable_or_none, "called with the statistics JSON (a str)"),
    "throttle_cb": (_callable_or_none, "called with a ThrottleEvent when a broker throttles us"),
    "error_cb": (_callable_or_none, "called with each client error that belongs to no record"),
    "socket.keepalive.enable": (_boolean, "SO_KEEPALIVE on broker connections"),
    "partitioner": (_partitioner, "librdkafka's partitioner, as our partitioner.class"),
    "compression.level": (_int_range(-1, 12),
                          "-1..12: the compression.<codec>.level of the codec in use"),
}

#: Why a librdkafka setting has no effect here, for the ones a user is likely to ask about.
#: The rest: kafkacore has nothing that corresponds (a C callback, a build feature, a
#: consumer's setting, librdkafka's internals).
LIBRDKAFKA_WITHOUT_EFFECT = {
    "batch.num.messages": "a batch is bounded in bytes (batch.size), not in messages",
    "queue.buffering.max.messages": "KafkaProducer bounds what it holds in bytes "
                                    "(buffer.memory); kafkacore.compat.confluent.Producer "
                                    "applies it",
    "delivery.report.only.error": "KafkaProducer reports through futures; "
                                  "kafkacore.compat.confluent.Producer applies it",
    "client.rack": "a consumer's setting (fetch from the nearest replica): a producer writes "
                   "to leaders",
    "enable.gapless.guarantee": "enable.idempotence already fails records rather than leave gaps",
    "log.connection.close": "closed connections are logged at DEBUG (logger kafkacore.network)",
    "socket.timeout.ms": "request.timeout.ms bounds each request",
    "socket.nagle.disable": "TCP_NODELAY is always set",
    "sticky.partitioning.linger.ms": "the sticky partitioner moves on after batch.size bytes",
    "api.version.request": "kafkacore always asks brokers for their versions (ApiVersions)",
    "enable.ssl.certificate.verification": "certificates are always verified",
}


def _int(lo: int) -> tuple[Callable[[Any], int], str]:
    return _int_range(lo, INT_MAX), _range_text(lo, INT_MAX)


def _long(lo: int) -> tuple[Callable[[Any], int], str]:
    return _int_range(lo, LONG_MAX), _range_text(lo, LONG_MAX)


def _row(name: str, default: Any, type_: str, check: Any, doc: str, allowed: str = "") -> Setting:
    if isinstance(check, tuple):
        check, allowed = check
    return Setting(name, default, type_, check, allowed, doc)


_BOOL = (_boolean, "true or false")
_CALLABLE = (_callable_or_none, "a callable, or None")

# -- the table -----------------------------------------------------------------------------------
# Defaults are Kafka 4.0's (ProducerConfig.CONFIG and CommonClientConfigs).  linger.ms became 5 in
# Kafka 4.0 (KIP-1030); before that it was 0.

#: Every setting kafkacore knows, in the order the docs list them.
# One setting per row, as a table reads (a formatter would give each argument its own line).
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    # where and who
    _row("bootstrap.servers", None, "list", (_bootstrap_servers,
         "'host:port,host:port' or a list of 'host:port' / (host, port); IPv6 as [addr]:port"),
         "Brokers to ask for the cluster's metadata first; required."),
    _row("client.id", "", "string", (_string, "a string"),
         "Names this producer in broker logs and quotas; KafkaProducer picks one if empty."),
    _row("security.protocol", "PLAINTEXT", "string",
         (_security_protocol, "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
         "How to talk to brokers: TLS or not, SASL or not."),
    # security (TLS and SASL)
    _row("ssl.truststore.type", "PEM", "string", (_pem_type, "PEM"),
         "Format of the trusted certificates."),
    _row("ssl.truststore.location", None, "string", (_string_or_none, "a path, or None"),
         "PEM file of the CA certificates to trust (librdkafka: ssl.ca.location)."),
    _row("ssl.truststore.certificates", None, "string", (_string_or_none, "PEM text, or None"),
         "The trusted CA certificates as PEM text (librdkafka: ssl.ca.pem)."),
    _row("ssl.keystore.type", "PEM", "string", (_pem_type, "PEM"),
         "Format of the client's own key and certificate."),
    _row("ssl.keystore.location", None, "string", (_string_or_none, "a path, or None"),
         "PEM file of the client certificate chain, with the key unless ssl.key.location is set."),
    _row("ssl.key.location", None, "string", (_string_or_none, "a path, or None"),
         "PEM file of the client's private key (librdkafka's name; Java keeps it in the keystore)."),
    _row("ssl.keystore.key", None, "password", (_string_or_none, "PEM text, or None"),
         "The client's private key as PEM text."),
    _row("ssl.keystore.certificate.chain", None, "string", (_string_or_none, "PEM text, or None"),
         "The client's certificate chain as PEM text."),
    _row("ssl.key.password", None, "password", (_string_or_none, "a string, or None"),
         "Password of an encrypted private key."),
    _row("ssl.endpoint.identification.algorithm", "https", "string", (_string, "https or empty"),
         "https: the broker's certificate must name the host we connect to; empty: no host check."),
    _row("ssl.enabled.protocols", "TLSv1.2,TLSv1.3", "list", (_string, "TLSv1.2, TLSv1.3"),
         "TLS versions the client may use."),
    _row("sasl.mechanism", "GSSAPI", "string",
         (lambda v: v if v == "GSSAPI" else _sasl_mechanism(v),
          "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"),
         "The SASL mechanism when security.protocol is SASL_PLAINTEXT or SASL_SSL."),
    _row("sasl.jaas.config", None, "password", (_string_or_none, "a JAAS line, or None"),
         "Java's form: 'org.apache.kafka.common.security.plain.PlainLoginModule required "
         "username=\"u\" password=\"p\";'"),
    _row("sasl.username", None, "string", (_string_or_none, "a string, or None"),
         "SASL user name (librdkafka's name), when there is no sasl.jaas.config."),
    _row("sasl.password", None, "password", (_string_or_none, "a string, or None"),
         "SASL password (librdkafka's name), when there is no sasl.jaas.config."),
    _row("sasl.oauthbearer.token.provider", None, "class", _CALLABLE,
         "OAUTHBEARER token callback(config) -> token or (token, expiry) (librdkafka: oauth_cb)."),
    _row("sasl.oauthbearer.config", None, "string", (_string_or_none, "a string, or None"),
         "Passed to the OAUTHBEARER token callback."),
    # durability and ordering
    _row("acks", "all", "string", (_acks, "all, -1, 0 or 1"),
         "How many replicas must have a record before the broker answers: 0, 1 or all (-1)."),
    _row("enable.idempotence", True, "boolean", _BOOL,
         "Producer id and sequence numbers so that retries cannot write duplicates."),
    _row("retries", INT_MAX, "int", _int(0),
         "How often to resend a batch after a retriable error (delivery.timeout.ms bounds it)."),
    _row("max.in.flight.requests.per.connection", 5, "int", _int(1),
         "Unanswered requests allowed per broker connection (at most 5 with idempotence)."),
    # batching
    _row("linger.ms", 5, "long", _long(0),
         "How long a batch may wait for more records before it is sent."),
    _row("batch.size", 16384, "int", _int(0),
         "Bytes per partition batch; also how much the sticky partitioner sends before it moves."),
    _row("buffer.memory", 33554432, "long", _long(0),
         "Total bytes for records waiting to be sent; send() blocks when it is used up."),
    _row("max.request.size", 1048576, "int", _int(0),
         "Largest produce request, and so the largest record, in bytes."),
    _row("compression.type", "none", "string",
         (_compression_type, "none, gzip, snappy, lz4 or zstd"),
         "Codec for whole batches."),
    _row("compression.gzip.level", -1, "int", (_gzip_level, "-1 (zlib's default) or 1..9"),
         "gzip level when compression.type is gzip."),
    _row("compression.lz4.level", 9, "int", (_int_range(1, 17), "an integer in [1, 17]"),
         "lz4 level when compression.type is lz4."),
    _row("compression.zstd.level", 3, "int",
         (_int_range(-131072, 22), "an integer in [-131072, 22]"),
         "zstd level when compression.type is zstd."),
    # time bounds
    _row("max.block.ms", 60000, "long", _long(0),
         "Longest send() may block waiting for metadata or buffer memory."),
    _row("delivery.timeout.ms", 120000, "int", _int(0),
         "Upper bound from send() to the record's success or failure, retries included."),
    _row("close.timeout.at.exit.ms", 10000, "long", _long(0),
         "At interpreter exit, how long a producer nobody closed may take to deliver what it "
         "holds (kafkacore only; then what is left fails and a warning counts it)."),
    _row("request.timeout.ms", 30000, "int", _int(0),
         "How long to wait for a broker's answer to one request."),
    _row("retry.backoff.ms", 100, "long", _long(0),
         "First wait before retrying a failed request; doubles up to retry.backoff.max.ms."),
    _row("retry.backoff.max.ms", 1000, "long", _long(0),
         "Longest wait between retries."),
    # metadata
    _row("metadata.max.age.ms", 300000, "long", _long(0),
         "Refresh metadata at least this often, even without errors."),
    _row("metadata.max.idle.ms", 300000, "long", _long(5000),
         "Forget a topic's metadata when nothing was sent to it for this long."),
    # connections
    _row("reconnect.backoff.ms", 50, "long", _long(0),
         "First wait before reconnecting to a broker; doubles up to reconnect.backoff.max.ms."),
    _row("reconnect.backoff.max.ms", 1000, "long", _long(0),
         "Longest wait before reconnecting."),
    _row("socket.connection.setup.timeout.ms", 10000, "long", _long(0),
         "How long one connection attempt may take; grows up to the .max.ms setting."),
    _row("socket.connection.setup.timeout.max.ms", 30000, "long", _long(0),
         "Longest connection attempt."),
    _row("connections.max.idle.ms", 540000, "long", _long(-1),
         "Close connections idle this long (-1: never)."),
    _row("send.buffer.bytes", 131072, "int", _int(-1),
         "Socket send buffer (SO_SNDBUF); -1 leaves the OS default."),
    _row("receive.buffer.bytes", 32768, "int", _int(-1),
         "Socket receive buffer (SO_RCVBUF); -1 leaves the OS default."),
    # partitioning
    _row("partitioner.class", None, "class", _CALLABLE,
         "Custom partitioner(topic, key_bytes, value_bytes, num_partitions, available) -> int."),
    _row("partitioner.ignore.keys", False, "boolean", _BOOL,
         "Send keyed records the sticky way too, ignoring their keys."),
    _row("partitioner.adaptive.partitioning.enable", True, "boolean", _BOOL,
         "Let the sticky partitioner favour partitions whose brokers keep up (queue sizes)."),
    _row("partitioner.availability.timeout.ms", 0, "long", _long(0),
         "Skip partitions whose leader has not taken data for this long (0: never skip)."),
    # the record's bytes
    _row("key.serializer", None, "class", _CALLABLE,
         "Turns a key into bytes: serializer(topic, key), serializer(key) (kafka-python) or a "
         "confluent-kafka Serializer (key, ctx), -> bytes | None; None: keys are bytes."),
    _row("value.serializer", None, "class", _CALLABLE,
         "Turns a value into bytes, like key.serializer."),
    _row("interceptor.classes", (), "list",
         (_interceptors, "a list of objects with on_send and on_acknowledgement"),
         "Objects that see each record before it is sent and each acknowledgement."),
    # transactions
    _row("transactional.id", None, "string", (_transactional_id, "a non-empty string, or None"),
         "Names the producer across restarts: enables transactions (and needs idempotence); "
         "a new producer with the same id fences the old one."),
    _row("transaction.timeout.ms", 60000, "int", _int(1),
         "How long the coordinator lets a transaction stay open before it aborts it."),
)
# fmt: on

#: Settings by Java name.
SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
_BY_KEYWORD: dict[str, Setting] = {s.keyword: s for s in SETTINGS}

# Java producer settings kafkacore does not have: naming them gets a clearer error than
# "unknown".  Whole families are matched by prefix.
_JAVA_ONLY = (
    "client.dns.lookup",
    "enable.metrics.push",
    "metrics.sample.window.ms",
    "metrics.num.samples",
    "metrics.recording.level",
    "metric.reporters",
    "metadata.recovery.strategy",
    "security.providers",
)
_JAVA_ONLY_PREFIXES = ("ssl.", "sasl.")


def _canonical(key: str) -> str:
    return ALIASES.get(key, key)


_KNOWN_NAMES = sorted({*SETTINGS_BY_NAME, *ALIASES, *CONVERTED_ALIASES, *LIBRDKAFKA_SETTINGS})


def _suggest(key: str) -> str:
    dotted = key.replace("_", ".")
    if dotted in SETTINGS_BY_NAME:
        return f"; did you mean {dotted!r}?"
    close = difflib.get_close_matches(key, _KNOWN_NAMES, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _librdkafka_name(key: str) -> str | None:
    """``key`` as a librdkafka (or confluent-kafka) setting name that is not one of ours, or
    None; a keyword (``statistics_interval_ms``) is read in its dotted form."""
    for name in (key, key.replace("_", ".")):
        if name in SETTINGS_BY_NAME or name in ALIASES or name in CONVERTED_ALIASES:
            return None
        if (name in LIBRDKAFKA_SETTINGS or name in CONFLUENT_PYTHON_SETTINGS) and (
                name not in NO_COUNTERPART):
            return name
    return None


def _unknown(key: str) -> ConfigError:
    if key in NO_COUNTERPART:
        return ConfigError(f"{key!r} is a librdkafka setting that kafkacore has no counterpart "
                           f"for: {NO_COUNTERPART[key]}")
    if key in _JAVA_ONLY or key.startswith(_JAVA_ONLY_PREFIXES):
        return ConfigError(f"{key!r} is a Java producer setting that kafkacore does not support")
    return ConfigError(f"unknown setting {key!r}{_suggest(key)}")


class ProducerConfig(Mapping[str, Any]):
    """The checked settings of one producer: a read-only mapping by Java name.

    ``ProducerConfig({"bootstrap.servers": "h:9092", "linger.ms": 5})`` or
    ``ProducerConfig(bootstrap_servers="h:9092", linger_ms=5)``, or both mixed, as long as no
    setting is given twice.  Read values as ``cfg["linger.ms"]`` or ``cfg.linger_ms``;
    ``cfg.explicit`` is the set of names the user gave.  Every problem is a
    :class:`~kafkacore.errors.ConfigError` that names the setting.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **settings: Any) -> None:
        given: dict[str, Any] = {}
        aliased: dict[str, str] = {}  # a setting given under another client's name: that name
        librdkafka: dict[str, Any] = {}  # librdkafka's settings that are not ours, as given
        if config is not None:
            if not isinstance(config, Mapping):
                raise ConfigError(f"config must be a dict of settings, not {type(config).__name__}")
            for key, value in config.items():
                if not isinstance(key, str):
                    raise ConfigError(f"setting names are strings, not {key!r}")
                if key in NOT_NEEDED:
                    log.info("%s: ignored (%s)", key, NOT_NEEDED[key])
                    continue
                if key in CONVERTED_ALIASES:
                    name, convert = CONVERTED_ALIASES[key]
                    try:
                        key, value = name, convert(value)
                    except _Invalid as exc:
                        raise ConfigError(f"invalid value {value!r} for {key!r} ({exc})") from None
                if key in ALIASES:
                    aliased[ALIASES[key]] = key
                key = _canonical(key)
                if key not in SETTINGS_BY_NAME and (theirs := _librdkafka_name(key)):
                    librdkafka[theirs] = value
                    continue
                if key not in SETTINGS_BY_NAME:
                    raise _unknown(key)
                if key in given:
                    raise ConfigError(f"{key!r} given twice (under its own name and an alias)")
                given[key] = value
        for keyword, value in settings.items():
            if keyword in NOT_NEEDED:
                log.info("%s: ignored (%s)", keyword, NOT_NEEDED[keyword])
                continue
            setting = _BY_KEYWORD.get(keyword)
            if setting is None and (theirs := _librdkafka_name(keyword)):
                if theirs in librdkafka:
                    raise ConfigError(f"{theirs!r} given twice: in the dict and as keyword "
                                      f"{keyword}=")
                librdkafka[theirs] = value
                continue
            if setting is None:
                raise _unknown(keyword)
            if setting.name in given:
                raise ConfigError(
                    f"{setting.name!r} given twice: in the dict and as keyword {keyword}="
                )
            given[setting.name] = value

        values: dict[str, Any] = {}
        for setting in SETTINGS:
            explicit = setting.name in given
            raw = given[setting.name] if explicit else setting.default
            if setting.name == "bootstrap.servers" and raw is None:
                raise ConfigError("'bootstrap.servers' is required (e.g. 'localhost:9092')")
            try:
                values[setting.name] = setting.check(raw)
            except _Invalid as exc:
                shown = "[hidden]" if setting.name in SECRET_SETTINGS else repr(raw)
                raise ConfigError(
                    f"invalid value {shown} for {setting.name!r} ({exc}): "
                    f"allowed is {setting.allowed}"
                ) from None
        self._values = values
        self._explicit = frozenset(given)
        self._aliased = aliased
        self._librdkafka_settings(librdkafka)
        self._cross_check()

    def _librdkafka_settings(self, given: dict[str, Any]) -> None:
        """librdkafka's settings that are not ours: check and keep those with a meaning here
        (:data:`LIBRDKAFKA_MAPPED`), turn ``partitioner`` and ``compression.level`` into our
        settings, and name the rest in one warning."""
        self.librdkafka: dict[str, Any] = {}
        without_effect = []
        for name, value in given.items():
            if name not in LIBRDKAFKA_MAPPED:
                without_effect.append(name)
                continue
            check, allowed = LIBRDKAFKA_MAPPED[name]
            try:
                self.librdkafka[name] = check(value)
            except _Invalid as exc:
                raise ConfigError(f"invalid value {value!r} for {name!r} ({exc}): allowed is "
                                  f"{allowed.split(':')[0]}") from None
        v = self._values
        partitioner = self.librdkafka.pop("partitioner", None)
        if partitioner is not None:
            if "partitioner.class" in self._explicit:
                raise ConfigError("'partitioner' (librdkafka's) and 'partitioner.class' both "
                                  "given: give one")
            v["partitioner.class"] = PARTITIONERS[partitioner]  # None: our own, the same
        level = self.librdkafka.pop("compression.level", None)
        codec = v["compression.type"]
        if level is not None and level != -1 and codec in ("gzip", "lz4", "zstd"):
            key = f"compression.{codec}.level"
            if key in self._explicit:
                raise ConfigError(f"'compression.level' and {key!r} both given: give one")
            try:
                v[key] = SETTINGS_BY_NAME[key].check(level)
            except _Invalid:
                raise ConfigError(f"invalid value {level!r} for 'compression.level' with "
                                  f"{codec}: allowed is {SETTINGS_BY_NAME[key].allowed}") from None
        self.without_effect = tuple(without_effect)
        if without_effect:
            log.warning("librdkafka settings accepted without effect in kafkacore: %s",
                        "; ".join(f"{n} ({LIBRDKAFKA_WITHOUT_EFFECT[n]})"
                                  if n in LIBRDKAFKA_WITHOUT_EFFECT else n
                                  for n in without_effect))

    # -- the rules that tie settings together ------------------------------------------------

    def _cross_check(self) -> None:
        v = self._values
        explicit = self._explicit

        # Idempotence (Java's postProcessAndValidateIdempotenceConfigs).  If the user asked for
        # it, a setting that breaks it is an error; if it is only the default, it is turned off.
        if v["enable.idempotence"]:
            conflicts = []
            if v["retries"] == 0:
                conflicts.append("'retries' must be non-zero")
            if v["acks"] != -1:
                conflicts.append("'acks' must be all")
            if v["max.in.flight.requests.per.connection"] > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
                conflicts.append(
                    "'max.in.flight.requests.per.connection' must be at most "
                    f"{MAX_IN_FLIGHT_FOR_IDEMPOTENCE}"
                )
            if conflicts:
                if v["transactional.id"] is not None:
                    raise ConfigError(
                        "'transactional.id' is set, which needs idempotence, so "
                        + " and ".join(conflicts))
                if "enable.idempotence" in explicit:
                    raise ConfigError("'enable.idempotence' is true, so " + " and ".join(conflicts))
                log.info("idempotence disabled: %s for the idempotent producer", conflicts)
                v["enable.idempotence"] = False

        # A transactional producer is an idempotent one (Java: "Cannot set a transactional.id
        # without also enabling idempotence").
        if v["transactional.id"] is not None and not v["enable.idempotence"]:
            raise ConfigError("'transactional.id' is set, so 'enable.idempotence' must be true")

        # Delivery timeout (Java's configureDeliveryTimeout): a record must be allowed to linger
        # and then wait for one request, or it could expire before it was ever sent.
        floor = min(v["linger.ms"] + v["request.timeout.ms"], INT_MAX)
        if (v["delivery.timeout.ms"] < floor and self._aliased.get("delivery.timeout.ms")
                == "message.timeout.ms" and "request.timeout.ms" not in explicit
                and v["delivery.timeout.ms"] > v["linger.ms"]):
            # librdkafka's message.timeout.ms bounds a message's whole life, its requests'
            # waits included: shorten the request timeout to fit, as librdkafka does.
            v["request.timeout.ms"] = v["delivery.timeout.ms"] - v["linger.ms"]
            log.info("request.timeout.ms lowered to %d to fit message.timeout.ms",
                     v["request.timeout.ms"])
            floor = v["delivery.timeout.ms"]
        if v["delivery.timeout.ms"] < floor:
            if "delivery.timeout.ms" in explicit:
                raise ConfigError(
                    f"'delivery.timeout.ms' ({v['delivery.timeout.ms']}) must be at least "
                    f"'linger.ms' + 'request.timeout.ms' ({v['linger.ms']} + "
                    f"{v['request.timeout.ms']} = {floor})"
                )
            log.warning("delivery.timeout.ms raised to linger.ms + request.timeout.ms = %d", floor)
            v["delivery.timeout.ms"] = floor

        # A batch buffer comes out of buffer.memory; a batch larger than all of it could never be
        # allocated and every send() would block for max.block.ms and fail.  (Java lets this pass
        # and fails at send time; we say so at once.)
        if v["batch.size"] > v["buffer.memory"]:
            raise ConfigError(
                f"'batch.size' ({v['batch.size']}) must not exceed "
                f"'buffer.memory' ({v['buffer.memory']})"
            )

        # SASL needs a mechanism kafkacore speaks (Java's default GSSAPI, Kerberos, it does not).
        if v["security.protocol"].startswith("SASL_") and v["sasl.mechanism"] == "GSSAPI":
            raise ConfigError(
                f"'security.protocol' is {v['security.protocol']}: set 'sasl.mechanism' to one of "
                f"{', '.join(SASL_MECHANISMS)} (GSSAPI/Kerberos is not supported)"
            )

        # Java's postProcessReconnectBackoffConfigs: a user who set only reconnect.backoff.ms
        # asked for a fixed backoff, so the maximum follows it.
        if "reconnect.backoff.ms" in explicit and "reconnect.backoff.max.ms" not in explicit:
            v["reconnect.backoff.max.ms"] = v["reconnect.backoff.ms"]

        # Java warns (and then uses the maximum as a fixed value) for these two pairs.
        for base, top in (
            ("retry.backoff.ms", "retry.backoff.max.ms"),
            ("socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms"),
        ):
            if v[base] > v[top]:
                log.warning(
                    "%s (%d) > %s (%d): %d is used throughout", base, v[base], top, v[top], v[top]
                )

    # -- reading -------------------------------------------------------------------------------

    @property
    def explicit(self) -> frozenset[str]:
        """The names of the settings the user gave (the rest are defaults)."""
        return self._explicit

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"unknown setting {name!r}{_suggest(name)}") from None

    def __getattr__(self, keyword: str) -> Any:
        setting = _BY_KEYWORD.get(keyword)
        if setting is None or keyword.startswith("_"):
            raise AttributeError(f"ProducerConfig has no setting {keyword!r}{_suggest(keyword)}")
        return self._values[setting.name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        given = ", ".join(
            f"{k!r}: {'[hidden]' if k in SECRET_SETTINGS else repr(self._values[k])}"
            for k in SETTINGS_BY_NAME
            if k in self._explicit
        )
        return f"ProducerConfig({{{given}}})"

    def describe(self) -> str:
        """A readable table of every setting: value, default, and ``*`` where the user set it.

        Values that differ from the default without being set (``enable.idempotence`` turned off by
        a conflicting setting, a raised ``delivery.timeout.ms``) are marked ``~``.
        """
        rows = []
        for setting in SETTINGS:
            value = self._values[setting.name]
            default = _default_value(setting)
            if setting.name in self._explicit:
                mark = "*"
            elif value != default:
                mark = "~"
            else:
                mark = " "
            shown = "[hidden]" if setting.name in SECRET_SETTINGS and value else _show(value)
            rows.append((setting.name, shown, _show(default), mark))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        head = f"  {'setting':<{widths[0]}}  {'value':<{widths[1]}}  default"
        lines = [head, "  " + "-" * (len(head) - 2)]
        for name, value, default, mark in rows:
            lines.append(f"{mark} {name:<{widths[0]}}  {value:<{widths[1]}}  {default}")
        lines.append("(* set by you, ~ changed by a rule that ties settings together)")
        return "\n".join(lines)


def _default_value(setting: Setting) -> Any:
    if setting.default is None and setting.name == "bootstrap.servers":
        return None
    return setting.check(setting.default)


def _show(value: Any) -> str:
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in value)
    if callable(value):
        return getattr(value, "__qualname__", None) or repr(value)
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def settings_rst_table() -> str:
    """The settings table as a reStructuredText list-table (the docs include it at build time)."""
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 28 14 22 36",
        "",
        "   * - Setting",
        "     - Default",
        "     - Allowed",
        "     - What it does",
    ]
    for s in SETTINGS:
        if s.name == "bootstrap.servers":
            default = "(required)"
        elif s.default == "":
            default = '""'
        else:
            default = _show(s.default) if s.default != () else "[]"
        lines += [
            f"   * - ``{s.name}``",
            f"     - ``{default}``",
            f"     - {_rst_escape(s.allowed)}",
            f"     - {_rst_escape(s.doc)}",
        ]
    return "\n".join(lines) + "\n"


def _rst_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`").replace("|", "\\|")
