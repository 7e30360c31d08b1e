# cython: language_level=3
"""Request: one decoded request, as a handler sees it (Kafka's ``RequestChannel.Request``).

Compiled: a network thread makes one for every request, and the handlers read its API key,
version and correlation id again and again; they are taken from the header once, here, as C
integers.  See ``docs/broker/reactor.rst``.
"""


cdef class Request:
    """``body`` is None when the processor could not decode the body at the version asked (an
    unsupported version): :class:`~kafkacore.broker.server.kafka_apis.KafkaApis` answers that with
    UNSUPPORTED_VERSION."""

    #: The processor (network thread) whose connection it came on, and that connection.
    cdef readonly int processor
    cdef readonly str connection_id
    cdef readonly dict header
    cdef readonly object body
    cdef readonly tuple client_address
    #: Bytes of the request (its frame, without the size).
    cdef readonly Py_ssize_t size
    #: The listener the request came in on (Metadata answers with that listener's address).
    cdef readonly str listener_name
    #: Who sent it (Kafka's ``KafkaPrincipal``): ``User:<SASL user>``, or ``User:ANONYMOUS`` on a
    #: connection that did not authenticate.
    cdef public str principal
    #: An error code a test injected (kafkacore.broker.network.faults) for the handler's answer
    #: to carry.
    cdef public int injected_error
    #: Set by a handler whose client went over its quota: the processor reads nothing more from
    #: the connection for this long once the answer is written (KIP-219).
    cdef public long long throttle_time_ms
    cdef readonly int api_key
    #: The version the answer is written in: the request's, but v0 for an ApiVersions request
    #: of a version we do not know (KIP-511).
    cdef public int api_version
    cdef readonly int correlation_id

    def __init__(self, int processor, str connection_id, dict header, body,
                 tuple client_address, Py_ssize_t size, str listener_name="PLAINTEXT",
                 str principal="User:ANONYMOUS"):
        self.processor = processor
        self.connection_id = connection_id
        self.header = header
        self.body = body
        self.client_address = client_address
        self.size = size
        self.listener_name = listener_name
        self.principal = principal
        self.injected_error = 0
        self.throttle_time_ms = 0
        # (every header version has these three, and a header that did not decode is no Request)
        self.api_key = header["request_api_key"]
        self.api_version = header["request_api_version"]
        self.correlation_id = header["correlation_id"]

    def __repr__(self):
        return (
            f"Request(api_key={self.api_key}, v{self.api_version}, "
            f"correlation_id={self.correlation_id}, connection={self.connection_id})"
        )
