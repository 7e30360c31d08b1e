"""pytest fixtures that give your tests a real Kafka broker: kafkacore's own, in the test process.

Installed with kafkacore, the plugin is found through its ``pytest11`` entry point; without
installing, enable it with ``-p kafkacore.testing.pytest_plugin`` (or ``pytest_plugins`` in
your top-level ``conftest.py``).  See docs/broker/faults.rst.

``kafka_broker``
    One :class:`kafkacore.broker.Broker` for the whole session (it starts in well under a
    second), its data in a temporary directory.  Use :meth:`KafkaBrokerFixture.new_topic` for a
    topic no other test writes to, ``bootstrap_servers`` for your clients, ``faults`` to break
    it on purpose (:class:`kafkacore.broker.network.faults.FaultInjector`).  Faults a test switched on
    are switched off after it.
``kafka_topic``
    A fresh one-partition topic on ``kafka_broker``, by name.
``kafka_cluster``
    A :class:`kafkacore.testing.cluster.Cluster`: a controller and three brokers, each its own process,
    for the whole session; faults it suffered are undone after each test.

Settings for the broker, one ``key=value`` per line, by Kafka's names, in the ini file::

    [pytest]
    kafkacore_broker_config =
        num.partitions=3
        message.max.bytes=2000000
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafkacore.broker import Broker
    from kafkacore.broker.network.faults import FaultInjector


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("kafkacore_broker_config", type="linelist", default=[],
                  help="settings of the kafka_broker fixture's broker, key=value per line")
    parser.addini("kafkacore_cluster_config", type="linelist", default=[],
                  help="settings of the kafka_cluster fixture's brokers, key=value per line")


class KafkaBrokerFixture:
    """What the ``kafka_broker`` fixture gives a test: a running broker and ways to use it."""

    def __init__(self, broker: Broker) -> None:
        #: The :class:`kafkacore.broker.Broker` itself.
        self.broker = broker

    @property
    def bootstrap_servers(self) -> str:
        """The address to give any Kafka client, ``"127.0.0.1:PORT"``."""
        return self.broker.bootstrap_servers

    @property
    def faults(self) -> FaultInjector:
        """The broker's faults, to break it on purpose (``fail_next``, ``set_latency``,
        ``isolate``, ``heal``)."""
        return self.broker.faults

    def new_topic(self, partitions: int = 1, configs: Mapping[str, str] | None = None,
                  prefix: str = "test") -> str:
        """Create a topic with a name nobody else uses; returns the name."""
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions must be a positive int, got {partitions!r}")
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.broker.apis.create_topic(name, partitions, dict(configs or {}))
        return name

    def reset_faults(self) -> None:
        """Switch every fault off: queued errors forgotten, no latency, healed."""
        self.faults.reset()

    def __repr__(self) -> str:
        return f"KafkaBrokerFixture({self.bootstrap_servers})"


def _config_from_ini(lines: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"kafkacore_broker_config: expected key=value, got {line!r}")
        config[key.strip()] = value.strip()
    return config


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBrokerFixture]:
    """A kafkacore broker on a loopback port for the whole session (see the module's doc)."""
    from kafkacore.broker import Broker

    config = {"log.dirs": str(tmp_path_factory.mktemp("kafkacore-broker"))}
    config.update(_config_from_ini(request.config.getini("kafkacore_broker_config")))
    with Broker(config) as broker:
        yield KafkaBrokerFixture(broker)


@pytest.fixture(autouse=True)
def _kafkacore_reset_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used ``kafka_broker``, its faults are switched off."""
    yield
    if "kafka_broker" in request.fixturenames:
        request.getfixturevalue("kafka_broker").reset_faults()


@pytest.fixture
def kafka_topic(kafka_broker: KafkaBrokerFixture) -> str:
    """A fresh one-partition topic on ``kafka_broker``."""
    return kafka_broker.new_topic()


# -- kafka_cluster -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A :class:`kafkacore.testing.cluster.Cluster` of three brokers and a quorum of three
    controllers (each its own process) for the whole session.  Break it on purpose with ``kill``, ``stop``, ``pause``, ``isolate``,
    ``set_latency``, ``fail_next``, ``move_leader``; after each test, brokers it killed, stopped
    or paused are brought back and faults are switched off.  Its settings come from the ini
    option ``kafkacore_cluster_config`` (``key=value`` lines, like ``kafkacore_broker_config``)."""
    from kafkacore.testing.cluster import Cluster

    # A short base directory: the brokers' control sockets are Unix sockets (a path of at most
    # 107 bytes), and pytest's own can be too deep (under xdist, or a pytest run by a test).
    base = tmp_path_factory.mktemp("kc")
    short = None
    if len(str(base / "controller-3000.ctl")) > 100:  # the longest name: a quorum's voter
        base = short = pathlib.Path(tempfile.mkdtemp(prefix="kc-"))
    config = _config_from_ini(request.config.getini("kafkacore_cluster_config"))
    try:
        with Cluster(3, log_dir=base, config=config) as cluster:
            yield cluster
    finally:
        if short is not None:
            shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(autouse=True)
def _kafkacore_reset_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used ``kafka_cluster``: every controller and broker running, the
    brokers healed, no faults."""
    yield
    if "kafka_cluster" not in request.fixturenames:
        return
    from kafkacore.broker.network.faults import BrokerControl

    cluster = request.getfixturevalue("kafka_cluster")
    restarted = False
    for controller_id, node in cluster.controllers.items():  # the quorum whole again first
        if node.paused:
            cluster.resume(controller_id)
        if not node.running:
            cluster.restart(controller_id)
            restarted = True
        else:
            cluster.heal(controller_id)
    for broker_id, node in cluster.brokers.items():
        if node.paused:
            cluster.resume(broker_id)
        if not node.running:
            cluster.restart(broker_id)
            restarted = True
        control = BrokerControl(cluster.control_socket(broker_id))
        control.heal()
        control.set_latency(0)
        control.clear()
    if restarted:  # the next test starts with every broker registered and known to all
        cluster.wait_for_brokers()
