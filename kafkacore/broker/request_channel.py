"""RequestChannel: the queues between the network threads and the handler threads.

One bounded request queue (``queued.max.requests``) is shared by every handler: any handler
takes any request.  Each :class:`~kafkacore.broker.network.Processor` has its own response
queue, and putting a response there also wakes that processor's selector, which may be asleep in
``select()`` waiting for its sockets (Kafka's ``RequestChannel`` and ``Processor.wakeup``).
"""

from __future__ import annotations

import enum
import logging
import queue
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkacore.protocol import codec

if TYPE_CHECKING:
    from kafkacore.broker.network import Processor

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Request:
    """One decoded request, as a handler sees it (Kafka's ``RequestChannel.Request``).

    ``body`` is None when the processor could not decode the body at the version asked (an
    unsupported version): :class:`~kafkacore.broker.apis.KafkaApis` answers that with
    UNSUPPORTED_VERSION.
    """

    processor: int
    connection_id: str
    header: dict[str, Any]
    body: dict[str, Any] | None
    client_address: tuple[str, int]
    size: int
    start_time_ns: int = field(default_factory=time.monotonic_ns)
    #: The listener the request came in on (Metadata answers with that listener's address).
    listener_name: str = "PLAINTEXT"
    #: Who sent it (Kafka's ``KafkaPrincipal``): ``User:<SASL user>``, or ``User:ANONYMOUS``
    #: on a connection that did not authenticate.
    principal: str = "User:ANONYMOUS"
    #: An error code a test injected (kafkacore.broker.faults) for the handler's answer to carry.
    injected_error: int = 0

    @property
    def api_key(self) -> int:
        return int(self.header["request_api_key"])

    @property
    def api_version(self) -> int:
        return int(self.header["request_api_version"])

    @property
    def correlation_id(self) -> int:
        return int(self.header["correlation_id"])

    def __repr__(self) -> str:
        return (
            f"Request(api_key={self.api_key}, v{self.api_version}, "
            f"correlation_id={self.correlation_id}, connection={self.connection_id})"
        )


class ResponseAction(enum.Enum):
    SEND = "send"  #: write the payload, then unmute the connection
    NO_OP = "no-op"  #: nothing to write (acks=0): just unmute
    CLOSE = "close"  #: close the connection (with a reason in the log)


@dataclass(eq=False)
class Response:
    request: Request
    action: ResponseAction
    #: size prefix + header + body, for SEND: buffers, and the fetched records as file regions
    #: (:class:`~kafkacore.broker.log.file_records.FileRecords`) that the processor sends from
    #: their segment files.
    payload: list[Any] | None = None
    reason: str = ""  #: why, for CLOSE

    def release(self) -> None:
        """Give back the file regions of a response that will never be written."""
        for chunk in self.payload or ():
            if hasattr(chunk, "write_to"):
                chunk.close()


def payload_size(payload: list[Any]) -> int:
    """The bytes ``payload`` puts on the wire (a file region counts its length)."""
    return sum(len(chunk) if hasattr(chunk, "write_to") else memoryview(chunk).nbytes
               for chunk in payload)


class RequestChannel:
    """The request queue, and a way to each processor's response queue."""

    def __init__(self, queue_size: int = 500) -> None:
        #: Bounded: when handlers fall behind, processors block on put() and stop reading.
        self.request_queue: queue.Queue[Request | None] = queue.Queue(maxsize=queue_size)
        self._processors: dict[int, Processor] = {}

    def add_processor(self, processor: Processor) -> None:
        self._processors[processor.id] = processor

    def remove_processor(self, processor_id: int) -> None:
        self._processors.pop(processor_id, None)

    # -- the processors' side -------------------------------------------------------------------

    def send_request(self, request: Request, timeout_s: float | None = None) -> None:
        """Put a request on the shared queue; blocks while the queue is full."""
        self.request_queue.put(request, timeout=timeout_s)

    # -- the handlers' side ---------------------------------------------------------------------

    def receive_request(self, timeout_s: float) -> Request | None:
        """The next request, or None after ``timeout_s`` (or a shutdown marker)."""
        try:
            return self.request_queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def send_response(self, request: Request, body: Mapping[str, Any]) -> None:
        """Encode ``body`` as the response to ``request`` and queue it on its processor."""
        payload = codec.encode_response(
            request.api_key, request.api_version, request.correlation_id, body
        )
        size = payload_size(payload)
        self._enqueue(
            Response(request, ResponseAction.SEND, [size.to_bytes(4, "big"), *payload])
        )

    def send_no_response(self, request: Request) -> None:
        """No answer (Produce with acks=0): the processor only unmutes the connection."""
        self._enqueue(Response(request, ResponseAction.NO_OP))

    def close_connection(self, request: Request, reason: str) -> None:
        """Close the request's connection; ``reason`` goes to the broker's log."""
        self._enqueue(Response(request, ResponseAction.CLOSE, reason=reason))

    def _enqueue(self, response: Response) -> None:
        processor = self._processors.get(response.request.processor)
        if processor is None:  # the broker is shutting down
            log.debug("dropping the response to %r: processor gone", response.request)
            response.release()
            return
        processor.enqueue_response(response)

    def statistics(self) -> dict[str, int]:
        return {"queued_requests": self.request_queue.qsize()}
