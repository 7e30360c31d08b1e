"""``LoggingController``: the broker's loggers as a config resource, BROKER_LOGGER (KIP-412).

DescribeConfigs on ``BROKER_LOGGER <broker id>`` lists the root logger and every logger of
kafkacore with its level in force; IncrementalAlterConfigs SETs a logger's level, or DELETEs it
(the logger then inherits its parent's, in the end the root's), at run time.  Levels are Kafka's
names, mapped onto Python's logging levels.  As in Kafka the change lives in this process only:
it is not written to the metadata and a restart forgets it.  Brokers that share a process (the
test cluster) share its loggers.  See docs/broker/admin.rst.
"""

from __future__ import annotations

import logging

from kafkacore.broker.config.config_resource import RESOURCE_TYPE_BROKER_LOGGER

log = logging.getLogger(__name__)


#: Kafka's name of the root logger (Python's too: ``logging.getLogger("root")``).
ROOT_LOGGER = "root"

#: Kafka's log levels (``LogLevelConfig.VALID_LOG_LEVELS``) as Python's.  Python has no TRACE:
#: it is a level below DEBUG, which only a logger set to TRACE lets through.
LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def kafka_level(level: int) -> str:
    """The Kafka name of a Python level: the most severe Kafka level it lets through."""
    name = "TRACE"
    for kafka_name, value in LEVELS.items():  # least severe first
        if level >= value:
            name = kafka_name
    return name


class LoggingController:
    """Reads and changes the levels of the broker's loggers (Kafka's ``LoggingController``).
    The checks of a change are ConfigAdminManager's, as in Kafka."""

    @staticmethod
    def loggers() -> dict[str, str]:
        """The root and every kafkacore logger, with the Kafka name of its level in force."""
        known = logging.Logger.manager.loggerDict
        names = sorted(n for n, lg in list(known.items()) if isinstance(lg, logging.Logger)
                       and (n == "kafkacore" or n.startswith("kafkacore.")))
        return {name: kafka_level(logging.getLogger(name).getEffectiveLevel())
                for name in [ROOT_LOGGER, *names]}

    @staticmethod
    def logger_exists(name: str) -> bool:
        return name in LoggingController.loggers()

    @staticmethod
    def set_log_level(name: str, level: str) -> None:
        """``level``: one of :data:`LEVELS` (the caller checked it)."""
        logging.getLogger(name).setLevel(LEVELS[level])
        log.warning("logger %s: level now %s", name, level)

    @staticmethod
    def unset_log_level(name: str) -> None:
        """The logger inherits its parent's level again (not the root's own: it has none to
        inherit, the caller refuses it)."""
        logging.getLogger(name).setLevel(logging.NOTSET)
        log.warning("logger %s: level now its parent's", name)


__all__ = ["LEVELS", "RESOURCE_TYPE_BROKER_LOGGER", "ROOT_LOGGER", "LoggingController",
           "kafka_level"]
