"""The broker error table, its lookup, and the client-side classes."""

from __future__ import annotations

import pickle

import kafka.errors as kp_errors
import pytest

import kafkacore.errors as errors
from kafkacore.errors import (
    BrokerResponseError,
    ConfigError,
    CorruptRecordError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    UnrecognizedBrokerError,
    for_code,
)

# (code, Kafka enum name, retriable, invalid_metadata) as read in apache/kafka's Errors.java and the
# superclass of each Java exception (RetriableException / InvalidMetadataException).
JAVA_FACTS = [
    (-1, "UNKNOWN_SERVER_ERROR", False, False),
    (1, "OFFSET_OUT_OF_RANGE", False, False),
    (2, "CORRUPT_MESSAGE", True, False),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True, True),
    (5, "LEADER_NOT_AVAILABLE", True, True),
    (6, "NOT_LEADER_OR_FOLLOWER", True, True),
    (7, "REQUEST_TIMED_OUT", True, False),
    (8, "BROKER_NOT_AVAILABLE", False, False),
    (10, "MESSAGE_TOO_LARGE", False, False),
    (13, "NETWORK_EXCEPTION", True, True),
    (17, "INVALID_TOPIC_EXCEPTION", False, False),
    (18, "RECORD_LIST_TOO_LARGE", False, False),
    (19, "NOT_ENOUGH_REPLICAS", True, False),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, False),
    (21, "INVALID_REQUIRED_ACKS", False, False),
    (29, "TOPIC_AUTHORIZATION_FAILED", False, False),
    (35, "UNSUPPORTED_VERSION", False, False),
    (41, "NOT_CONTROLLER", True, False),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, False),
    (46, "DUPLICATE_SEQUENCE_NUMBER", False, False),
    (47, "INVALID_PRODUCER_EPOCH", False, False),
    (51, "CONCURRENT_TRANSACTIONS", True, False),
    (56, "KAFKA_STORAGE_ERROR", True, True),
    (59, "UNKNOWN_PRODUCER_ID", False, False),
    (74, "FENCED_LEADER_EPOCH", True, True),
    (75, "UNKNOWN_LEADER_EPOCH", True, False),
    (87, "INVALID_RECORD", False, False),
    (89, "THROTTLING_QUOTA_EXCEEDED", True, False),
    (90, "PRODUCER_FENCED", False, False),
    (128, "INVALID_REGULAR_EXPRESSION", False, False),
]


@pytest.mark.parametrize(("code", "name", "retriable", "invalid_metadata"), JAVA_FACTS)
def test_well_known_codes_match_java(code, name, retriable, invalid_metadata):
    cls = for_code(code)
    assert cls.errno == code
    assert cls.code_name == name
    assert cls.retriable is retriable
    assert cls.invalid_metadata is invalid_metadata
    assert issubclass(cls, BrokerResponseError)


def test_table_covers_every_code_from_minus_one_to_128():
    assert sorted(errors.ERRORS_BY_CODE) == [-1, *range(1, 129)]
    names = [cls.__name__ for cls in errors.ERRORS_BY_CODE.values()]
    assert len(set(names)) == len(names)
    code_names = [cls.code_name for cls in errors.ERRORS_BY_CODE.values()]
    assert len(set(code_names)) == len(code_names)
    for code, cls in errors.ERRORS_BY_CODE.items():
        assert getattr(errors, cls.__name__) is cls
        assert cls.__name__.endswith("Error")
        assert cls.description and cls.description.strip() == cls.description
        assert "errno" in vars(cls) and "retriable" in vars(cls), cls
        assert cls.errno == code


def test_errors_names_each_code_as_the_table_does():
    # Errors states each code a second time, by name: the two must agree, both ways.
    assert errors.Errors.NONE == 0
    assert {e.value: e.name for e in errors.Errors if e != errors.Errors.NONE} == {
        code: cls.code_name for code, cls in errors.ERRORS_BY_CODE.items()}
    assert errors.for_code(errors.Errors.NOT_LEADER_OR_FOLLOWER) is errors.NotLeaderOrFollowerError


def test_python_names_the_producer_uses():
    expected = {
        "NotLeaderOrFollowerError": 6,
        "UnknownTopicOrPartitionError": 3,
        "MessageTooLargeError": 10,
        "InvalidTopicError": 17,
        "RecordListTooLargeError": 18,
        "NotEnoughReplicasError": 19,
        "NotEnoughReplicasAfterAppendError": 20,
        "DuplicateSequenceNumberError": 46,
        "OutOfOrderSequenceNumberError": 45,
        "InvalidProducerEpochError": 47,
        "UnknownProducerIdError": 59,
        "TopicAuthorizationFailedError": 29,
        "UnsupportedVersionError": 35,
        "CorruptMessageError": 2,
        "RequestTimedOutError": 7,
        "LeaderNotAvailableError": 5,
        "UnknownServerError": -1,
        "NetworkError": 13,
    }
    for name, code in expected.items():
        assert getattr(errors, name).errno == code


def test_agrees_with_kafka_python_table():
    # kafka-python's table was written independently.  It agrees with ours on every code it
    # knows except where kafka-python departs from Java, listed here with Java's side:
    #   2  CORRUPT_MESSAGE: Java's CorruptRecordException is a RetriableException.
    #   75 UNKNOWN_LEADER_EPOCH: Java's exception extends RetriableException directly, not
    #      InvalidMetadataException.
    known_departures = {2, 75}
    theirs = {}
    for obj in vars(kp_errors).values():
        if (
            isinstance(obj, type)
            and issubclass(obj, kp_errors.BrokerResponseError)
            and obj.errno not in (None, 0)
        ):
            theirs[obj.errno] = obj
    assert len(theirs) > 100
    for code, their_cls in theirs.items():
        ours = for_code(code)
        if code in known_departures:
            continue
        assert ours.retriable == bool(their_cls.retriable), code
        assert ours.invalid_metadata == bool(getattr(their_cls, "invalid_metadata", False)), code


def test_java_hierarchy_mirrored():
    assert issubclass(errors.UnknownProducerIdError, errors.OutOfOrderSequenceNumberError)
    assert issubclass(errors.TopicAuthorizationFailedError, errors.AuthorizationError)
    assert issubclass(errors.SaslAuthenticationFailedError, errors.AuthenticationError)
    assert issubclass(errors.NotLeaderOrFollowerError, errors.InvalidMetadataError)
    # Java maps MESSAGE_TOO_LARGE to the same RecordTooLargeException the client raises itself.
    assert issubclass(errors.MessageTooLargeError, RecordTooLargeError)
    assert issubclass(errors.CorruptMessageError, CorruptRecordError)
    assert issubclass(errors.RequestTimedOutError, KafkaTimeoutError)
    assert not issubclass(RecordTooLargeError, BrokerResponseError)


def test_for_code_unknown_codes_carry_the_number():
    cls = for_code(4242)
    assert issubclass(cls, UnrecognizedBrokerError)
    assert cls.errno == 4242
    assert cls.retriable is False
    assert for_code(4242) is cls
    assert for_code(4243) is not cls
    err = cls("something new")
    assert "4242" in str(err) and "something new" in str(err)
    assert for_code(-5).errno == -5


def test_for_code_rejects_none_and_non_ints():
    with pytest.raises(ValueError, match="NONE"):
        for_code(0)
    for bad in ("6", 6.0, None, True):
        with pytest.raises(TypeError):
            for_code(bad)


def test_message_and_str():
    err = errors.NotLeaderOrFollowerError()
    assert err.error_message is None
    assert str(err).startswith("[Error 6] NOT_LEADER_OR_FOLLOWER: For requests intended only")
    err = errors.NotLeaderOrFollowerError("partition moved to broker 2")
    assert str(err) == "[Error 6] NOT_LEADER_OR_FOLLOWER: partition moved to broker 2"
    assert err.args == ("partition moved to broker 2",)
    with pytest.raises(errors.InvalidMetadataError):
        raise err


@pytest.mark.parametrize("code", [6, 10, 59, 31337])
def test_pickle_round_trip(code):
    err = for_code(code)("msg")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert back.errno == code and back.error_message == "msg"
    assert str(back) == str(err)
    bare = pickle.loads(pickle.dumps(for_code(code)()))
    assert type(bare) is for_code(code) and bare.error_message is None


class _SubclassElsewhere(errors.NetworkError):
    """Like the network layer's DisconnectError: a subclass that must keep its own type."""


def test_pickle_keeps_subclasses():
    err = _SubclassElsewhere("connection reset")
    err.node_id = 3
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is _SubclassElsewhere
    assert back.errno == 13 and back.error_message == "connection reset" and back.node_id == 3


def test_client_side_classes_kept():
    assert issubclass(errors.BufferExhaustedError, KafkaTimeoutError)
    assert issubclass(KafkaTimeoutError, TimeoutError)
    assert issubclass(ConfigError, ValueError)
    assert issubclass(errors.IllegalStateError, RuntimeError)
    assert issubclass(errors.SerializationError, TypeError)
    for cls in (ConfigError, RecordTooLargeError, CorruptRecordError, errors.SerializationError):
        assert issubclass(cls, KafkaError)
        assert cls.retriable is False
    assert KafkaTimeoutError.retriable is True
