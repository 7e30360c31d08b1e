"""confluent-kafka's ``KafkaError`` and ``KafkaException``, on kafkacore's errors.

They stand apart from :mod:`kafkacore.compat.confluent` (which hands them on) so that
:mod:`kafkacore.compat.librdkafka` can give a ``KafkaError`` to a :class:`KafkaProducer`'s
``error_cb`` without importing the confluent producer, which imports the producer that imports
it back.
"""

from __future__ import annotations

import builtins

from kafkacore import errors


class KafkaError:
    """confluent-kafka's error object: ``code()``, ``name()``, ``str()``, ``retriable()``,
    ``fatal()``.  Broker errors keep Kafka's code; errors found by the client use librdkafka's
    negative local codes (``KafkaError._MSG_TIMED_OUT``, ...)."""

    _MSG_TIMED_OUT = -192
    _TIMED_OUT = -185
    _UNKNOWN_TOPIC = -188
    _UNKNOWN_PARTITION = -190
    _INVALID_ARG = -186
    _FAIL = -196
    _STATE = -172
    _QUEUE_FULL = -184
    _PARTITION_EOF = -191
    _TRANSPORT = -195
    _AUTHENTICATION = -169
    _SSL = -181
    _FATAL = -150
    _PURGE_QUEUE = -152
    _FENCED = -144
    MSG_SIZE_TOO_LARGE = 10  # Kafka's MESSAGE_TOO_LARGE, the code librdkafka reports

    def __init__(self, error: int | BaseException, reason: str | None = None,
                 fatal: bool = False, retriable: bool | None = None,
                 txn_requires_abort: bool = False) -> None:
        self.exception = error if isinstance(error, BaseException) else None
        if isinstance(error, BaseException):
            code, name = _code_and_name(error)
            reason = reason or str(error) or type(error).__name__
            retriable = bool(getattr(error, "retriable", False)) if retriable is None else retriable
        else:
            code, name = int(error), _LOCAL_NAMES.get(int(error), str(error))
        self._code, self._name = code, name
        self._reason = reason or name
        self._fatal = fatal
        self._retriable = bool(retriable)
        self._txn_requires_abort = txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._reason

    def fatal(self) -> bool:
        return self._fatal

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        """True when the transaction failed and :meth:`Producer.abort_transaction` is the way
        on (confluent's ``txn_requires_abort()``)."""
        return self._txn_requires_abort

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)

    def __str__(self) -> builtins.str:
        return self._reason

    def __repr__(self) -> builtins.str:
        return f"KafkaError{{code={self._name},val={self._code},str=\"{self._reason}\"}}"


_LOCAL_NAMES = {
    KafkaError._MSG_TIMED_OUT: "_MSG_TIMED_OUT",
    KafkaError._TIMED_OUT: "_TIMED_OUT",
    KafkaError._UNKNOWN_TOPIC: "_UNKNOWN_TOPIC",
    KafkaError._UNKNOWN_PARTITION: "_UNKNOWN_PARTITION",
    KafkaError._INVALID_ARG: "_INVALID_ARG",
    KafkaError._FAIL: "_FAIL",
    KafkaError._STATE: "_STATE",
    KafkaError._QUEUE_FULL: "_QUEUE_FULL",
    KafkaError._PARTITION_EOF: "_PARTITION_EOF",
    KafkaError._TRANSPORT: "_TRANSPORT",
    KafkaError._AUTHENTICATION: "_AUTHENTICATION",
    KafkaError._SSL: "_SSL",
    KafkaError._FATAL: "_FATAL",
    KafkaError._PURGE_QUEUE: "_PURGE_QUEUE",
    KafkaError._FENCED: "_FENCED",
}


def _code_and_name(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, errors.AuthenticationError) and exc.errno < 0:
        return KafkaError._AUTHENTICATION, "_AUTHENTICATION"  # TLS, wrong security.protocol
    if isinstance(exc, errors.BrokerResponseError):
        return exc.errno, exc.code_name
    if isinstance(exc, errors.RecordTooLargeError):
        return KafkaError.MSG_SIZE_TOO_LARGE, "MSG_SIZE_TOO_LARGE"
    if isinstance(exc, errors.KafkaTimeoutError):
        return KafkaError._MSG_TIMED_OUT, "_MSG_TIMED_OUT"
    if isinstance(exc, (TypeError, ValueError)):
        return KafkaError._INVALID_ARG, "_INVALID_ARG"
    if isinstance(exc, errors.IllegalStateError):
        return KafkaError._STATE, "_STATE"
    if isinstance(exc, errors.TransactionAbortedError):
        return KafkaError._PURGE_QUEUE, "_PURGE_QUEUE"  # what librdkafka reports after an abort
    return KafkaError._FAIL, "_FAIL"


class KafkaException(Exception):
    """confluent-kafka's exception: ``args[0]`` is the :class:`KafkaError`."""

    def __init__(self, error: KafkaError | BaseException | int, *args: object) -> None:
        if not isinstance(error, KafkaError):
            error = KafkaError(error)
        super().__init__(error, *args)

    def __str__(self) -> str:
        return str(self.args[0])


__all__ = ["KafkaError", "KafkaException"]
