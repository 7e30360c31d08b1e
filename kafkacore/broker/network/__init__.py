"""The request reactor (Kafka's ``kafka.network``): bytes in, requests to the handlers, answers out.

``socket_server`` (``SocketServer``, ``Acceptor``, ``Processor``) and the compiled
``processor_core`` read requests off the sockets through ``selector`` (epoll), frame them into
``request`` objects (``request_parser`` reads the header and the Produce body) from the
``memory_pool``, and queue them on the ``request_channel`` (``request_queue``); answers come back
through ``response_encoder``.  The I/O threads (``kafka_request_handler``) take them off the
channel to a process's handlers, whose shared part is ``api_request_handler``
(``ApiRequestHandler``: ApiVersions, version checks, error answers; the broker's ``KafkaApis``
and the controller's ``ControllerApis`` both build on it).  ``faults`` is what a test injects
into a process's requests and connections, and its control socket.  See docs/broker/reactor.rst
and docs/broker/faults.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.log`` (the file regions a
Fetch answer sends), ``kafkacore.broker.config`` (the listeners), ``kafkacore.broker.security`` (a
connection's authentication and the authorizer's vocabulary), the protocol and the errors.  Nothing here
knows an API's meaning.
"""
