"""The reader's settings, by the Java consumer's names.

The security and connection settings are the producer's own rows (:mod:`kafkacore.config`),
checked by the same functions, so TLS and SASL are set up exactly as ``KafkaProducer`` does;
the rest are the Java consumer's, with its defaults.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from kafkacore.config import SECRET_SETTINGS, SETTINGS_BY_NAME, Setting, _int_range, _Invalid
from kafkacore.errors import ConfigError

__all__ = ["ConsumerConfig", "CONSUMER_SETTINGS"]

INT_MAX = 2**31 - 1


def _isolation_level(value: Any) -> str:
    if value not in ("read_uncommitted", "read_committed"):
        raise _Invalid("not an isolation level")
    return str(value)


def _check_crcs(value: Any) -> bool:
    # The reader always checks (the bytes are untrusted); accepted so Java configs carry over.
    if value not in (True, "true", "True"):
        raise _Invalid("the reader always checks CRCs")
    return True


def _row(name: str, default: Any, check: Any, allowed: str, doc: str) -> Setting:
    return Setting(name, default, "consumer", check, allowed, doc)


# The producer's rows the reader shares: where, who, and how to connect.
_SHARED = (
    "bootstrap.servers",
    "client.id",
    "security.protocol",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "metadata.max.age.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "socket.connection.setup.timeout.ms",
    "connections.max.idle.ms",
    "send.buffer.bytes",
)

#: Every setting the reader takes, by Java name.
CONSUMER_SETTINGS: dict[str, Setting] = {
    **{name: SETTINGS_BY_NAME[name] for name in _SHARED},
    **{name: s for name, s in SETTINGS_BY_NAME.items() if name.startswith(("ssl.", "sasl."))},
    # fmt: off
    "isolation.level": _row("isolation.level", "read_uncommitted", _isolation_level,
                            "read_uncommitted or read_committed",
                            "read_committed: only committed transactions, up to the LSO."),
    "fetch.max.bytes": _row("fetch.max.bytes", 52428800, _int_range(1, INT_MAX),
                            "an int >= 1", "Most bytes one Fetch response may carry."),
    "max.partition.fetch.bytes": _row("max.partition.fetch.bytes", 1048576,
                                      _int_range(1, INT_MAX), "an int >= 1",
                                      "Most bytes of one partition per Fetch response."),
    "fetch.max.wait.ms": _row("fetch.max.wait.ms", 500, _int_range(0, INT_MAX), "an int >= 0",
                              "How long the broker may wait for data at the end of the log."),
    "default.api.timeout.ms": _row("default.api.timeout.ms", 60000, _int_range(0, INT_MAX),
                                   "an int >= 0",
                                   "Bound of metadata and ListOffsets calls, retries included."),
    # Larger than the producer's (and Java's 64 KiB): a socket buffer that holds a whole Fetch
    # answer (max.partition.fetch.bytes) lets one poll read it in a few recv calls; with 64 KiB
    # a 1 MiB answer takes twenty polls, and the polls were half of the reader's CPU.
    "receive.buffer.bytes": _row("receive.buffer.bytes", 1048576, _int_range(-1, INT_MAX),
                                 "an int >= -1", "Socket receive buffer (SO_RCVBUF); -1 leaves"
                                 " the OS default."),
    "check.crcs": _row("check.crcs", True, _check_crcs, "true",
                       "Always true: every batch's CRC-32C is checked."),
    # fmt: on
}


def _unknown(key: str) -> ConfigError:
    dotted = key.replace("_", ".")
    if dotted in CONSUMER_SETTINGS:
        hint = f"; did you mean {dotted!r}?"
    else:
        close = difflib.get_close_matches(key, list(CONSUMER_SETTINGS), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown reader setting {key!r}{hint}")


class ConsumerConfig(Mapping[str, Any]):
    """The checked settings of a :class:`~kafkacore.consumer.PartitionReader`: a read-only
    mapping by Java name with every setting filled in.  Every problem is a
    :class:`~kafkacore.errors.ConfigError` naming the setting."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            raise ConfigError(f"config must be a mapping of settings, not {type(config).__name__}")
        for key in config:
            if not isinstance(key, str):
                raise ConfigError(f"setting names are strings, not {key!r}")
            if key not in CONSUMER_SETTINGS:
                raise _unknown(key)
        if config.get("bootstrap.servers") is None:
            raise ConfigError("'bootstrap.servers' is required (e.g. 'localhost:9092')")
        values: dict[str, Any] = {}
        for name, setting in CONSUMER_SETTINGS.items():
            raw = config.get(name, setting.default)
            try:
                values[name] = setting.check(raw)
            except _Invalid as exc:
                shown = "[hidden]" if name in SECRET_SETTINGS else repr(raw)
                raise ConfigError(f"invalid value {shown} for {name!r} ({exc}): allowed is"
                                  f" {setting.allowed}") from None
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)
