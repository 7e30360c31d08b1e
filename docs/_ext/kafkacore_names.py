"""A docs check: the files, settings and modules a chapter names in double backticks exist.

A chapter that names ``kafkacore/broker/log/log_segment.py``, ``linger.ms`` or
``kafkacore.core.appender`` promises the reader that the thing is there. This extension scans every
``.rst`` file when the build starts and warns (an error under ``-W``) for each name that is not:

* a path (``kafkacore/...``, ``tests/...``, ``tutorials/...``, ``docs/...``, ``benchmarks/...``)
  that exists in the repository;
* a dotted module or attribute under ``kafkacore`` that imports;
* a ``CamelCase`` name (or ``CamelCase.attribute``): a class or constant defined in kafkacore, a
  Python built-in, or a Kafka (Java) class, API or type a chapter names for comparison
  (``KAFKA_NAMES`` below);
* any other dotted lower-case name: a producer setting (``kafkacore.config``, with its aliases and
  the librdkafka names it knows), a broker setting (``kafkacore.broker.config.kafka_config``, or any Kafka 4
  broker setting, ``kafkacore.broker.config.kafka_broker_settings``), or a Kafka
  setting a chapter mentions for comparison (``KAFKA_ONLY`` below).

``tests/test_docs_names.py`` runs the same check without Sphinx.
"""

import importlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
_LITERAL = re.compile(r"``([^`\s]+)``")
_PATH = re.compile(r"^(kafkacore|tests|tutorials|docs|benchmarks)/[\w./-]*$")
_MODULE = re.compile(r"^kafkacore(\.\w+)+$")
_CLASS = re.compile(r"^([A-Z][a-z]\w*[a-z]\w*)(?:\.\w+)*(?:\(\))?$")
_DOTTED = re.compile(r"^([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_-]*)+)(=.*)?$")
# Names that are dotted and lower-case but not settings: file names, hosts, Python names.
_NOT_A_SETTING = re.compile(
    r"\.(py|pyx|pxd|so|rst|txt|json|log|index|timeindex|snapshot|properties|conf|cfg|toml|ini|"
    r"jks|pem|crt|key|html|png|svg|md|c|h|sh|yml|yaml|checkpoint)$"
    r"|^(os|socket|ssl|select|selectors|asyncio|threading|time|struct|zlib|mmap|sys|io|"
    r"concurrent|collections|heapq|weakref|functools|itertools|pytest|hypothesis|confluent_kafka|"
    r"kafka|aiokafka|pyspark|sphinx|np|numpy|self|cls|app|java|org|sun|jdk|scala|localhost)\."
    r"|^\d|^[a-z]+\.[a-z]+\(|^_"
)
# Kafka settings (broker, topic, consumer, Streams) a chapter names for comparison, that neither
# of our config modules has.
KAFKA_ONLY = frozenset(
    """
    message.downconversion.enable message.format.version message.timestamp.difference.max.ms
    remote.log.storage.system.enable
    group.protocol retention.ms retention.bytes segment.bytes segment.ms cleanup.policy min.insync.replicas
    max.message.bytes message.timestamp.type unclean.leader.election.enable
    log.retention.ms log.retention.minutes log.retention.bytes log.segment.bytes log.roll.ms
    log.roll.hours log.cleanup.policy log.index.size.max.bytes log.index.interval.bytes
    replica.lag.time.max.ms replica.fetch.max.bytes replica.fetch.wait.max.ms
    group.initial.rebalance.delay.ms group.min.session.timeout.ms group.max.session.timeout.ms
    session.timeout.ms heartbeat.interval.ms max.poll.interval.ms max.poll.records
    auto.offset.reset enable.auto.commit auto.commit.interval.ms isolation.level group.id
    fetch.min.bytes fetch.max.wait.ms fetch.max.bytes max.partition.fetch.bytes
    offsets.retention.minutes offsets.topic.replication.factor offsets.topic.num.partitions
    transaction.state.log.replication.factor transaction.state.log.min.isr
    transaction.max.timeout.ms transactional.id.expiration.ms transaction.version
    producer.id.expiration.ms message.max.bytes connection.failed.authentication.delay.ms
    check.crcs rebalance.timeout.ms group.instance.id offset.metadata.max.bytes
    transaction.partition.verification.enable spark.python.worker.reuse
    leader.replication.throttled.rate
    metadata.log.max.record.bytes.between.snapshots metadata.log.max.snapshot.interval.ms
    internal.segment.bytes message.downconversion.enable message.format.version
    message.timestamp.difference.max.ms consumer.session.timeout.ms consumer.heartbeat.interval.ms
    """.split()
)
# Java classes, Kafka APIs and types, and C API names a chapter mentions, that kafkacore does not
# define under the same name.
KAFKA_NAMES = frozenset(
    """
    LogAppendTime OffsetSpec CorruptRecordException LogCleaningException GroupConfig
    AclControlManager AddOffsetsToTxn CurrentAssignmentBuilder AddPartitionsToTxn AdminClient AtomicLong
    AtomicReference
    BoundedByteBufferReceive BrokerServer ByteBuffer CheckpointFile ClusterConnectionStates Collections
    CompressionRatioEstimator Condition Crc32C CreateTime DefaultRecord DefaultRecordBatch
    DefaultRecordBatchBuilder DeleteRecords EndTxn ExponentialBackoff FindCoordinator Future
    GroupMetadataKey GroupMetadataValue InFlightRequests InitProducerId Integer KafkaAdminClient
    KafkaServer LinkedHashMap LogValidator Long Lz4BlockOutputStream MemoryRecords
    NumDelayedOperations OrderedDict PartitionData PeriodicProducerExpirationCheck
    PlainLoginModule Produce ProduceRequest ProducerInterceptor ProducerInterceptors
    ProducerMetadata Properties PurgatorySize Records ReentrantLock SaslAuthenticateResponse
    ScramLoginModule Selector SerializationContext Serializer SerializingProducer
    SimpleMemoryPool SnappyOutputStream SslFactory SslTransportLayer StickyPartitionInfo String
    Thunk Topic TopicData TransactionalId TxnOffsetCommit UnifiedLog UniformStickyPartitioner
    Utils UtilsTest Uuid WriteBuffer Any KafkaLZ4BlockOutputStream DataOutputStream
    IllegalStateException GZIPOutputStream KafkaConfig
    LogAppendTime GroupConfig CorruptRecordException LogCleaningException DefaultSource Trigger
    CreatePartitions KafkaConsumer IllegalArgumentException SupportsTriggerAvailableNow
    TopicRecord PartitionRecord PartitionChangeRecord ConfigRecord ClientQuotaRecord RemoveTopicRecord
    AccessControlEntryRecord RemoveAccessControlEntryRecord AclPublisher
    RegisterBrokerRecord FenceBrokerRecord UnfenceBrokerRecord MetadataDelta MetadataImage TopicsDelta
    KafkaMetadataLog SnapshotGenerator BrokerMetadataPublisher PartitionMetadataFile
    ControllerConfigurationValidator BoundedList BoundedListTooLongException ProducerIdsRecord
    """.split()
)
# Dotted lower-case names in the docs that are not settings: attributes, file names, code.
NOT_SETTINGS = frozenset(
    """
    broker.faults broker.faults.isolated partition.metadata py.typed exc.errno client.poll
    loop.run_in_executor df.schema summary.records array.array dict.get dict.setdefault
    unittest.mock
    """.split()
)


def known_settings():
    """Every dotted setting name the docs may use."""
    from kafkacore import config as producer
    from kafkacore.broker.config import group_config
    from kafkacore.broker.config import kafka_config as broker
    from kafkacore.broker.config.kafka_broker_settings import KAFKA_BROKER_SETTINGS
    from kafkacore.broker.log import log_config

    names = set(producer.SETTINGS_BY_NAME) | set(producer.ALIASES) | set(producer.CONVERTED_ALIASES)
    names |= set(producer.NOT_NEEDED) | set(producer.NO_COUNTERPART) | set(producer._JAVA_ONLY)
    # librdkafka's and confluent-kafka-python's own settings, which the facade accepts.
    names |= set(producer.LIBRDKAFKA_SETTINGS) | set(producer.CONFLUENT_PYTHON_SETTINGS)
    names |= set(producer.LIBRDKAFKA_MAPPED)
    names |= set(broker.SETTINGS) | set(broker.ALIASES) | set(log_config.TOPIC_CONFIGS)
    names |= {log_config.INTERNAL_SEGMENT_BYTES} | set(group_config.GROUP_CONFIGS)
    # Every Kafka 4 broker setting: the broker accepts them all by name (docs/broker/reactor.rst).
    return names | KAFKA_ONLY | KAFKA_BROKER_SETTINGS


def known_classes():
    """Class and constant names kafkacore defines, Python's built-ins, and ``KAFKA_NAMES``."""
    import builtins

    names = set(dir(builtins)) | KAFKA_NAMES
    definition = re.compile(r"^\s*(?:cdef\s+|cpdef\s+)?class\s+(\w+)|^(\w+)\s*[:=]", re.M)
    for path in (ROOT / "kafkacore").rglob("*"):
        if path.suffix in (".py", ".pyx", ".pxd", ".pyi"):
            for found in definition.findall(path.read_text(encoding="utf-8", errors="replace")):
                names.update(n for n in found if n)
    return names


def _module_file(dotted):
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyx")):
        if candidate.exists():
            return candidate
    return None


def _imports(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith("kafkacore") and cut == len(parts):
                # The module is there but needs an extra this environment lacks (pyspark for
                # kafkacore.spark.source): its own file is the proof it exists.
                return _module_file(dotted) is not None
            continue
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def problems(docs_dir=ROOT / "docs"):
    """(file under docs_dir, line, message) for every named thing that does not exist."""
    settings = known_settings() | NOT_SETTINGS
    classes = known_classes()
    found = []
    docs_dir = pathlib.Path(docs_dir)
    for rst in sorted(docs_dir.rglob("*.rst")):
        if "_build" in rst.parts:
            continue
        for number, line in enumerate(rst.read_text(encoding="utf-8").splitlines(), 1):
            for name in _LITERAL.findall(line):
                name = name.rstrip(".,:;")
                where = (rst.relative_to(docs_dir).as_posix(), number)
                if _PATH.match(name):
                    if not (ROOT / name.split("::")[0]).exists():
                        found.append((*where, f"no such file: {name}"))
                    continue
                named = _CLASS.match(name)
                if named:
                    if named.group(1) not in classes and not named.group(1).startswith("Py"):
                        found.append((*where, f"no such class: {named.group(1)}"))
                    continue
                if _MODULE.match(name):
                    if not _imports(name):
                        found.append((*where, f"no such module or attribute: {name}"))
                    continue
                dotted = _DOTTED.match(name)
                if not dotted:
                    continue
                name = dotted.group(1)
                if not _NOT_A_SETTING.search(name) and name not in settings:
                    found.append((*where, f"not a known setting: {name}"))
    return found


def _check(app):
    from sphinx.util import logging

    log = logging.getLogger(__name__)
    for path, line, message in problems(pathlib.Path(app.srcdir)):
        log.warning(message, location=(path.removesuffix(".rst"), line))


def setup(app):
    app.connect("builder-inited", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
