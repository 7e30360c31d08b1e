"""kafkacore's exceptions.

Client-side errors are raised at the call that caused them.  Broker errors have one class per Kafka
error code (see ``for_code``); each says whether it is ``retriable``, so the Sender can decide
between retrying a batch and failing it.

The broker table follows Kafka's ``org.apache.kafka.common.protocol.Errors`` (apache/kafka trunk
of October 2024, the code base of Kafka 4.0): the same codes, the same messages, and ``retriable``
exactly where Java's exception for that code is a ``RetriableException``.  Python names are Kafka's
enum names in CamelCase with ``Error`` at the end (``NOT_LEADER_OR_FOLLOWER`` is
``NotLeaderOrFollowerError``, ``INVALID_TOPIC_EXCEPTION`` is ``InvalidTopicError``).  Java's
intermediate classes are kept where the producer acts on them: ``InvalidMetadataError`` (refresh
metadata, then retry), ``AuthorizationError`` and ``AuthenticationError``.

``Errors`` names every code as Java's enum does (``Errors.NOT_LEADER_OR_FOLLOWER`` is 6): code
that writes or compares an ``error_code`` uses it, never the number.
"""

from __future__ import annotations

import enum


class KafkaError(Exception):
    """Base of every kafkacore exception."""

    #: Whether sending again may succeed (a transient condition on the broker or the network).
    retriable = False


class KafkaTimeoutError(KafkaError, TimeoutError):
    """A bounded wait ran out: metadata, buffer memory, delivery, flush or close."""

    retriable = True


class BufferExhaustedError(KafkaTimeoutError):
    """``BufferPool.allocate`` waited ``max.block.ms`` and no memory came free."""


class ConfigError(KafkaError, ValueError):
    """A setting is unknown, has a bad value, or conflicts with another setting."""


class IllegalStateError(KafkaError, RuntimeError):
    """An operation on an object in a state that forbids it (appending to a closed batch, a
    group's transition that its state machine does not allow, ...): Java's
    ``IllegalStateException``.  In the broker it marks a broken invariant: a bug, not bad input."""


class TransactionAbortedError(KafkaError):
    """The record's transaction was aborted before the record was sent (Java's
    ``TransactionAbortedException``): the record was never written."""


class CorruptRecordError(KafkaError, ValueError):
    """Bytes that are not a valid record batch: bad magic, CRC mismatch, truncated, bad varint."""


class RecordTooLargeError(KafkaError, ValueError):
    """A record larger than ``max.request.size`` or ``buffer.memory``."""


class SerializationError(KafkaError, TypeError):
    """A key, value or header that is not bytes-like and has no serializer."""


# ---------------------------------------------------------------------------------------------
# Broker errors: one class per error code of the Kafka protocol.
# ---------------------------------------------------------------------------------------------


class BrokerResponseError(KafkaError):
    """An error code a broker sent back in a response.

    Each subclass is one Kafka error code: ``errno`` is the code, ``retriable`` says whether the
    same request may succeed if sent again, ``description`` is Kafka's own text for the code.  The
    instance carries the broker's ``error_message`` when the response had one (newer Produce
    versions send a per-partition message), else ``None``.
    """

    #: The Kafka error code (``Errors.code()`` in Java).
    errno: int = -1
    #: Kafka's enum name for the code, e.g. ``"NOT_LEADER_OR_FOLLOWER"`` (filled in below).
    code_name: str = "UNKNOWN_SERVER_ERROR"
    #: Kafka's text for the code.
    description: str = ""
    #: True for Java's ``InvalidMetadataException`` family: the client's view of the cluster is
    #: stale, so the Sender requests a metadata update before it retries.
    invalid_metadata: bool = False

    def __init__(self, error_message: str | None = None, *args: object) -> None:
        super().__init__(*((error_message,) + args if error_message is not None else args))
        self.error_message = error_message

    def __str__(self) -> str:
        text = self.error_message or self.description
        return f"[Error {self.errno}] {self.code_name}: {text}"

    def __reduce__(self):
        # Spark ships exceptions between processes.  The classes for_code() makes for unknown
        # codes cannot be found by name when unpickling, so those are rebuilt from their code;
        # every other class (subclasses elsewhere included) pickles by name, as usual.
        cls = type(self)
        if issubclass(cls, UnrecognizedBrokerError) and cls is not UnrecognizedBrokerError:
            return (_rebuild_broker_error, (self.errno, self.error_message))
        return (cls, self.args, self.__dict__)


def _rebuild_broker_error(errno: int, error_message: str | None) -> BrokerResponseError:
    return for_code(errno)(error_message)


class InvalidMetadataError(BrokerResponseError):
    """Java's ``InvalidMetadataException``: the client's metadata is stale; refresh and retry."""

    retriable = True
    invalid_metadata = True


class AuthorizationError(BrokerResponseError):
    """Java's ``AuthorizationException``: the principal may not do this."""


class AuthenticationError(BrokerResponseError):
    """Java's ``AuthenticationException``: the client could not authenticate."""


class UnrecognizedBrokerError(BrokerResponseError):
    """Base of the classes ``for_code`` makes for codes this table does not know.

    A newer broker may send a code added after this table was written.  Java turns such a code into
    ``UNKNOWN_SERVER_ERROR``; we keep the number so that logs show what the broker said.  Not
    retriable, as in Java.
    """

    description = "An error code this client does not know (it may be newer than the client)."


class UnknownServerError(BrokerResponseError):
    """-1 ``UNKNOWN_SERVER_ERROR`` (Java ``UnknownServerException``)."""

    errno = -1
    retriable = False
    description = "The server experienced an unexpected error when processing the request."


class OffsetOutOfRangeError(BrokerResponseError):
    """1 ``OFFSET_OUT_OF_RANGE`` (Java ``OffsetOutOfRangeException``)."""

    errno = 1
    retriable = False
    description = (
        "The requested offset is not within the range of offsets maintained by the server."
    )


class CorruptMessageError(BrokerResponseError, CorruptRecordError):
    """2 ``CORRUPT_MESSAGE`` (Java ``CorruptRecordException``)."""

    errno = 2
    retriable = True
    description = (
        "This message has failed its CRC checksum, exceeds the valid size, has a null key for a "
        "compacted topic, or is otherwise corrupt."
    )


class UnknownTopicOrPartitionError(InvalidMetadataError):
    """3 ``UNKNOWN_TOPIC_OR_PARTITION`` (Java ``UnknownTopicOrPartitionException``)."""

    errno = 3
    retriable = True
    description = "This server does not host this topic-partition."


class InvalidFetchSizeError(BrokerResponseError):
    """4 ``INVALID_FETCH_SIZE`` (Java ``InvalidFetchSizeException``)."""

    errno = 4
    retriable = False
    description = "The requested fetch size is invalid."


class LeaderNotAvailableError(InvalidMetadataError):
    """5 ``LEADER_NOT_AVAILABLE`` (Java ``LeaderNotAvailableException``)."""

    errno = 5
    retriable = True
    description = (
        "There is no leader for this topic-partition as we are in the middle of a leadership "
        "election."
    )


class NotLeaderOrFollowerError(InvalidMetadataError):
    """6 ``NOT_LEADER_OR_FOLLOWER`` (Java ``NotLeaderOrFollowerException``)."""

    errno = 6
    retriable = True
    description = (
        "For requests intended only for the leader, this error indicates that the broker is not the "
        "current leader. For requests intended for any replica, this error indicates that the broker "
        "is not a replica of the topic partition."
    )


class RequestTimedOutError(BrokerResponseError, KafkaTimeoutError):
    """7 ``REQUEST_TIMED_OUT`` (Java ``TimeoutException``)."""

    errno = 7
    retriable = True
    description = "The request timed out."


class BrokerNotAvailableError(BrokerResponseError):
    """8 ``BROKER_NOT_AVAILABLE`` (Java ``BrokerNotAvailableException``)."""

    errno = 8
    retriable = False
    description = "The broker is not available."


class ReplicaNotAvailableError(InvalidMetadataError):
    """9 ``REPLICA_NOT_AVAILABLE`` (Java ``ReplicaNotAvailableException``)."""

    errno = 9
    retriable = True
    description = (
        "The replica is not available for the requested topic-partition. Produce/Fetch requests and "
        "other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the"
        " broker is not a replica of the topic-partition."
    )


class MessageTooLargeError(BrokerResponseError, RecordTooLargeError):
    """10 ``MESSAGE_TOO_LARGE`` (Java ``RecordTooLargeException``)."""

    errno = 10
    retriable = False
    description = (
        "The request included a message larger than the max message size the server will accept."
    )


class StaleControllerEpochError(BrokerResponseError):
    """11 ``STALE_CONTROLLER_EPOCH`` (Java ``ControllerMovedException``)."""

    errno = 11
    retriable = False
    description = "The controller moved to another broker."


class OffsetMetadataTooLargeError(BrokerResponseError):
    """12 ``OFFSET_METADATA_TOO_LARGE`` (Java ``OffsetMetadataTooLarge``)."""

    errno = 12
    retriable = False
    description = "The metadata field of the offset request was too large."


class NetworkError(InvalidMetadataError):
    """13 ``NETWORK_EXCEPTION`` (Java ``NetworkException``)."""

    errno = 13
    retriable = True
    description = "The server disconnected before a response was received."


class CoordinatorLoadInProgressError(BrokerResponseError):
    """14 ``COORDINATOR_LOAD_IN_PROGRESS`` (Java ``CoordinatorLoadInProgressException``)."""

    errno = 14
    retriable = True
    description = "The coordinator is loading and hence can't process requests."


class CoordinatorNotAvailableError(BrokerResponseError):
    """15 ``COORDINATOR_NOT_AVAILABLE`` (Java ``CoordinatorNotAvailableException``)."""

    errno = 15
    retriable = True
    description = "The coordinator is not available."


class NotCoordinatorError(BrokerResponseError):
    """16 ``NOT_COORDINATOR`` (Java ``NotCoordinatorException``)."""

    errno = 16
    retriable = True
    description = "This is not the correct coordinator."


class InvalidTopicError(BrokerResponseError):
    """17 ``INVALID_TOPIC_EXCEPTION`` (Java ``InvalidTopicException``)."""

    errno = 17
    retriable = False
    description = "The request attempted to perform an operation on an invalid topic."


class RecordListTooLargeError(BrokerResponseError):
    """18 ``RECORD_LIST_TOO_LARGE`` (Java ``RecordBatchTooLargeException``)."""

    errno = 18
    retriable = False
    description = (
        "The request included message batch larger than the configured segment size on the server."
    )


class NotEnoughReplicasError(BrokerResponseError):
    """19 ``NOT_ENOUGH_REPLICAS`` (Java ``NotEnoughReplicasException``)."""

    errno = 19
    retriable = True
    description = "Messages are rejected since there are fewer in-sync replicas than required."


class NotEnoughReplicasAfterAppendError(BrokerResponseError):
    """20 ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` (Java ``NotEnoughReplicasAfterAppendException``)."""

    errno = 20
    retriable = True
    description = "Messages are written to the log, but to fewer in-sync replicas than required."


class InvalidRequiredAcksError(BrokerResponseError):
    """21 ``INVALID_REQUIRED_ACKS`` (Java ``InvalidRequiredAcksException``)."""

    errno = 21
    retriable = False
    description = "Produce request specified an invalid value for required acks."


class IllegalGenerationError(BrokerResponseError):
    """22 ``ILLEGAL_GENERATION`` (Java ``IllegalGenerationException``)."""

    errno = 22
    retriable = False
    description = "Specified group generation id is not valid."


class InconsistentGroupProtocolError(BrokerResponseError):
    """23 ``INCONSISTENT_GROUP_PROTOCOL`` (Java ``InconsistentGroupProtocolException``)."""

    errno = 23
    retriable = False
    description = (
        "The group member's supported protocols are incompatible with those of existing members or "
        "first group member tried to join with empty protocol type or empty protocol list."
    )


class InvalidGroupIdError(BrokerResponseError):
    """24 ``INVALID_GROUP_ID`` (Java ``InvalidGroupIdException``)."""

    errno = 24
    retriable = False
    description = "The configured groupId is invalid."


class UnknownMemberIdError(BrokerResponseError):
    """25 ``UNKNOWN_MEMBER_ID`` (Java ``UnknownMemberIdException``)."""

    errno = 25
    retriable = False
    description = "The coordinator is not aware of this member."


class InvalidSessionTimeoutError(BrokerResponseError):
    """26 ``INVALID_SESSION_TIMEOUT`` (Java ``InvalidSessionTimeoutException``)."""

    errno = 26
    retriable = False
    description = (
        "The session timeout is not within the range allowed by the broker (as configured by "
        "group.min.session.timeout.ms and group.max.session.timeout.ms)."
    )


class RebalanceInProgressError(BrokerResponseError):
    """27 ``REBALANCE_IN_PROGRESS`` (Java ``RebalanceInProgressException``)."""

    errno = 27
    retriable = False
    description = "The group is rebalancing, so a rejoin is needed."


class InvalidCommitOffsetSizeError(BrokerResponseError):
    """28 ``INVALID_COMMIT_OFFSET_SIZE`` (Java ``InvalidCommitOffsetSizeException``)."""

    errno = 28
    retriable = False
    description = "The committing offset data size is not valid."


class TopicAuthorizationFailedError(AuthorizationError):
    """29 ``TOPIC_AUTHORIZATION_FAILED`` (Java ``TopicAuthorizationException``)."""

    errno = 29
    retriable = False
    description = "Topic authorization failed."


class GroupAuthorizationFailedError(AuthorizationError):
    """30 ``GROUP_AUTHORIZATION_FAILED`` (Java ``GroupAuthorizationException``)."""

    errno = 30
    retriable = False
    description = "Group authorization failed."


class ClusterAuthorizationFailedError(AuthorizationError):
    """31 ``CLUSTER_AUTHORIZATION_FAILED`` (Java ``ClusterAuthorizationException``)."""

    errno = 31
    retriable = False
    description = "Cluster authorization failed."


class InvalidTimestampError(BrokerResponseError):
    """32 ``INVALID_TIMESTAMP`` (Java ``InvalidTimestampException``)."""

    errno = 32
    retriable = False
    description = "The timestamp of the message is out of acceptable range."


class UnsupportedSaslMechanismError(AuthenticationError):
    """33 ``UNSUPPORTED_SASL_MECHANISM`` (Java ``UnsupportedSaslMechanismException``)."""

    errno = 33
    retriable = False
    description = "The broker does not support the requested SASL mechanism."


class IllegalSaslStateError(AuthenticationError):
    """34 ``ILLEGAL_SASL_STATE`` (Java ``IllegalSaslStateException``)."""

    errno = 34
    retriable = False
    description = "Request is not valid given the current SASL state."


class UnsupportedVersionError(BrokerResponseError):
    """35 ``UNSUPPORTED_VERSION`` (Java ``UnsupportedVersionException``)."""

    errno = 35
    retriable = False
    description = "The version of API is not supported."


class TopicAlreadyExistsError(BrokerResponseError):
    """36 ``TOPIC_ALREADY_EXISTS`` (Java ``TopicExistsException``)."""

    errno = 36
    retriable = False
    description = "Topic with this name already exists."


class InvalidPartitionsError(BrokerResponseError):
    """37 ``INVALID_PARTITIONS`` (Java ``InvalidPartitionsException``)."""

    errno = 37
    retriable = False
    description = "Number of partitions is below 1."


class InvalidReplicationFactorError(BrokerResponseError):
    """38 ``INVALID_REPLICATION_FACTOR`` (Java ``InvalidReplicationFactorException``)."""

    errno = 38
    retriable = False
    description = "Replication factor is below 1 or larger than the number of available brokers."


class InvalidReplicaAssignmentError(BrokerResponseError):
    """39 ``INVALID_REPLICA_ASSIGNMENT`` (Java ``InvalidReplicaAssignmentException``)."""

    errno = 39
    retriable = False
    description = "Replica assignment is invalid."


class InvalidConfigError(BrokerResponseError):
    """40 ``INVALID_CONFIG`` (Java ``InvalidConfigurationException``)."""

    errno = 40
    retriable = False
    description = "Configuration is invalid."


class NotControllerError(BrokerResponseError):
    """41 ``NOT_CONTROLLER`` (Java ``NotControllerException``)."""

    errno = 41
    retriable = True
    description = "This is not the correct controller for this cluster."


class InvalidRequestError(BrokerResponseError):
    """42 ``INVALID_REQUEST`` (Java ``InvalidRequestException``)."""

    errno = 42
    retriable = False
    description = (
        "This most likely occurs because of a request being malformed by the client library or the "
        "message was sent to an incompatible broker. See the broker logs for more details."
    )


class UnsupportedForMessageFormatError(BrokerResponseError):
    """43 ``UNSUPPORTED_FOR_MESSAGE_FORMAT`` (Java ``UnsupportedForMessageFormatException``)."""

    errno = 43
    retriable = False
    description = "The message format version on the broker does not support the request."


class PolicyViolationError(BrokerResponseError):
    """44 ``POLICY_VIOLATION`` (Java ``PolicyViolationException``)."""

    errno = 44
    retriable = False
    description = "Request parameters do not satisfy the configured policy."


class OutOfOrderSequenceNumberError(BrokerResponseError):
    """45 ``OUT_OF_ORDER_SEQUENCE_NUMBER`` (Java ``OutOfOrderSequenceException``)."""

    errno = 45
    retriable = False
    description = "The broker received an out of order sequence number."


class DuplicateSequenceNumberError(BrokerResponseError):
    """46 ``DUPLICATE_SEQUENCE_NUMBER`` (Java ``DuplicateSequenceException``)."""

    errno = 46
    retriable = False
    description = "The broker received a duplicate sequence number."


class InvalidProducerEpochError(BrokerResponseError):
    """47 ``INVALID_PRODUCER_EPOCH`` (Java ``InvalidProducerEpochException``)."""

    errno = 47
    retriable = False
    description = "Producer attempted to produce with an old epoch."


class InvalidTxnStateError(BrokerResponseError):
    """48 ``INVALID_TXN_STATE`` (Java ``InvalidTxnStateException``)."""

    errno = 48
    retriable = False
    description = "The producer attempted a transactional operation in an invalid state."


class InvalidProducerIdMappingError(BrokerResponseError):
    """49 ``INVALID_PRODUCER_ID_MAPPING`` (Java ``InvalidPidMappingException``)."""

    errno = 49
    retriable = False
    description = (
        "The producer attempted to use a producer id which is not currently assigned to its "
        "transactional id."
    )


class InvalidTransactionTimeoutError(BrokerResponseError):
    """50 ``INVALID_TRANSACTION_TIMEOUT`` (Java ``InvalidTxnTimeoutException``)."""

    errno = 50
    retriable = False
    description = (
        "The transaction timeout is larger than the maximum value allowed by the broker (as "
        "configured by transaction.max.timeout.ms)."
    )


class ConcurrentTransactionsError(BrokerResponseError):
    """51 ``CONCURRENT_TRANSACTIONS`` (Java ``ConcurrentTransactionsException``)."""

    errno = 51
    retriable = True
    description = (
        "The producer attempted to update a transaction while another concurrent operation on the "
        "same transaction was ongoing."
    )


class TransactionCoordinatorFencedError(BrokerResponseError):
    """52 ``TRANSACTION_COORDINATOR_FENCED`` (Java ``TransactionCoordinatorFencedException``)."""

    errno = 52
    retriable = False
    description = (
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current"
        " coordinator for a given producer."
    )


class TransactionalIdAuthorizationFailedError(AuthorizationError):
    """53 ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED`` (Java ``TransactionalIdAuthorizationException``)."""

    errno = 53
    retriable = False
    description = "Transactional Id authorization failed."


class SecurityDisabledError(BrokerResponseError):
    """54 ``SECURITY_DISABLED`` (Java ``SecurityDisabledException``)."""

    errno = 54
    retriable = False
    description = "Security features are disabled."


class OperationNotAttemptedError(BrokerResponseError):
    """55 ``OPERATION_NOT_ATTEMPTED`` (Java ``OperationNotAttemptedException``)."""

    errno = 55
    retriable = False
    description = (
        "The broker did not attempt to execute this operation. This may happen for batched RPCs where"
        " some operations in the batch failed, causing the broker to respond without trying the rest."
    )


class KafkaStorageError(InvalidMetadataError):
    """56 ``KAFKA_STORAGE_ERROR`` (Java ``KafkaStorageException``)."""

    errno = 56
    retriable = True
    description = "Disk error when trying to access log file on the disk."


class LogDirNotFoundError(BrokerResponseError):
    """57 ``LOG_DIR_NOT_FOUND`` (Java ``LogDirNotFoundException``)."""

    errno = 57
    retriable = False
    description = "The user-specified log directory is not found in the broker config."


class SaslAuthenticationFailedError(AuthenticationError):
    """58 ``SASL_AUTHENTICATION_FAILED`` (Java ``SaslAuthenticationException``)."""

    errno = 58
    retriable = False
    description = "SASL Authentication failed."


class UnknownProducerIdError(OutOfOrderSequenceNumberError):
    """59 ``UNKNOWN_PRODUCER_ID`` (Java ``UnknownProducerIdException``)."""

    errno = 59
    retriable = False
    description = (
        "This exception is raised by the broker if it could not locate the producer metadata "
        "associated with the producerId in question. This could happen if, for instance, the "
        "producer's records were deleted because their retention time had elapsed. Once the last "
        "records of the producerId are removed, the producer's metadata is removed from the broker, "
        "and future appends by the producer will return this exception."
    )


class ReassignmentInProgressError(BrokerResponseError):
    """60 ``REASSIGNMENT_IN_PROGRESS`` (Java ``ReassignmentInProgressException``)."""

    errno = 60
    retriable = False
    description = "A partition reassignment is in progress."


class DelegationTokenAuthDisabledError(BrokerResponseError):
    """61 ``DELEGATION_TOKEN_AUTH_DISABLED`` (Java ``DelegationTokenDisabledException``)."""

    errno = 61
    retriable = False
    description = "Delegation Token feature is not enabled."


class DelegationTokenNotFoundError(BrokerResponseError):
    """62 ``DELEGATION_TOKEN_NOT_FOUND`` (Java ``DelegationTokenNotFoundException``)."""

    errno = 62
    retriable = False
    description = "Delegation Token is not found on server."


class DelegationTokenOwnerMismatchError(BrokerResponseError):
    """63 ``DELEGATION_TOKEN_OWNER_MISMATCH`` (Java ``DelegationTokenOwnerMismatchException``)."""

    errno = 63
    retriable = False
    description = "Specified Principal is not valid Owner/Renewer."


class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    """64 ``DELEGATION_TOKEN_REQUEST_NOT_ALLOWED`` (Java ``UnsupportedByAuthenticationException``)."""

    errno = 64
    retriable = False
    description = (
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation "
        "token authenticated channels."
    )


class DelegationTokenAuthorizationFailedError(AuthorizationError):
    """65 ``DELEGATION_TOKEN_AUTHORIZATION_FAILED`` (Java ``DelegationTokenAuthorizationException``)."""

    errno = 65
    retriable = False
    description = "Delegation Token authorization failed."


class DelegationTokenExpiredError(BrokerResponseError):
    """66 ``DELEGATION_TOKEN_EXPIRED`` (Java ``DelegationTokenExpiredException``)."""

    errno = 66
    retriable = False
    description = "Delegation Token is expired."


class InvalidPrincipalTypeError(BrokerResponseError):
    """67 ``INVALID_PRINCIPAL_TYPE`` (Java ``InvalidPrincipalTypeException``)."""

    errno = 67
    retriable = False
    description = "Supplied principalType is not supported."


class NonEmptyGroupError(BrokerResponseError):
    """68 ``NON_EMPTY_GROUP`` (Java ``GroupNotEmptyException``)."""

    errno = 68
    retriable = False
    description = "The group is not empty."


class GroupIdNotFoundError(BrokerResponseError):
    """69 ``GROUP_ID_NOT_FOUND`` (Java ``GroupIdNotFoundException``)."""

    errno = 69
    retriable = False
    description = "The group id does not exist."


class FetchSessionIdNotFoundError(BrokerResponseError):
    """70 ``FETCH_SESSION_ID_NOT_FOUND`` (Java ``FetchSessionIdNotFoundException``)."""

    errno = 70
    retriable = True
    description = "The fetch session ID was not found."


class InvalidFetchSessionEpochError(BrokerResponseError):
    """71 ``INVALID_FETCH_SESSION_EPOCH`` (Java ``InvalidFetchSessionEpochException``)."""

    errno = 71
    retriable = True
    description = "The fetch session epoch is invalid."


class ListenerNotFoundError(InvalidMetadataError):
    """72 ``LISTENER_NOT_FOUND`` (Java ``ListenerNotFoundException``)."""

    errno = 72
    retriable = True
    description = (
        "There is no listener on the leader broker that matches the listener on which metadata "
        "request was processed."
    )


class TopicDeletionDisabledError(BrokerResponseError):
    """73 ``TOPIC_DELETION_DISABLED`` (Java ``TopicDeletionDisabledException``)."""

    errno = 73
    retriable = False
    description = "Topic deletion is disabled."


class FencedLeaderEpochError(InvalidMetadataError):
    """74 ``FENCED_LEADER_EPOCH`` (Java ``FencedLeaderEpochException``)."""

    errno = 74
    retriable = True
    description = "The leader epoch in the request is older than the epoch on the broker."


class UnknownLeaderEpochError(BrokerResponseError):
    """75 ``UNKNOWN_LEADER_EPOCH`` (Java ``UnknownLeaderEpochException``)."""

    errno = 75
    retriable = True
    description = "The leader epoch in the request is newer than the epoch on the broker."


class UnsupportedCompressionTypeError(BrokerResponseError):
    """76 ``UNSUPPORTED_COMPRESSION_TYPE`` (Java ``UnsupportedCompressionTypeException``)."""

    errno = 76
    retriable = False
    description = "The requesting client does not support the compression type of given partition."


class StaleBrokerEpochError(BrokerResponseError):
    """77 ``STALE_BROKER_EPOCH`` (Java ``StaleBrokerEpochException``)."""

    errno = 77
    retriable = False
    description = "Broker epoch has changed."


class OffsetNotAvailableError(BrokerResponseError):
    """78 ``OFFSET_NOT_AVAILABLE`` (Java ``OffsetNotAvailableException``)."""

    errno = 78
    retriable = True
    description = (
        "The leader high watermark has not caught up from a recent leader election so the offsets "
        "cannot be guaranteed to be monotonically increasing."
    )


class MemberIdRequiredError(BrokerResponseError):
    """79 ``MEMBER_ID_REQUIRED`` (Java ``MemberIdRequiredException``)."""

    errno = 79
    retriable = False
    description = "The group member needs to have a valid member id before actually entering a consumer group."


class PreferredLeaderNotAvailableError(InvalidMetadataError):
    """80 ``PREFERRED_LEADER_NOT_AVAILABLE`` (Java ``PreferredLeaderNotAvailableException``)."""

    errno = 80
    retriable = True
    description = "The preferred leader was not available."


class GroupMaxSizeReachedError(BrokerResponseError):
    """81 ``GROUP_MAX_SIZE_REACHED`` (Java ``GroupMaxSizeReachedException``)."""

    errno = 81
    retriable = False
    description = "The consumer group has reached its max size."


class FencedInstanceIdError(BrokerResponseError):
    """82 ``FENCED_INSTANCE_ID`` (Java ``FencedInstanceIdException``)."""

    errno = 82
    retriable = False
    description = (
        "The broker rejected this static consumer since another consumer with the same "
        "group.instance.id has registered with a different member.id."
    )


class EligibleLeadersNotAvailableError(InvalidMetadataError):
    """83 ``ELIGIBLE_LEADERS_NOT_AVAILABLE`` (Java ``EligibleLeadersNotAvailableException``)."""

    errno = 83
    retriable = True
    description = "Eligible topic partition leaders are not available."


class ElectionNotNeededError(InvalidMetadataError):
    """84 ``ELECTION_NOT_NEEDED`` (Java ``ElectionNotNeededException``)."""

    errno = 84
    retriable = True
    description = "Leader election not needed for topic partition."


class NoReassignmentInProgressError(BrokerResponseError):
    """85 ``NO_REASSIGNMENT_IN_PROGRESS`` (Java ``NoReassignmentInProgressException``)."""

    errno = 85
    retriable = False
    description = "No partition reassignment is in progress."


class GroupSubscribedToTopicError(BrokerResponseError):
    """86 ``GROUP_SUBSCRIBED_TO_TOPIC`` (Java ``GroupSubscribedToTopicException``)."""

    errno = 86
    retriable = False
    description = (
        "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to "
        "it."
    )


class InvalidRecordError(BrokerResponseError):
    """87 ``INVALID_RECORD`` (Java ``InvalidRecordException``)."""

    errno = 87
    retriable = False
    description = "This record has failed the validation on broker and hence will be rejected."


class UnstableOffsetCommitError(BrokerResponseError):
    """88 ``UNSTABLE_OFFSET_COMMIT`` (Java ``UnstableOffsetCommitException``)."""

    errno = 88
    retriable = True
    description = "There are unstable offsets that need to be cleared."


class ThrottlingQuotaExceededError(BrokerResponseError):
    """89 ``THROTTLING_QUOTA_EXCEEDED`` (Java ``ThrottlingQuotaExceededException``)."""

    errno = 89
    retriable = True
    description = "The throttling quota has been exceeded."


class ProducerFencedError(BrokerResponseError):
    """90 ``PRODUCER_FENCED`` (Java ``ProducerFencedException``)."""

    errno = 90
    retriable = False
    description = (
        "There is a newer producer with the same transactionalId which fences the current one."
    )


class ResourceNotFoundError(BrokerResponseError):
    """91 ``RESOURCE_NOT_FOUND`` (Java ``ResourceNotFoundException``)."""

    errno = 91
    retriable = False
    description = "A request illegally referred to a resource that does not exist."


class DuplicateResourceError(BrokerResponseError):
    """92 ``DUPLICATE_RESOURCE`` (Java ``DuplicateResourceException``)."""

    errno = 92
    retriable = False
    description = "A request illegally referred to the same resource twice."


class UnacceptableCredentialError(BrokerResponseError):
    """93 ``UNACCEPTABLE_CREDENTIAL`` (Java ``UnacceptableCredentialException``)."""

    errno = 93
    retriable = False
    description = "Requested credential would not meet criteria for acceptability."


class InconsistentVoterSetError(BrokerResponseError):
    """94 ``INCONSISTENT_VOTER_SET`` (Java ``InconsistentVoterSetException``)."""

    errno = 94
    retriable = False
    description = (
        "Indicates that the either the sender or recipient of a voter-only request is not one of the "
        "expected voters."
    )


class InvalidUpdateVersionError(BrokerResponseError):
    """95 ``INVALID_UPDATE_VERSION`` (Java ``InvalidUpdateVersionException``)."""

    errno = 95
    retriable = False
    description = "The given update version was invalid."


class FeatureUpdateFailedError(BrokerResponseError):
    """96 ``FEATURE_UPDATE_FAILED`` (Java ``FeatureUpdateFailedException``)."""

    errno = 96
    retriable = False
    description = "Unable to update finalized features due to an unexpected server error."


class PrincipalDeserializationFailureError(BrokerResponseError):
    """97 ``PRINCIPAL_DESERIALIZATION_FAILURE`` (Java ``PrincipalDeserializationException``)."""

    errno = 97
    retriable = False
    description = (
        "Request principal deserialization failed during forwarding. This indicates an internal error"
        " on the broker cluster security setup."
    )


class SnapshotNotFoundError(BrokerResponseError):
    """98 ``SNAPSHOT_NOT_FOUND`` (Java ``SnapshotNotFoundException``)."""

    errno = 98
    retriable = False
    description = "Requested snapshot was not found."


class PositionOutOfRangeError(BrokerResponseError):
    """99 ``POSITION_OUT_OF_RANGE`` (Java ``PositionOutOfRangeException``)."""

    errno = 99
    retriable = False
    description = (
        "Requested position is not greater than or equal to zero, and less than the size of the "
        "snapshot."
    )


class UnknownTopicIdError(InvalidMetadataError):
    """100 ``UNKNOWN_TOPIC_ID`` (Java ``UnknownTopicIdException``)."""

    errno = 100
    retriable = True
    description = "This server does not host this topic ID."


class DuplicateBrokerRegistrationError(BrokerResponseError):
    """101 ``DUPLICATE_BROKER_REGISTRATION`` (Java ``DuplicateBrokerRegistrationException``)."""

    errno = 101
    retriable = False
    description = "This broker ID is already in use."


class BrokerIdNotRegisteredError(BrokerResponseError):
    """102 ``BROKER_ID_NOT_REGISTERED`` (Java ``BrokerIdNotRegisteredException``)."""

    errno = 102
    retriable = False
    description = "The given broker ID was not registered."


class InconsistentTopicIdError(InvalidMetadataError):
    """103 ``INCONSISTENT_TOPIC_ID`` (Java ``InconsistentTopicIdException``)."""

    errno = 103
    retriable = True
    description = "The log's topic ID did not match the topic ID in the request."


class InconsistentClusterIdError(BrokerResponseError):
    """104 ``INCONSISTENT_CLUSTER_ID`` (Java ``InconsistentClusterIdException``)."""

    errno = 104
    retriable = False
    description = "The clusterId in the request does not match that found on the server."


class TransactionalIdNotFoundError(BrokerResponseError):
    """105 ``TRANSACTIONAL_ID_NOT_FOUND`` (Java ``TransactionalIdNotFoundException``)."""

    errno = 105
    retriable = False
    description = "The transactionalId could not be found."


class FetchSessionTopicIdError(BrokerResponseError):
    """106 ``FETCH_SESSION_TOPIC_ID_ERROR`` (Java ``FetchSessionTopicIdException``)."""

    errno = 106
    retriable = True
    description = "The fetch session encountered inconsistent topic ID usage."


class IneligibleReplicaError(BrokerResponseError):
    """107 ``INELIGIBLE_REPLICA`` (Java ``IneligibleReplicaException``)."""

    errno = 107
    retriable = False
    description = "The new ISR contains at least one ineligible replica."


class NewLeaderElectedError(BrokerResponseError):
    """108 ``NEW_LEADER_ELECTED`` (Java ``NewLeaderElectedException``)."""

    errno = 108
    retriable = False
    description = (
        "The AlterPartition request successfully updated the partition state but the leader has "
        "changed."
    )


class OffsetMovedToTieredStorageError(BrokerResponseError):
    """109 ``OFFSET_MOVED_TO_TIERED_STORAGE`` (Java ``OffsetMovedToTieredStorageException``)."""

    errno = 109
    retriable = False
    description = "The requested offset is moved to tiered storage."


class FencedMemberEpochError(BrokerResponseError):
    """110 ``FENCED_MEMBER_EPOCH`` (Java ``FencedMemberEpochException``)."""

    errno = 110
    retriable = False
    description = (
        "The member epoch is fenced by the group coordinator. The member must abandon all its "
        "partitions and rejoin."
    )


class UnreleasedInstanceIdError(BrokerResponseError):
    """111 ``UNRELEASED_INSTANCE_ID`` (Java ``UnreleasedInstanceIdException``)."""

    errno = 111
    retriable = False
    description = (
        "The instance ID is still used by another member in the consumer group. That member must "
        "leave first."
    )


class UnsupportedAssignorError(BrokerResponseError):
    """112 ``UNSUPPORTED_ASSIGNOR`` (Java ``UnsupportedAssignorException``)."""

    errno = 112
    retriable = False
    description = "The assignor or its version range is not supported by the consumer group."


class StaleMemberEpochError(BrokerResponseError):
    """113 ``STALE_MEMBER_EPOCH`` (Java ``StaleMemberEpochException``)."""

    errno = 113
    retriable = False
    description = (
        "The member epoch is stale. The member must retry after receiving its updated member epoch "
        "via the ConsumerGroupHeartbeat API."
    )


class MismatchedEndpointTypeError(BrokerResponseError):
    """114 ``MISMATCHED_ENDPOINT_TYPE`` (Java ``MismatchedEndpointTypeException``)."""

    errno = 114
    retriable = False
    description = "The request was sent to an endpoint of the wrong type."


class UnsupportedEndpointTypeError(BrokerResponseError):
    """115 ``UNSUPPORTED_ENDPOINT_TYPE`` (Java ``UnsupportedEndpointTypeException``)."""

    errno = 115
    retriable = False
    description = "This endpoint type is not supported yet."


class UnknownControllerIdError(BrokerResponseError):
    """116 ``UNKNOWN_CONTROLLER_ID`` (Java ``UnknownControllerIdException``)."""

    errno = 116
    retriable = False
    description = "This controller ID is not known."


class UnknownSubscriptionIdError(BrokerResponseError):
    """117 ``UNKNOWN_SUBSCRIPTION_ID`` (Java ``UnknownSubscriptionIdException``)."""

    errno = 117
    retriable = False
    description = (
        "Client sent a push telemetry request with an invalid or outdated subscription ID."
    )


class TelemetryTooLargeError(BrokerResponseError):
    """118 ``TELEMETRY_TOO_LARGE`` (Java ``TelemetryTooLargeException``)."""

    errno = 118
    retriable = False
    description = (
        "Client sent a push telemetry request larger than the maximum size the broker will accept."
    )


class InvalidRegistrationError(BrokerResponseError):
    """119 ``INVALID_REGISTRATION`` (Java ``InvalidRegistrationException``)."""

    errno = 119
    retriable = False
    description = "The controller has considered the broker registration to be invalid."


class TransactionAbortableError(BrokerResponseError):
    """120 ``TRANSACTION_ABORTABLE`` (Java ``TransactionAbortableException``)."""

    errno = 120
    retriable = False
    description = (
        "The server encountered an error with the transaction. The client can abort the transaction "
        "to continue using this transactional ID."
    )


class InvalidRecordStateError(BrokerResponseError):
    """121 ``INVALID_RECORD_STATE`` (Java ``InvalidRecordStateException``)."""

    errno = 121
    retriable = False
    description = (
        "The record state is invalid. The acknowledgement of delivery could not be completed."
    )


class ShareSessionNotFoundError(BrokerResponseError):
    """122 ``SHARE_SESSION_NOT_FOUND`` (Java ``ShareSessionNotFoundException``)."""

    errno = 122
    retriable = True
    description = "The share session was not found."


class InvalidShareSessionEpochError(BrokerResponseError):
    """123 ``INVALID_SHARE_SESSION_EPOCH`` (Java ``InvalidShareSessionEpochException``)."""

    errno = 123
    retriable = True
    description = "The share session epoch is invalid."


class FencedStateEpochError(BrokerResponseError):
    """124 ``FENCED_STATE_EPOCH`` (Java ``FencedStateEpochException``)."""

    errno = 124
    retriable = False
    description = (
        "The share coordinator rejected the request because the share-group state epoch did not "
        "match."
    )


class InvalidVoterKeyError(BrokerResponseError):
    """125 ``INVALID_VOTER_KEY`` (Java ``InvalidVoterKeyException``)."""

    errno = 125
    retriable = False
    description = "The voter key doesn't match the receiving replica's key."


class DuplicateVoterError(BrokerResponseError):
    """126 ``DUPLICATE_VOTER`` (Java ``DuplicateVoterException``)."""

    errno = 126
    retriable = False
    description = "The voter is already part of the set of voters."


class VoterNotFoundError(BrokerResponseError):
    """127 ``VOTER_NOT_FOUND`` (Java ``VoterNotFoundException``)."""

    errno = 127
    retriable = False
    description = "The voter is not part of the set of voters."


class InvalidRegularExpressionError(BrokerResponseError):
    """128 ``INVALID_REGULAR_EXPRESSION`` (Java ``InvalidRegularExpression``)."""

    errno = 128
    retriable = False
    description = "The regular expression is not valid."


# ---------------------------------------------------------------------------------------------
# The codes by name.
# ---------------------------------------------------------------------------------------------


class Errors(enum.IntEnum):
    """Every error code by Kafka's enum name (``org.apache.kafka.common.protocol.Errors``).

    Code and name of each class in the table above, with ``NONE`` (0, no error) first; what the
    broker puts in a response's ``error_code`` and what code compares against, never a bare
    number (tests/test_house_rules.py checks).  ``for_code(Errors.X)`` is the class to raise.
    """

    NONE = 0
    UNKNOWN_SERVER_ERROR = -1
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128


# ---------------------------------------------------------------------------------------------
# Looking classes up by code.
# ---------------------------------------------------------------------------------------------


def _collect() -> dict[int, type[BrokerResponseError]]:
    table: dict[int, type[BrokerResponseError]] = {}
    for obj in list(globals().values()):
        if isinstance(obj, type) and issubclass(obj, BrokerResponseError) and "errno" in vars(obj):
            if obj is BrokerResponseError:
                continue
            if obj.errno in table:  # pragma: no cover - a defect in the table above
                raise AssertionError(f"error code {obj.errno} defined twice")
            table[obj.errno] = obj
    return table


#: Every known error code -> its class.  Code 0 (``NONE``) is not an error and is absent.
ERRORS_BY_CODE: dict[int, type[BrokerResponseError]] = _collect()


def _set_code_names() -> None:
    # Kafka's enum name, derived from the docstring's first word so the table states it once.
    for cls in ERRORS_BY_CODE.values():
        cls.code_name = cls.__doc__.split("``")[1]


_set_code_names()

# Classes for unknown codes, made once per code so that ``except for_code(n)`` keeps working.
_UNRECOGNIZED: dict[int, type[BrokerResponseError]] = {}


def for_code(code: int) -> type[BrokerResponseError]:
    """The exception class for a Kafka error code.

    Unknown codes get a subclass of ``UnrecognizedBrokerError`` that carries the number (the
    same class each time for the same code).  Code 0 means "no error" and raises ``ValueError``:
    check ``if code:`` before asking.
    """
    if isinstance(code, bool) or not isinstance(code, int):
        raise TypeError(f"error code must be an int, got {type(code).__name__}")
    if code == 0:
        raise ValueError("error code 0 (NONE) is not an error")
    cls = ERRORS_BY_CODE.get(code)
    if cls is not None:
        return cls
    cls = _UNRECOGNIZED.get(code)
    if cls is None:
        cls = type(
            f"UnrecognizedBrokerError_{code}".replace("-", "minus"),
            (UnrecognizedBrokerError,),
            {"errno": code, "code_name": f"UNKNOWN_CODE_{code}", "__module__": __name__},
        )
        cls = _UNRECOGNIZED.setdefault(code, cls)
    return cls
