"""ProducerConfig: defaults, coercion, errors that name their key, and Java's cross-checks."""

from __future__ import annotations

import logging

import pytest

from kafkacore.config import SETTINGS, SETTINGS_BY_NAME, ProducerConfig, settings_rst_table
from kafkacore.errors import ConfigError

BOOT = {"bootstrap.servers": "localhost:9092"}

# Kafka 4.0's Java producer defaults, written out by hand from ProducerConfig.java /
# CommonClientConfigs.java (linger.ms is 5 since KIP-1030), in their coerced form.
KAFKA4_DEFAULTS = {
    "client.id": "",
    "security.protocol": "PLAINTEXT",
    "ssl.truststore.type": "PEM",
    "ssl.truststore.location": None,
    "ssl.truststore.certificates": None,
    "ssl.keystore.type": "PEM",
    "ssl.keystore.location": None,
    "ssl.key.location": None,
    "ssl.keystore.key": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.key.password": None,
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "sasl.mechanism": "GSSAPI",
    "sasl.jaas.config": None,
    "sasl.username": None,
    "sasl.password": None,
    "sasl.oauthbearer.token.provider": None,
    "sasl.oauthbearer.config": None,
    "acks": -1,
    "enable.idempotence": True,
    "retries": 2147483647,
    "max.in.flight.requests.per.connection": 5,
    "linger.ms": 5,
    "batch.size": 16384,
    "buffer.memory": 33554432,
    "max.request.size": 1048576,
    "compression.type": "none",
    "compression.gzip.level": -1,
    "compression.lz4.level": 9,
    "compression.zstd.level": 3,
    "max.block.ms": 60000,
    "delivery.timeout.ms": 120000,
    "request.timeout.ms": 30000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "metadata.max.age.ms": 300000,
    "metadata.max.idle.ms": 300000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1000,
    "socket.connection.setup.timeout.ms": 10000,
    "socket.connection.setup.timeout.max.ms": 30000,
    "connections.max.idle.ms": 540000,
    "send.buffer.bytes": 131072,
    "receive.buffer.bytes": 32768,
    "partitioner.class": None,
    "partitioner.ignore.keys": False,
    "partitioner.adaptive.partitioning.enable": True,
    "partitioner.availability.timeout.ms": 0,
    "key.serializer": None,
    "value.serializer": None,
    "interceptor.classes": (),
    "transactional.id": None,
    "transaction.timeout.ms": 60000,
}

# Settings Java has no need for (a JVM has no interpreter exit to bound), with their defaults.
KAFKACORE_ONLY = {"close.timeout.at.exit.ms": 10000}


def test_every_default_is_kafka4s():
    cfg = ProducerConfig(BOOT)
    assert set(cfg) == set(KAFKA4_DEFAULTS) | set(KAFKACORE_ONLY) | {"bootstrap.servers"}
    for name, expected in {**KAFKA4_DEFAULTS, **KAFKACORE_ONLY}.items():
        assert cfg[name] == expected, name
        assert type(cfg[name]) is type(expected), name
    assert cfg["bootstrap.servers"] == [("localhost", 9092)]
    assert cfg.explicit == frozenset({"bootstrap.servers"})


def test_table_is_consistent():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    for s in SETTINGS:
        assert (
            s.doc
            and s.allowed
            and s.type in {"int", "long", "boolean", "string", "list", "class", "password"}
        )
        assert s.keyword == s.name.replace(".", "_")
    assert SETTINGS_BY_NAME["linger.ms"].default == 5


def test_keywords_and_dict_and_attribute_access():
    cfg = ProducerConfig({"linger.ms": 7}, bootstrap_servers="h:1", batch_size=1000)
    assert cfg["linger.ms"] == cfg.linger_ms == 7
    assert cfg.batch_size == 1000
    assert cfg.explicit == {"linger.ms", "bootstrap.servers", "batch.size"}
    assert dict(cfg)["batch.size"] == 1000 and len(cfg) == len(SETTINGS)
    with pytest.raises(AttributeError, match="lingerms"):
        cfg.lingerms  # noqa: B018
    with pytest.raises(KeyError, match="linger.ms"):
        cfg["linger_ms"]


def test_same_key_twice_is_an_error():
    with pytest.raises(ConfigError, match="'linger.ms' given twice"):
        ProducerConfig({"linger.ms": 1, **BOOT}, linger_ms=2)


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("linger_ms", "linger.ms"),
        ("lingr.ms", "linger.ms"),
        ("batch.sise", "batch.size"),
        ("bootstrap.server", "bootstrap.servers"),
    ],
)
def test_unknown_key_suggests_closest(key, hint):
    with pytest.raises(ConfigError, match=rf"unknown setting '{key}'; did you mean '{hint}'"):
        ProducerConfig({key: 1, **BOOT})


def test_unknown_keyword_suggests_closest():
    with pytest.raises(ConfigError, match="did you mean 'linger.ms'"):
        ProducerConfig(BOOT, linger_mss=1)
    with pytest.raises(ConfigError, match="unknown setting 'zzzz'$"):
        ProducerConfig(BOOT, zzzz=1)


# (librdkafka's ssl.keystore.password, sasl.kerberos.service.name and client.dns.lookup are
# accepted without effect: tests/test_compat_librdkafka_settings.py)
@pytest.mark.parametrize(
    "key", ["ssl.truststore.password", "sasl.login.callback.handler.class", "metrics.num.samples"]
)
def test_java_only_settings_say_so(key):
    with pytest.raises(ConfigError, match="Java producer setting that kafkacore does not support"):
        ProducerConfig({key: "x", **BOOT})


def test_config_must_be_a_mapping_with_string_keys():
    with pytest.raises(ConfigError, match="dict"):
        ProducerConfig([("linger.ms", 1)])
    with pytest.raises(ConfigError, match="strings"):
        ProducerConfig({1: 2, **BOOT})


# -- bootstrap.servers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a:1", [("a", 1)]),
        ("a:1, b:2 ,", [("a", 1), ("b", 2)]),
        (["a:1", "b:2"], [("a", 1), ("b", 2)]),
        ([("a", 1), "b:2"], [("a", 1), ("b", 2)]),
        (("a", 1), [("a", 1)]),
        ("[::1]:9092", [("::1", 9092)]),
        ("[fe80::1%eth0]:9093,host.example:9094", [("fe80::1%eth0", 9093), ("host.example", 9094)]),
        (["a:9092"], [("a", 9092)]),
        ("a:65535", [("a", 65535)]),
    ],
)
def test_bootstrap_servers_coercion(value, expected):
    assert ProducerConfig(bootstrap_servers=value)["bootstrap.servers"] == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        " , ",
        "a",
        "a:",
        ":1",
        "a:0",
        "a:65536",
        "a:x",
        "::1:9092",
        "[::1]9092",
        "[::1",
        5,
        [],
        [5],
        [("a", "x")],
        [(5, 1)],
        "a b:1",
        None,
    ],
)
def test_bootstrap_servers_rejected(value):
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        ProducerConfig(bootstrap_servers=value)


def test_bootstrap_servers_required():
    with pytest.raises(ConfigError, match="'bootstrap.servers' is required"):
        ProducerConfig()
    with pytest.raises(ConfigError, match="'bootstrap.servers' is required"):
        ProducerConfig(linger_ms=1)


# -- scalar coercions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("all", -1), ("-1", -1), (-1, -1), ("0", 0), (0, 0), ("1", 1), (1, 1), (" all ", -1)],
)
def test_acks(value, expected):
    cfg = ProducerConfig(BOOT, acks=value, enable_idempotence=False)
    assert cfg.acks == expected


@pytest.mark.parametrize("value", ["ALL", "2", 2, -2, True, None, 1.0, "one"])
def test_acks_rejected(value):
    with pytest.raises(ConfigError, match=r"'acks'.*allowed is all, -1, 0 or 1"):
        ProducerConfig(BOOT, acks=value, enable_idempotence=False)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("false", False),
        (" TRUE ", True),
        ("False", False),
    ],
)
def test_booleans(value, expected):
    assert ProducerConfig(BOOT, partitioner_ignore_keys=value).partitioner_ignore_keys is expected


@pytest.mark.parametrize("value", [1, 0, "yes", "1", None, 1.0])
def test_booleans_rejected(value):
    with pytest.raises(ConfigError, match=r"'partitioner.ignore.keys'.*true or false"):
        ProducerConfig(BOOT, partitioner_ignore_keys=value)


@pytest.mark.parametrize(("value", "expected"), [(7, 7), ("7", 7), (" 7 ", 7), (7.0, 7), (0, 0)])
def test_integers(value, expected):
    cfg = ProducerConfig(BOOT, linger_ms=value)
    assert cfg.linger_ms == expected and type(cfg.linger_ms) is int


@pytest.mark.parametrize(
    "value", [7.5, "7.5", "seven", True, False, None, -1, "-1", float("nan"), float("inf"), [7]]
)
def test_integers_rejected(value):
    with pytest.raises(ConfigError) as info:
        ProducerConfig(BOOT, linger_ms=value)
    text = str(info.value)
    assert "'linger.ms'" in text and repr(value) in text and "an integer >= 0" in text


def test_int_settings_are_32_bit_and_long_settings_64_bit():
    ProducerConfig(BOOT, retries=2**31 - 1)
    with pytest.raises(ConfigError, match="'retries'"):
        ProducerConfig(BOOT, retries=2**31)
    assert ProducerConfig(BOOT, buffer_memory=2**40).buffer_memory == 2**40
    with pytest.raises(ConfigError, match="'buffer.memory'"):
        ProducerConfig(BOOT, buffer_memory=2**63)


@pytest.mark.parametrize(
    ("key", "bad", "good"),
    [
        ("max.in.flight.requests.per.connection", 0, 1),
        ("metadata.max.idle.ms", 4999, 5000),
        ("send.buffer.bytes", -2, -1),
        ("receive.buffer.bytes", -2, -1),
        ("connections.max.idle.ms", -2, -1),
        ("batch.size", -1, 0),
        ("max.block.ms", -1, 0),
        ("request.timeout.ms", -1, 0),
        ("retry.backoff.ms", -1, 0),
        ("partitioner.availability.timeout.ms", -1, 0),
    ],
)
def test_lower_bounds(key, bad, good):
    settings = {**BOOT, key: good}
    if key == "request.timeout.ms":
        settings["delivery.timeout.ms"] = 120000
    assert ProducerConfig(settings)[key] == good
    with pytest.raises(ConfigError, match=rf"'{key}'"):
        ProducerConfig({**settings, key: bad})


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd", "ZSTD", " lz4 "])
def test_compression_types(codec):
    assert ProducerConfig(BOOT, compression_type=codec).compression_type == codec.strip().lower()


@pytest.mark.parametrize("codec", ["brotli", "", None, 1, "gzip9"])
def test_compression_type_rejected(codec):
    with pytest.raises(ConfigError, match=r"'compression.type'.*none, gzip, snappy, lz4 or zstd"):
        ProducerConfig(BOOT, compression_type=codec)


@pytest.mark.parametrize(
    ("key", "good", "bad"),
    [
        ("compression.gzip.level", [-1, 1, 5, 9, "9"], [0, -2, 10, 1.5]),
        ("compression.lz4.level", [1, 9, 17], [0, 18, -1]),
        ("compression.zstd.level", [-131072, -1, 0, 3, 22], [-131073, 23]),
    ],
)
def test_compression_levels(key, good, bad):
    for value in good:
        assert ProducerConfig({**BOOT, key: value})[key] == int(value)
    for value in bad:
        with pytest.raises(ConfigError, match=rf"'{key}'"):
            ProducerConfig({**BOOT, key: value})


def test_client_id():
    assert ProducerConfig(BOOT, client_id="app-1").client_id == "app-1"
    with pytest.raises(ConfigError, match="'client.id'"):
        ProducerConfig(BOOT, client_id=5)


# -- callables and interceptors -------------------------------------------------------------------


def _ser(topic, value):
    return value


@pytest.mark.parametrize("key", ["key.serializer", "value.serializer", "partitioner.class"])
def test_callables(key):
    assert ProducerConfig({**BOOT, key: _ser})[key] is _ser
    assert ProducerConfig({**BOOT, key: None})[key] is None
    with pytest.raises(ConfigError, match=rf"'{key}'.*class name is not a callable"):
        ProducerConfig({**BOOT, key: "org.apache.kafka.common.serialization.StringSerializer"})
    with pytest.raises(ConfigError, match=rf"'{key}'.*not callable"):
        ProducerConfig({**BOOT, key: 5})


class _Interceptor:
    def __init__(self):
        self.closed = False

    def on_send(self, *record):
        return None

    def on_acknowledgement(self, metadata, exception):
        pass

    def close(self):
        self.closed = True


class _NoAck:
    def on_send(self, *record):
        return None


def test_interceptors():
    a, b = _Interceptor(), _Interceptor()
    assert ProducerConfig(BOOT, interceptor_classes=[a, b]).interceptor_classes == (a, b)
    assert ProducerConfig(BOOT, interceptor_classes=None).interceptor_classes == ()
    with pytest.raises(ConfigError, match=r"'interceptor.classes'.*on_acknowledgement"):
        ProducerConfig(BOOT, interceptor_classes=[_NoAck()])
    with pytest.raises(ConfigError, match="'interceptor.classes'"):
        ProducerConfig(BOOT, interceptor_classes=a)
    bad_close = _Interceptor()
    bad_close.close = 3
    with pytest.raises(ConfigError, match="close"):
        ProducerConfig(BOOT, interceptor_classes=[bad_close])


# -- transactions ---------------------------------------------------------------------------------


def test_transactional_id_checks():
    assert ProducerConfig(BOOT, transactional_id="tx-1")["transactional.id"] == "tx-1"
    assert ProducerConfig(BOOT, transactional_id=None)["transactional.id"] is None
    with pytest.raises(ConfigError, match="'transactional.id'.*empty string"):
        ProducerConfig(BOOT, transactional_id="")
    with pytest.raises(ConfigError, match="'transactional.id'.*not int"):
        ProducerConfig(BOOT, transactional_id=7)
    with pytest.raises(ConfigError, match="'transaction.timeout.ms'"):
        ProducerConfig(BOOT, transaction_timeout_ms=0)


def test_transactional_id_needs_idempotence():
    with pytest.raises(ConfigError, match="'enable.idempotence' must be true"):
        ProducerConfig(BOOT, transactional_id="tx-1", enable_idempotence=False)
    # acks=1 would turn default idempotence off; with a transactional id it is an error instead.
    with pytest.raises(ConfigError, match="'transactional.id' is set.*'acks' must be all"):
        ProducerConfig(BOOT, transactional_id="tx-1", acks=1)
    assert ProducerConfig(BOOT, transactional_id="tx-1")["enable.idempotence"] is True


@pytest.mark.parametrize("proto", ["SSL", "SASL_PLAINTEXT", "sasl_ssl"])
def test_security_protocols(proto):
    extra = {} if proto == "SSL" else {"sasl_mechanism": "PLAIN"}
    assert ProducerConfig(BOOT, security_protocol=proto, **extra).security_protocol == proto.upper()


def test_sasl_needs_a_mechanism_kafkacore_speaks():
    with pytest.raises(ConfigError, match="GSSAPI"):
        ProducerConfig(BOOT, security_protocol="SASL_SSL")


def test_security_protocol():
    assert ProducerConfig(BOOT, security_protocol="plaintext").security_protocol == "PLAINTEXT"
    with pytest.raises(ConfigError, match="'security.protocol'.*not a security protocol"):
        ProducerConfig(BOOT, security_protocol="TLS")


# -- Java's rules that tie settings together ------------------------------------------------------


@pytest.mark.parametrize(
    ("conflict", "message"),
    [
        ({"acks": "1"}, "'acks' must be all"),
        ({"acks": 0}, "'acks' must be all"),
        ({"retries": 0}, "'retries' must be non-zero"),
        (
            {"max.in.flight.requests.per.connection": 6},
            "'max.in.flight.requests.per.connection' must be at most 5",
        ),
    ],
)
def test_idempotence_conflicts(conflict, message, caplog):
    # Asked for explicitly: an error.
    with pytest.raises(ConfigError, match=f"'enable.idempotence' is true, so {message}"):
        ProducerConfig({**BOOT, "enable.idempotence": True, **conflict})
    # Only the default: quietly off (Java logs it).
    with caplog.at_level(logging.INFO, logger="kafkacore.config"):
        cfg = ProducerConfig({**BOOT, **conflict})
    assert cfg.enable_idempotence is False
    assert "enable.idempotence" not in cfg.explicit
    assert "idempotence disabled" in caplog.text
    # Explicitly off: no conflict.
    assert (
        ProducerConfig({**BOOT, "enable.idempotence": "false", **conflict}).enable_idempotence
        is False
    )


def test_idempotence_kept_without_conflicts():
    cfg = ProducerConfig(BOOT, acks="all", retries=3, max_in_flight_requests_per_connection=5)
    assert cfg.enable_idempotence is True


def test_delivery_timeout_rule():
    # Set explicitly and too small: an error naming the three settings.
    with pytest.raises(
        ConfigError,
        match=r"'delivery.timeout.ms' \(30004\) must be at least "
        r"'linger.ms' \+ 'request.timeout.ms' \(5 \+ 30000",
    ):
        ProducerConfig(BOOT, delivery_timeout_ms=30004)
    assert ProducerConfig(BOOT, delivery_timeout_ms=30005).delivery_timeout_ms == 30005
    # Only the default is too small: raised to the sum (Java's backward-compatible rule).
    cfg = ProducerConfig(BOOT, linger_ms=100000, request_timeout_ms=50000)
    assert cfg.delivery_timeout_ms == 150000
    assert "delivery.timeout.ms" not in cfg.explicit
    # Capped at the 32-bit maximum, as Java computes it.
    cfg = ProducerConfig(BOOT, linger_ms=2**40, request_timeout_ms=30000)
    assert cfg.delivery_timeout_ms == 2**31 - 1


def test_batch_size_larger_than_buffer_memory():
    with pytest.raises(
        ConfigError,
        match=r"'batch.size' \(2048\) must not exceed 'buffer.memory' "
        r"\(1024\)",
    ):
        ProducerConfig(BOOT, batch_size=2048, buffer_memory=1024)
    assert ProducerConfig(BOOT, batch_size=1024, buffer_memory=1024).batch_size == 1024


def test_reconnect_backoff_max_follows_when_only_base_is_set():
    assert ProducerConfig(BOOT, reconnect_backoff_ms=300).reconnect_backoff_max_ms == 300
    cfg = ProducerConfig(BOOT, reconnect_backoff_ms=300, reconnect_backoff_max_ms=5000)
    assert cfg.reconnect_backoff_max_ms == 5000
    assert ProducerConfig(BOOT).reconnect_backoff_max_ms == 1000


def test_backoff_above_max_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="kafkacore.config"):
        cfg = ProducerConfig(BOOT, retry_backoff_ms=5000)
    assert cfg.retry_backoff_ms == 5000
    assert "retry.backoff.ms (5000) > retry.backoff.max.ms (1000)" in caplog.text


def test_every_setting_names_itself_in_its_errors():
    bad_value = object()
    for s in SETTINGS:
        with pytest.raises(ConfigError) as info:
            ProducerConfig({**BOOT, s.name: bad_value})
        assert repr(s.name) in str(info.value), s.name


# -- describe and the docs table ------------------------------------------------------------------


def test_describe_marks_explicit_and_derived_values():
    cfg = ProducerConfig(BOOT, acks=1, linger_ms=20)
    text = cfg.describe()
    lines = {line[2:].split()[0]: line for line in text.splitlines()[2:-1]}
    assert len(lines) == len(SETTINGS)
    assert lines["acks"].startswith("* ") and lines["acks"][2:].split()[1:] == ["1", "-1"]
    assert lines["linger.ms"].startswith("* ")
    assert lines["enable.idempotence"].startswith("~ ")  # turned off by acks=1
    assert lines["batch.size"].startswith("  ") and "16384" in lines["batch.size"]
    assert "localhost:9092" in lines["bootstrap.servers"]
    assert "[::1]:1" in ProducerConfig(bootstrap_servers="[::1]:1").describe()


def test_rst_table_has_a_row_per_setting():
    table = settings_rst_table()
    for s in SETTINGS:
        assert f"   * - ``{s.name}``\n" in table
    assert table.count("   * - ``") == len(SETTINGS)
    assert "``(required)``" in table and "``16384``" in table


def test_repr_shows_explicit_settings():
    assert repr(ProducerConfig(BOOT, linger_ms=1)) == (
        "ProducerConfig({'bootstrap.servers': [('localhost', 9092)], 'linger.ms': 1})"
    )


def test_seed_001_properties_mean_the_same():
    # A typical Java producer's settings, as a Properties file would hold them: all strings.
    cfg = ProducerConfig(
        {
            "bootstrap.servers": "192.0.2.10:9092",
            "compression.type": "lz4",
            "linger.ms": "500",
            "batch.size": "100000",
            "max.in.flight.requests.per.connection": "1",
        }
    )
    assert (cfg.compression_type, cfg.linger_ms, cfg.batch_size) == ("lz4", 500, 100000)
    assert cfg.max_in_flight_requests_per_connection == 1
    assert cfg.enable_idempotence is True  # one in flight is compatible with idempotence
    assert cfg.delivery_timeout_ms == 120000  # 500 + 30000 is below the default
