"""The broker's request handlers by API family (Kafka's ``KafkaApis.scala`` split by family, as
franz-go's kfake keeps one file per API).  Each module is a mixin of
:class:`~kafkacore.broker.server.kafka_apis.KafkaApis`, whose dispatch table names the module of
every API key; each module's docstring names the requests it answers:

- ``metadata``: Metadata, DescribeTopicPartitions;
- ``cluster``: DescribeCluster, DescribeLogDirs;
- ``topics``: CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
  AlterPartitionReassignments, ListPartitionReassignments;
- ``produce``: Produce;  ``fetch``: Fetch;
- ``offsets``: ListOffsets, OffsetForLeaderEpoch, DeleteRecords;
- ``groups``: FindCoordinator, OffsetCommit, OffsetFetch, JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete;
- ``consumer_groups``: ConsumerGroupHeartbeat, ConsumerGroupDescribe (KIP-848);
- ``transactions``: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
  TxnOffsetCommit, WriteTxnMarkers, DescribeProducers, DescribeTransactions, ListTransactions;
- ``configs``: DescribeConfigs (``ConfigHelper``), AlterConfigs and IncrementalAlterConfigs
  (``ConfigAdminManager``);
- ``quotas``: DescribeClientQuotas, AlterClientQuotas;
- ``sasl``: SaslHandshake, SaslAuthenticate (on a listener without SASL);
- ``base``: ``KafkaApisBase``, the collaborators and helpers every family shares.

ApiVersions is :mod:`kafkacore.broker.network.api_request_handler`'s and the ACL APIs are
:mod:`kafkacore.broker.security.authorizer.acl_apis`' (the controller answers them with the same
code).  See docs/broker/apis.rst.

May import: the packages below ``kafkacore.broker.server`` and the server's own parts that
``KafkaApis`` is handed (replica manager, fetch sessions, quotas, faults); never ``Broker``.
"""
