"""The controller: one process that decides who leads what (Kafka's KRaft controller).

One Kafka class per module, as in Kafka's ``org.apache.kafka.controller`` package:

- :class:`~kafkacore.broker.controller.broker_heartbeat_manager.BrokerHeartbeatManager`: every
  broker registers (BrokerRegistration, which gives it a broker epoch) and then heartbeats
  (BrokerHeartbeat).  A broker silent for ``broker.session.timeout.ms`` is **fenced**: it leaves
  every ISR, and every partition it led gets a new leader.
- :class:`~kafkacore.broker.controller.replication_control_manager.ReplicationControlManager`:
  topics and their partitions (replicas, ISR, leader, leader epoch, partition epoch).  It assigns
  replicas at creation (round robin from a random broker, like Kafka's rack-unaware assignment),
  elects leaders from the ISR, and applies the leaders' AlterPartition requests (ISR shrink and
  expansion).
- :class:`~kafkacore.broker.controller.quorum_controller.QuorumController`: both, under one lock,
  each change appended as records (``TopicRecord``, ``PartitionRecord``,
  ``PartitionChangeRecord``, ...) to the controller's
  :class:`~kafkacore.broker.metadata.metadata_log.MetadataLog` before it is answered, with a snapshot now
  and then; with several voters in ``controller.quorum.voters``, through the Raft quorum
  (:class:`~kafkacore.broker.controller.kafka_raft_manager.KafkaRaftManager`, docs/broker/quorum.rst).
- :class:`~kafkacore.broker.controller.producer_id_control_manager.ProducerIdControlManager`:
  the blocks of producer ids handed to brokers (AllocateProducerIds, KIP-730), each block's end
  recorded (``ProducerIdsRecord``) before the broker hears of it.
- :class:`~kafkacore.broker.controller.acl_control_manager.AclControlManager`: the cluster's
  ACLs, each an ``AccessControlEntryRecord`` (removed by a ``RemoveAccessControlEntryRecord``),
  replayed by every controller and every broker's authorizer (docs/broker/security.rst).
- The client quotas are kept by the
  :class:`~kafkacore.broker.metadata.client_quota_control_manager.ClientQuotaControlManager`,
  in ``kafkacore.broker.metadata``: the controller and every broker's image replay the same
  records into it.
- :class:`~kafkacore.broker.controller.controller_apis.ControllerApis`: the requests the
  controller answers.
- :class:`~kafkacore.broker.controller.controller_server.ControllerServer`: the controller
  process's server (the same request reactor as a broker).
- :class:`~kafkacore.broker.controller.kafka_raft_manager.KafkaRaftManager` and
  :class:`~kafkacore.broker.controller.kafka_network_channel.KafkaNetworkChannel`: with
  ``controller.quorum.voters`` naming several controllers, each runs a voter of the Raft quorum
  (:mod:`kafkacore.raft`) on a thread and sends its messages to the others; only the leader is
  the active controller, its changes answered once the quorum committed them, and every
  controller replays what is committed (docs/broker/quorum.rst).

How decisions reach the brokers: each broker **pulls** the whole image (a Metadata request to the
controller, answered with every topic, partition state and live broker) after each heartbeat, as
KRaft brokers fetch the metadata log from the controller quorum.  A pull needs no list of
brokers on the controller and no retry when a broker is away: a broker that comes back just
pulls again.  See docs/broker/replication.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log``,
``kafkacore.broker.metadata``, ``kafkacore.broker.config``, ``kafkacore.broker.network`` (its
own reactor), ``kafkacore.broker.security``, ``kafkacore.raft`` (the quorum's core), the
protocol and the errors; never ``kafkacore.broker.server``.
"""
