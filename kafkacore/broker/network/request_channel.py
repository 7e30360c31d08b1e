"""RequestChannel: the queues between the network threads and the handler threads.

One bounded request queue (``queued.max.requests``) is shared by every handler: any handler
takes any request.  Each :class:`~kafkacore.broker.network.socket_server.Processor` has its own response
queue, and putting a response there wakes that processor's selector if it is asleep in
``select()`` waiting for its sockets (Kafka's ``RequestChannel`` and ``Processor.wakeup``).

The hand-offs are the broker's hottest path for small requests, so neither queue takes a
``threading.Condition`` per item: the request queue
(:class:`~kafkacore.broker.network.request_queue.RequestQueue`, compiled) wakes one sleeping handler,
and only when one sleeps; a processor is woken only when it sleeps too (see
``Processor.enqueue_response``).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafkacore.broker.network.request import Request
from kafkacore.broker.network.request_queue import RequestQueue
from kafkacore.broker.network.response_encoder import encode_fetch_response, encode_produce_response
from kafkacore.broker.network.selector import Wakeup
from kafkacore.protocol import codec

log = logging.getLogger(__name__)


class ResponseAction(enum.Enum):
    SEND = "send"  #: write the payload, then unmute the connection
    NO_OP = "no-op"  #: nothing to write (acks=0): just unmute
    CLOSE = "close"  #: close the connection (with a reason in the log)
    #: already written by the thread that answered (``Processor.enqueue_response``): the
    #: processor only does the bookkeeping of a sent response and unmutes
    WRITTEN = "written"


@dataclass(eq=False, slots=True)
class Response:
    request: Request
    action: ResponseAction
    #: size prefix + header + body, for SEND: buffers, and the fetched records as file regions
    #: (:class:`~kafkacore.broker.log.file_records.FileRecords`) that the processor sends from
    #: their segment files.
    payload: list[Any] | None = None
    reason: str = ""  #: why, for CLOSE
    written: int = 0  #: bytes the answering thread wrote itself (WRITTEN, or part of a SEND)

    def release(self) -> None:
        """Give back the file regions of a response that will never be written."""
        for chunk in self.payload or ():
            if hasattr(chunk, "write_to"):
                chunk.close()


def payload_size(payload: list[Any]) -> int:
    """The bytes ``payload`` puts on the wire (a file region counts its length)."""
    return sum(len(chunk) if hasattr(chunk, "write_to") else memoryview(chunk).nbytes
               for chunk in payload)


class HandlerTurn(threading.local):
    """Per thread: the wake-ups a handler thread owes the processors its answers went to, paid
    when its turn ends, on its way to the next request or to sleep
    (:meth:`~kafkacore.broker.network.kafka_request_handler.KafkaRequestHandler.do_work`).  ``None`` on every other
    thread (timers, purgatory reapers, coordinators): those wake a processor at once."""

    owed: list[Wakeup] | None = None


#: The wake-ups of the handler thread running now (see HandlerTurn).
HANDLER_TURN = HandlerTurn()


class ResponseQueue(Protocol):
    """What the channel needs of a processor
    (:class:`~kafkacore.broker.network.socket_server.Processor`): its id, which a request
    carries, and its response queue.  The channel is the floor under the socket server: it
    names no class of it."""

    id: int

    def enqueue_response(self, response: Response) -> None: ...


class RequestChannel:
    """The request queue, and a way to each processor's response queue."""

    def __init__(self, queue_size: int = 500) -> None:
        #: Bounded: when handlers fall behind, processors block on put() and stop reading.
        self.request_queue = RequestQueue(queue_size)
        self._processors: dict[int, ResponseQueue] = {}

    def add_processor(self, processor: ResponseQueue) -> None:
        self._processors[processor.id] = processor

    def remove_processor(self, processor_id: int) -> None:
        self._processors.pop(processor_id, None)

    def sharing_processors(self, queue_size: int) -> RequestChannel:
        """Another channel, with a request queue of its own, whose responses go to this one's
        processors: for requests that must not wait behind the others (a quorum controller's
        Raft messages, which its other requests wait on)."""
        other = RequestChannel(queue_size)
        other._processors = self._processors
        return other

    # -- the processors' side -------------------------------------------------------------------

    def send_request(self, request: Request,
                     timeout_s: float | None = None) -> Wakeup | None:
        """Put a request on the shared queue; blocks while the queue is full.  Returns the
        wake-up the caller owes a sleeping handler (:meth:`RequestQueue.put`)."""
        return self.request_queue.put(request, timeout_s)

    # -- the handlers' side ---------------------------------------------------------------------

    def receive_request(self, waker: Wakeup, timeout_s: float,
                        owed: list[Wakeup] | None = None) -> Request | None:
        """The next request, or None after ``timeout_s``; ``waker`` is the handler's own, and
        ``owed`` the wake-ups it pays on the way (see :class:`RequestQueue`)."""
        return self.request_queue.get(waker, timeout_s, owed)

    def send_response(self, request: Request, body: Mapping[str, Any]) -> None:
        """Encode ``body`` as the response to ``request`` and queue it on its processor."""
        payload = codec.encode_response(
            request.api_key, request.api_version, request.correlation_id, body
        )
        size = payload_size(payload)
        self._enqueue(
            Response(request, ResponseAction.SEND, [size.to_bytes(4, "big"), *payload])
        )

    def send_produce_response(self, request: Request, body: Mapping[str, Any]) -> bool:
        """Write a Produce response with compiled code (response_encoder.pyx), fitted to the
        request's version as it is written, and queue it; False (nothing queued) for a body
        that code leaves to the codec."""
        frame = encode_produce_response(request.api_version, request.correlation_id, body)
        if frame is None:
            return False
        self._enqueue(Response(request, ResponseAction.SEND, [frame]))
        return True

    def send_fetch_response(self, request: Request, body: Mapping[str, Any]) -> bool:
        """Write a Fetch response with compiled code (response_encoder.pyx), its records' file
        regions left in the parts uncopied, and queue it; False (nothing queued) for a body
        that code leaves to the codec."""
        frame = encode_fetch_response(request.api_version, request.correlation_id, body)
        if frame is None:
            return False
        self._enqueue(Response(request, ResponseAction.SEND, frame))
        return True

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
        return {"queued_requests": len(self.request_queue)}
