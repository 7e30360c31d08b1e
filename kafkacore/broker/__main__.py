"""``python -m kafkacore.broker`` / ``kafkacore-broker``: run one broker until SIGTERM or SIGINT.

When it is ready it prints one line, ``kafkacore-broker listening on HOST:PORT`` (the first
listener), and flushes it, so a parent process can read the address (with port 0, the one the
OS chose).  Every listener is logged on stderr.  Settings come from a ``server.properties`` file
(Kafka's format and names) given as the first argument, overridden by ``--config KEY=VALUE``;
SASL users from a JAAS file (``--jaas-config``).  Secrets belong in those files, never on the
command line, which every user of the machine can read (see docs/broker/security.rst).
With ``--control-socket PATH`` the broker's faults can be switched from another process with
:class:`kafkacore.broker.network.faults.BrokerControl` (see docs/broker/faults.rst); the socket is
listening before the ready line is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from kafkacore import errors
from kafkacore.broker.config.kafka_config import BrokerConfig
from kafkacore.broker.config.server_properties import jaas_settings, load_properties
from kafkacore.broker.server_common import lifeline

if TYPE_CHECKING:
    from kafkacore.broker.controller.controller_server import ControllerServer
    from kafkacore.broker.server.broker_server import Broker
    from kafkacore.broker.server.kafka_raft_server import KafkaRaftServer

READY_PREFIX = "kafkacore-broker listening on "

#: What a ``pip install .`` without the ``broker`` extra is told: one line, both commands (a
#: clone's pip cannot find ``kafkacore[broker]``, only ``'.[broker]'``).
MISSING_EXTRA = ("kafkacore-broker: error: the broker needs its extra (google-re2): "
                 "pip install '.[broker]' in kafkacore's clone, "
                 "pip install 'kafkacore[broker]' from PyPI")


def _broker_extra_is_missing() -> bool:
    # Checked before the broker's modules are imported: they need it at import.
    try:
        import re2  # noqa: F401
    except ImportError:
        return True
    return False


def build_config(args: argparse.Namespace) -> BrokerConfig:
    # server.properties first; --config (or Kafka's --override) and the named flags win over it.
    values: dict[str, str] = {}
    if args.properties is not None:
        values.update(load_properties(args.properties))
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise errors.ConfigError(f"--config expects key=value, got {item!r}")
        values[key.strip()] = value
    if args.listeners is not None:
        values["listeners"] = args.listeners
    if args.log_dirs is not None:
        values["log.dirs"] = args.log_dirs
    if args.num_partitions is not None:
        values["num.partitions"] = str(args.num_partitions)
    if args.auto_create_topics is not None:
        values["auto.create.topics.enable"] = args.auto_create_topics
    if args.process_roles is not None:
        values["process.roles"] = args.process_roles
    if args.node_id is not None:
        values["node.id"] = str(args.node_id)
    if args.controller is not None:
        values["controller.quorum.bootstrap.servers"] = args.controller
    config = BrokerConfig(values)
    if args.jaas_config is not None:
        # The JAAS file's users, for the SASL listeners; a setting given otherwise wins.
        sasl = [e.name for e in config.listeners if e.uses_sasl]
        found = jaas_settings(args.jaas_config, sasl)
        config = BrokerConfig({**found, **values})
    return config


def _plain(doc: str | None) -> str:
    """The docstring's first line as --help shows it: without reStructuredText's backticks."""
    return (doc or "").splitlines()[0].replace("``", "").replace("`", "") if doc else ""


def _check_log_dirs(log_dirs: Sequence[str]) -> None:
    """Each log dir must be a directory we can write to, or be creatable."""
    for d in log_dirs:
        if os.path.exists(d) and not os.path.isdir(d):
            raise errors.ConfigError(f"log dir {d} is not a directory")
        if os.path.isdir(d) and not os.access(d, os.W_OK | os.X_OK):
            raise errors.ConfigError(f"log dir {d} is not writable by this user")


def _start_up_error(exc: BaseException) -> str:
    """The one line that says what went wrong at start-up."""
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return f"cannot listen: {exc.strerror}; is another broker running there?"
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc)


class _OneLineErrors(argparse.ArgumentParser):
    """An argument mistake is one line, as every other start-up mistake: the usage block
    argparse prints first would bury it (--help shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def _say_what_is_not_applied(config: BrokerConfig) -> None:
    """Once, at start: the given settings Kafka has and this broker does not apply, and what a
    combined node (``process.roles=broker,controller``) is here."""
    log = logging.getLogger("kafkacore.broker")
    if config.without_effect:
        log.warning("accepted without effect here (Kafka broker settings this broker has no "
                    "counterpart for): %s", ", ".join(config.without_effect))
    if config.combined_roles:
        from kafkacore.broker.server.kafka_raft_server import is_combined_quorum

        quorum = False
        with contextlib.suppress(errors.ConfigError):  # main() says what is wrong with it
            quorum = is_combined_quorum(config.values_given)
        if quorum:
            log.info("process.roles=broker,controller: one voter of the quorum %s and a broker, "
                     "in this process", config["controller.quorum.voters"])
            return
        unopened = ", ".join(config.unopened_controller_listeners) or "none"
        log.info("process.roles=broker,controller: one node that acts as its own controller "
                 "(controller.quorum.voters names no other voter); controller listeners not "
                 "opened: %s", unopened)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if _broker_extra_is_missing():
        print(MISSING_EXTRA, file=sys.stderr)
        return 1
    if argv[:1] == ["cluster"]:
        from kafkacore.testing.cluster import main as cluster_main

        return cluster_main(argv[1:])
    parser = _OneLineErrors(prog="kafkacore-broker", description=_plain(__doc__))
    parser.add_argument(
        "properties", nargs="?", metavar="server.properties",
        help="a settings file in Kafka's format and names (the place for secrets: keep it mode "
             "600); --config overrides it")
    parser.add_argument(
        "--jaas-config", metavar="PATH",
        help="a JAAS file whose KafkaServer section declares the SASL users (user_NAME=\"pw\"), "
             "as Kafka's java.security.auth.login.config")
    parser.add_argument(
        "--listeners",
        help="NAME://host:port,... with NAME in listener.security.protocol.map: PLAINTEXT, SSL, "
             "SASL_PLAINTEXT, SASL_SSL (default PLAINTEXT://127.0.0.1:0; port 0: a free one)")
    parser.add_argument("--log-dirs", help="data directories (default: a temporary one)")
    parser.add_argument("--num-partitions", type=int, help="partitions of auto-created topics")
    parser.add_argument("--auto-create-topics", choices=["true", "false"],
                        help="auto.create.topics.enable")
    parser.add_argument("--config", "--override", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="any broker setting, by Kafka's name (repeatable); never a secret: "
                             "the command line is readable by every user (/proc/PID/cmdline)")
    parser.add_argument("--control-socket", metavar="PATH",
                        help="serve fault injection (isolate, latency, fail_next) on this Unix "
                             "socket, for tests")
    parser.add_argument("--process-roles", choices=["broker", "controller"],
                        help="run as a cluster's broker or its controller (default: one broker "
                             "that is its own controller); kafkacore-broker cluster --brokers 3 "
                             "starts a whole cluster")
    parser.add_argument("--node-id", type=int, help="node.id")
    parser.add_argument("--controller", metavar="HOST:PORT[,HOST:PORT...]",
                        help="the controller a broker registers with, or the controllers of a "
                             "quorum (controller.quorum.bootstrap.servers)")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = build_config(args)
    except errors.ConfigError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    _say_what_is_not_applied(config)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        logging.getLogger("kafkacore.broker").info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # Started by a Python program (Cluster, LocalBroker): stop when it ends, however it ends.
    lifeline.watch_owner(stop.set)
    # A controller imports no broker: a quorum's three controllers each start that much sooner
    # and cheaper (docs/broker/quorum.rst, "What it costs").
    broker: Broker | None = None
    controller: ControllerServer | None = None
    combined: KafkaRaftServer | None = None
    try:
        _check_log_dirs(config.log_dirs)
        from kafkacore.broker.server.kafka_raft_server import is_combined_quorum

        if is_combined_quorum(config.values_given):
            # One of a quorum's combined nodes: its voter and its broker (Kafka's combined
            # mode); the control socket is its broker's.
            from kafkacore.broker.server.kafka_raft_server import KafkaRaftServer

            combined = KafkaRaftServer(config.values_given)
            broker = combined.broker
            combined.start()
        elif config["process.roles"] == "controller":
            from kafkacore.broker.controller.controller_server import ControllerServer

            controller = ControllerServer(config)
            controller.start()
        else:
            from kafkacore.broker.server.broker_server import Broker

            broker = Broker(config)
            broker.start()
    except (OSError, errors.ConfigError) as exc:
        # A mistake in how it was started, not a bug: one line and exit 2, as for bad flags.
        for started in (combined or broker, controller):
            if started is not None:
                with contextlib.suppress(Exception):
                    started.stop()
        parser.exit(2, f"{parser.prog}: error: {_start_up_error(exc)}\n")
    server = combined or broker or controller
    if server is None:
        raise errors.IllegalStateError("neither a broker nor a controller was started")
    control = None
    try:
        if args.control_socket and broker is not None:
            from kafkacore.broker.network.faults import ControlServer

            control = ControlServer(broker.faults, args.control_socket,
                                    broker.statistics).start()
        elif args.control_socket and controller is not None:
            from kafkacore.broker.controller.controller_server import ControllerControlServer

            control = ControllerControlServer(controller, args.control_socket).start()
        print(f"{READY_PREFIX}{server.bootstrap_servers}", flush=True)
        # a controller has one listener, already printed above
        if broker is not None and broker.socket_server is not None:
            for endpoint in broker.socket_server.endpoints():
                logging.getLogger("kafkacore.broker").info(
                    "listener %s (%s) on %s", endpoint.name, endpoint.security_protocol,
                    broker.bootstrap_servers_of(endpoint.name))
        while not stop.wait(1.0):
            pass
    finally:
        if control is not None:
            control.stop()
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
