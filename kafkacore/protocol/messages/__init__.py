"""Every message kafkacore speaks, declared once, as data, one module per API family.

Kafka keeps one JSON file per message (``clients/src/main/resources/common/message/`` in
apache/kafka); we keep one module per family of APIs, each declaration written with the same
keys as Kafka's file (:mod:`~kafkacore.protocol.messages.message_spec` says how).  A request's
declaration is ``<API>_REQUEST`` in the module of its family, its response's ``<API>_RESPONSE``:

==================  ================================================================================
``header``          RequestHeader, ResponseHeader
``produce``         Produce (0)
``fetch``           Fetch (1)
``offsets``         ListOffsets (2), OffsetCommit (8), OffsetFetch (9), OffsetForLeaderEpoch (23),
                    OffsetDelete (47)
``metadata``        Metadata (3), FindCoordinator (10), DescribeCluster (60),
                    DescribeTopicPartitions (75)
``group``           the classic group protocol: JoinGroup (11), Heartbeat (12), LeaveGroup (13),
                    SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42)
``consumer_group``  the consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68),
                    ConsumerGroupDescribe (69)
``sasl``            SaslHandshake (17), SaslAuthenticate (36)
``api_versions``    ApiVersions (18)
``topics``          CreateTopics (19), DeleteTopics (20), DeleteRecords (21), CreatePartitions (37)
``transactions``    InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
                    WriteTxnMarkers (27), TxnOffsetCommit (28), DescribeProducers (61),
                    DescribeTransactions (65), ListTransactions (66)
``acls``            DescribeAcls (29), CreateAcls (30), DeleteAcls (31)
``configs``         DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44)
``replicas``        DescribeLogDirs (35), ElectLeaders (43), AlterPartitionReassignments (45),
                    ListPartitionReassignments (46)
``quotas``          DescribeClientQuotas (48), AlterClientQuotas (49)
``controller``      broker to controller: AlterPartition (56), BrokerRegistration (62),
                    BrokerHeartbeat (63), AllocateProducerIds (67)
``quorum``          the controller quorum (KRaft): Vote (52), BeginQuorumEpoch (53),
                    EndQuorumEpoch (54), DescribeQuorum (55)
==================  ================================================================================

:mod:`~kafkacore.protocol.messages.api_message_type` builds the one registry, ``MESSAGES`` (api
key -> request and response declarations), from those modules; this package hands on every name
of every module, so ``from kafkacore.protocol.messages import PRODUCE_REQUEST, MESSAGES`` works.

What these modules may import: ``kafkacore.protocol.api_keys`` and ``message_spec``, nothing
else (a family module imports no other family, and none imports the registry, so the registry is
built without a cycle).  :mod:`kafkacore.protocol.codec`, above them, interprets the declarations.
"""

from kafkacore.protocol.messages import (
    acls,
    api_versions,
    configs,
    consumer_group,
    controller,
    fetch,
    group,
    header,
    metadata,
    offsets,
    produce,
    quorum,
    quotas,
    replicas,
    sasl,
    topics,
    transactions,
)
from kafkacore.protocol.messages.acls import *  # noqa: F403
from kafkacore.protocol.messages.api_message_type import MESSAGES
from kafkacore.protocol.messages.api_versions import *  # noqa: F403
from kafkacore.protocol.messages.configs import *  # noqa: F403
from kafkacore.protocol.messages.consumer_group import *  # noqa: F403
from kafkacore.protocol.messages.controller import *  # noqa: F403
from kafkacore.protocol.messages.fetch import *  # noqa: F403
from kafkacore.protocol.messages.group import *  # noqa: F403
from kafkacore.protocol.messages.header import *  # noqa: F403
from kafkacore.protocol.messages.message_spec import Declaration
from kafkacore.protocol.messages.metadata import *  # noqa: F403
from kafkacore.protocol.messages.offsets import *  # noqa: F403
from kafkacore.protocol.messages.produce import *  # noqa: F403
from kafkacore.protocol.messages.quorum import *  # noqa: F403
from kafkacore.protocol.messages.quotas import *  # noqa: F403
from kafkacore.protocol.messages.replicas import *  # noqa: F403
from kafkacore.protocol.messages.sasl import *  # noqa: F403
from kafkacore.protocol.messages.topics import *  # noqa: F403
from kafkacore.protocol.messages.transactions import *  # noqa: F403

__all__ = ["MESSAGES", "Declaration"]
__all__ += header.__all__
__all__ += produce.__all__
__all__ += fetch.__all__
__all__ += offsets.__all__
__all__ += metadata.__all__
__all__ += group.__all__
__all__ += consumer_group.__all__
__all__ += sasl.__all__
__all__ += api_versions.__all__
__all__ += topics.__all__
__all__ += transactions.__all__
__all__ += acls.__all__
__all__ += configs.__all__
__all__ += replicas.__all__
__all__ += quotas.__all__
__all__ += controller.__all__
__all__ += quorum.__all__
