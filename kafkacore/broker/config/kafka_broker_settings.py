"""Every setting name a Kafka 4 broker knows, so that a ``server.properties`` written for Kafka
starts this broker: a name Kafka knows but this broker has no counterpart for is accepted and
named once at start (``BrokerConfig.without_effect``); only a name
Kafka does not know is an error, with a did-you-mean.

The names are those of Kafka 4's ``KafkaConfig`` definition (``AbstractKafkaConfig.CONFIG_DEF``
merges ``ServerConfigs``, ``KRaftConfigs``, ``SocketServerConfigs``, ``ReplicationConfigs``,
``GroupCoordinatorConfig``, ``CleanerConfig``, ``LogConfig.SERVER_CONFIG_DEF``,
``ShareGroupConfig``, ``ShareCoordinatorConfig``, ``TransactionLogConfig``,
``TransactionStateManagerConfig``, ``QuorumConfig``, ``MetricConfigs``, ``QuotaConfig``,
``BrokerSecurityConfigs``, ``DelegationTokenManagerConfigs``, ``PasswordEncoderConfigs`` and
``RemoteLogManagerConfig``), without ZooKeeper's, which Kafka 4 no longer has.
"""

from __future__ import annotations

#: Kafka 4's broker setting names (what ``kafka-server-start.sh`` accepts in server.properties).
KAFKA_BROKER_SETTINGS = frozenset("""
    advertised.listeners
    alter.config.policy.class.name alter.log.dirs.replication.quota.window.num
    alter.log.dirs.replication.quota.window.size.seconds
    authorizer.class.name
    auto.create.topics.enable auto.leader.rebalance.enable
    background.threads
    broker.heartbeat.interval.ms broker.id broker.id.generation.enable broker.rack
    broker.session.timeout.ms
    client.quota.callback.class
    compression.gzip.level compression.lz4.level compression.type compression.zstd.level
    connection.failed.authentication.delay.ms
    connections.max.idle.ms connections.max.reauth.ms
    control.plane.listener.name
    controlled.shutdown.enable controlled.shutdown.max.retries
    controlled.shutdown.retry.backoff.ms
    controller.listener.names controller.quorum.append.linger.ms
    controller.quorum.bootstrap.servers controller.quorum.election.backoff.max.ms
    controller.quorum.election.timeout.ms controller.quorum.fetch.timeout.ms
    controller.quorum.request.timeout.ms controller.quorum.retry.backoff.ms
    controller.quorum.voters controller.quota.window.num controller.quota.window.size.seconds
    controller.socket.timeout.ms
    create.topic.policy.class.name
    default.replication.factor
    delegation.token.expiry.check.interval.ms delegation.token.expiry.time.ms
    delegation.token.max.lifetime.ms delegation.token.secret.key
    delete.records.purgatory.purge.interval.requests delete.topic.enable
    early.start.listeners
    eligible.leader.replicas.enable
    fetch.max.bytes fetch.purgatory.purge.interval.requests
    follower.replication.throttled.rate
    group.consumer.assignors group.consumer.heartbeat.interval.ms
    group.consumer.max.heartbeat.interval.ms group.consumer.max.session.timeout.ms
    group.consumer.max.size group.consumer.migration.policy
    group.consumer.min.heartbeat.interval.ms group.consumer.min.session.timeout.ms
    group.consumer.session.timeout.ms group.coordinator.append.linger.ms
    group.coordinator.new.enable group.coordinator.rebalance.protocols group.coordinator.threads
    group.initial.rebalance.delay.ms group.max.session.timeout.ms group.max.size
    group.min.session.timeout.ms group.share.delivery.count.limit group.share.enable
    group.share.heartbeat.interval.ms group.share.max.groups
    group.share.max.heartbeat.interval.ms group.share.max.record.lock.duration.ms
    group.share.max.session.timeout.ms group.share.max.size
    group.share.min.heartbeat.interval.ms group.share.min.record.lock.duration.ms
    group.share.min.session.timeout.ms group.share.partition.max.record.locks
    group.share.record.lock.duration.ms group.share.session.timeout.ms
    initial.broker.registration.timeout.ms
    inter.broker.listener.name inter.broker.protocol.version
    kafka.metrics.polling.interval.secs kafka.metrics.reporters
    leader.imbalance.check.interval.seconds leader.imbalance.per.broker.percentage
    leader.replication.throttled.rate
    listener.security.protocol.map
    listeners
    log.cleaner.backoff.ms log.cleaner.dedupe.buffer.size log.cleaner.delete.retention.ms
    log.cleaner.enable log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size
    log.cleaner.io.max.bytes.per.second log.cleaner.max.compaction.lag.ms
    log.cleaner.min.cleanable.ratio log.cleaner.min.compaction.lag.ms log.cleaner.threads
    log.cleanup.policy log.dir log.dir.failure.timeout.ms log.dirs log.flush.interval.messages
    log.flush.interval.ms log.flush.offset.checkpoint.interval.ms
    log.flush.scheduler.interval.ms log.flush.start.offset.checkpoint.interval.ms
    log.index.interval.bytes log.index.size.max.bytes log.initial.task.delay.ms
    log.local.retention.bytes log.local.retention.ms log.message.downconversion.enable
    log.message.format.version log.message.timestamp.after.max.ms
    log.message.timestamp.before.max.ms log.message.timestamp.difference.max.ms
    log.message.timestamp.type log.preallocate log.retention.bytes
    log.retention.check.interval.ms log.retention.hours log.retention.minutes log.retention.ms
    log.roll.hours log.roll.jitter.hours log.roll.jitter.ms log.roll.ms log.segment.bytes
    log.segment.delete.delay.ms
    max.connection.creation.rate max.connections max.connections.per.ip
    max.connections.per.ip.overrides max.incremental.fetch.session.cache.slots
    max.request.partition.size.limit
    message.max.bytes
    metadata.log.dir metadata.log.max.record.bytes.between.snapshots
    metadata.log.max.snapshot.interval.ms metadata.log.segment.bytes
    metadata.log.segment.min.bytes metadata.log.segment.ms metadata.max.idle.interval.ms
    metadata.max.retention.bytes metadata.max.retention.ms
    metric.reporters
    metrics.num.samples metrics.recording.level metrics.sample.window.ms
    min.insync.replicas
    node.id
    num.io.threads num.network.threads num.partitions num.recovery.threads.per.data.dir
    num.replica.alter.log.dirs.threads num.replica.fetchers
    offset.metadata.max.bytes
    offsets.commit.timeout.ms offsets.load.buffer.size offsets.retention.check.interval.ms
    offsets.retention.minutes offsets.topic.compression.codec offsets.topic.num.partitions
    offsets.topic.replication.factor offsets.topic.segment.bytes
    password.encoder.cipher.algorithm password.encoder.iterations password.encoder.key.length
    password.encoder.keyfactory.algorithm password.encoder.old.secret password.encoder.secret
    principal.builder.class
    process.roles
    producer.id.expiration.check.interval.ms producer.id.expiration.ms
    producer.purgatory.purge.interval.requests
    queued.max.request.bytes queued.max.requests
    quota.window.num quota.window.size.seconds
    remote.fetch.max.wait.ms remote.list.offsets.request.timeout.ms
    remote.log.index.file.cache.total.size.bytes remote.log.manager.copier.thread.pool.size
    remote.log.manager.copy.max.bytes.per.second remote.log.manager.copy.quota.window.num
    remote.log.manager.copy.quota.window.size.seconds
    remote.log.manager.expiration.thread.pool.size remote.log.manager.fetch.max.bytes.per.second
    remote.log.manager.fetch.quota.window.num remote.log.manager.fetch.quota.window.size.seconds
    remote.log.manager.task.interval.ms remote.log.manager.task.retry.backoff.max.ms
    remote.log.manager.task.retry.backoff.ms remote.log.manager.task.retry.jitter
    remote.log.manager.thread.pool.size remote.log.metadata.custom.metadata.max.bytes
    remote.log.metadata.manager.class.name remote.log.metadata.manager.class.path
    remote.log.metadata.manager.listener.name remote.log.reader.max.pending.tasks
    remote.log.reader.threads remote.log.storage.manager.class.name
    remote.log.storage.manager.class.path remote.log.storage.system.enable
    replica.alter.log.dirs.io.max.bytes.per.second replica.fetch.backoff.ms
    replica.fetch.max.bytes replica.fetch.min.bytes replica.fetch.response.max.bytes
    replica.fetch.wait.max.ms replica.high.watermark.checkpoint.interval.ms
    replica.lag.time.max.ms replica.selector.class replica.socket.receive.buffer.bytes
    replica.socket.timeout.ms
    replication.quota.window.num replication.quota.window.size.seconds
    request.timeout.ms
    reserved.broker.max.id
    sasl.client.callback.handler.class sasl.enabled.mechanisms sasl.jaas.config
    sasl.kerberos.kinit.cmd sasl.kerberos.min.time.before.relogin
    sasl.kerberos.principal.to.local.rules sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
    sasl.mechanism.controller.protocol sasl.mechanism.inter.broker.protocol
    sasl.oauthbearer.clock.skew.seconds sasl.oauthbearer.expected.audience
    sasl.oauthbearer.expected.issuer sasl.oauthbearer.jwks.endpoint.refresh.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.server.callback.handler.class
    sasl.server.max.receive.size
    security.inter.broker.protocol security.providers
    server.max.startup.time.ms
    share.coordinator.append.linger.ms share.coordinator.load.buffer.size
    share.coordinator.snapshot.update.records.per.snapshot
    share.coordinator.state.topic.compression.codec share.coordinator.state.topic.min.isr
    share.coordinator.state.topic.num.partitions
    share.coordinator.state.topic.replication.factor share.coordinator.state.topic.segment.bytes
    share.coordinator.threads share.coordinator.write.timeout.ms share.fetch.max.fetch.records
    share.fetch.purgatory.purge.interval.requests
    socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
    socket.listen.backlog.size socket.receive.buffer.bytes socket.request.max.bytes
    socket.send.buffer.bytes
    ssl.allow.dn.changes ssl.allow.san.changes ssl.cipher.suites ssl.client.auth
    ssl.enabled.protocols ssl.endpoint.identification.algorithm ssl.engine.factory.class
    ssl.key.password ssl.keymanager.algorithm ssl.keystore.certificate.chain ssl.keystore.key
    ssl.keystore.location ssl.keystore.password ssl.keystore.type ssl.principal.mapping.rules
    ssl.protocol ssl.provider ssl.secure.random.implementation ssl.trustmanager.algorithm
    ssl.truststore.certificates ssl.truststore.location ssl.truststore.password
    ssl.truststore.type
    telemetry.max.bytes
    transaction.abort.timed.out.transaction.cleanup.interval.ms transaction.max.timeout.ms
    transaction.partition.verification.enable
    transaction.remove.expired.transaction.cleanup.interval.ms
    transaction.state.log.load.buffer.size transaction.state.log.min.isr
    transaction.state.log.num.partitions transaction.state.log.replication.factor
    transaction.state.log.segment.bytes
    transactional.id.expiration.ms
    unclean.leader.election.enable unclean.leader.election.interval.ms
    unstable.api.versions.enable unstable.feature.versions.enable
""".split())

#: Kafka's older names for a setting, read when the newer one is not given, with the factor
#: that turns the older one's unit into the newer one's (``ServerTopicConfigSynonyms``:
#: ``log.retention.hours`` is ``log.retention.ms`` in hours).  The first one given wins.
SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    "log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "log.dirs": (("log.dir", 1),),
}
