"""A local Spark session for the Spark tests: one SparkContext for the test session (starting one
takes seconds), a fresh SparkSession on it for each module.

``local[2,4]``: two task slots, and a failed task is tried up to four times, so the retry test
can fail a task once and watch Spark run it again.  Small Arrow batches give each task several
``send_batch`` calls.  Workers run this interpreter (``PYSPARK_PYTHON``), which has kafkacore.

The guide examples (test_source.py, test_sink.py) run on our broker and on the session's 3-broker
cluster (``guide_kafka``).
"""

import os
import sys
from collections.abc import Callable
from typing import NamedTuple

import pytest
from support.topics import new_replicated_topic, new_topic

# Arrow batches per task in the tests: small, so that one task makes several send_batch calls.
BATCH_ROWS = 250


@pytest.fixture(scope="session")
def _spark_context():
    """The session's SparkContext (its JVM side, task slots and Python workers), started once:
    starting and stopping one per module cost seconds each."""
    pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("kafkacore-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark(_spark_context):
    """The module's SparkSession: a new session on the shared SparkContext, so that each module
    starts with Spark's SQL state fresh (its settings, and no data source registered by
    ``register()``: test_source.py checks that Spark finds the format by itself), as it did when
    each module started its own context.  Streaming queries it left running are stopped."""
    session = _spark_context.newSession()
    yield session
    for query in session.streams.active:
        query.stop()


@pytest.fixture(scope="module")
def our_broker():
    """A broker of ours for the module (the exactly-once tests need its transactions); one that
    does not start fails the tests, as the session brokers do."""
    from kafkacore.testing import LocalBroker

    broker = LocalBroker(kind="kafkacore").start()
    yield broker
    broker.stop()
    broker.remove_data()


@pytest.fixture(scope="module")
def kspark(spark):
    """The module's Spark session with format("kafkacore") registered."""
    from kafkacore.spark import register

    register(spark)
    return spark


class GuideKafka(NamedTuple):
    """Where a guide example runs: our broker or the 3-broker cluster."""

    kind: str  # "broker" or "cluster"
    bootstrap: str
    #: ``new_topic(partitions, prefix="t") -> name``: a fresh topic there (on the cluster
    #: replicated on all three brokers, ``min.insync.replicas=2``, its ISRs full).
    new_topic: Callable[..., str]


@pytest.fixture(params=["broker", pytest.param("cluster", marks=pytest.mark.cluster)])
def guide_kafka(request):
    """Spark's Kafka integration guide examples (test_source.py, test_sink.py) run on the
    module's broker of ours (``our_broker``) and, unless a test narrows the parameter to
    ``["broker"]``, on the session's 3-broker ``cluster`` too, which every cluster test of the
    Spark run shares (started once: a cluster costs seconds of CPU to start), with the topics
    replicated three times."""
    if request.param == "cluster":
        cluster = request.getfixturevalue("cluster")

        def replicated(partitions: int = 1, prefix: str = "t") -> str:
            return new_replicated_topic(cluster, partitions, prefix=prefix)

        return GuideKafka("cluster", cluster.bootstrap_servers, replicated)
    broker = request.getfixturevalue("our_broker")

    def single(partitions: int = 1, prefix: str = "t") -> str:
        return new_topic(broker.bootstrap, partitions, prefix=prefix)

    return GuideKafka("broker", broker.bootstrap, single)
