"""KafkaRequestHandlerPool: the I/O threads that run the APIs (Kafka's ``KafkaRequestHandler``).

``num.io.threads`` handlers take requests from the shared queue of the
:class:`~kafkacore.broker.network.request_channel.RequestChannel` and call ``KafkaApis.handle``.  An
exception in a handler answers that one request with UNKNOWN_SERVER_ERROR (or closes its
connection when no error response can be built) and the thread goes on.
"""

from __future__ import annotations

import logging
from typing import Protocol

from kafkacore.broker.network.request_channel import (
    HANDLER_TURN,
    Request,
    RequestChannel,
)
from kafkacore.broker.network.selector import Wakeup
from kafkacore.broker.server_common.shutdownable_thread import ShutdownableThread

log = logging.getLogger(__name__)


class Apis(Protocol):
    def handle(self, request: Request) -> None: ...
    def handle_error(self, request: Request, exc: BaseException) -> None: ...


class KafkaRequestHandler(ShutdownableThread):
    def __init__(self, handler_id: int, channel: RequestChannel, apis: Apis) -> None:
        super().__init__(f"kafkacore-request-handler-{handler_id}")
        self.id = handler_id
        self.channel = channel
        self.apis = apis
        self.handled = 0
        #: Where this handler sleeps while there is no request (RequestQueue).
        self._waker = Wakeup()

    def do_work(self) -> None:
        owed = HANDLER_TURN.owed
        if owed is None:
            owed = HANDLER_TURN.owed = []
        # The processors our last answers went to are woken on the way to the next request,
        # and to sleep if there is none (RequestQueue.get).
        request = self.channel.receive_request(self._waker, 0.3, owed)
        if request is not None:
            self._handle_request(request)

    def on_shutdown(self) -> None:
        for wakeup in HANDLER_TURN.owed or ():
            wakeup.wake()
        self._waker.close()

    def _handle_request(self, request: Request) -> None:
        try:
            self.apis.handle(request)
        except Exception as exc:
            log.exception("error handling %r", request)
            try:
                self.apis.handle_error(request, exc)
            except Exception:
                log.exception("no error response for %r either; closing", request)
                self.channel.close_connection(request, f"handler failed: {exc!r}")
        self.handled += 1


class KafkaRequestHandlerPool:
    def __init__(self, channel: RequestChannel, apis: Apis, num_threads: int) -> None:
        self.handlers = [KafkaRequestHandler(i, channel, apis) for i in range(num_threads)]

    def start(self) -> None:
        for h in self.handlers:
            h.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        for h in self.handlers:
            h.initiate_shutdown()
        if self.handlers:
            self.handlers[0].channel.request_queue.wake_all()
        for h in self.handlers:
            if h.is_alive():
                h.join(timeout_s)
