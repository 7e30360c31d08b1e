"""The request reactor (Kafka's ``kafka.network``): bytes in, requests to the handlers, answers out.

``socket_server`` (``SocketServer``, ``Acceptor``, ``Processor``) and the compiled
``processor_core`` read requests off the sockets through ``selector`` (epoll), frame them into
``request`` objects (``request_parser`` reads the header and the Produce body) from the
``memory_pool``, and queue them on the ``request_channel`` (``request_queue``); answers come back
through ``response_encoder``.  See docs/broker/reactor.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.security`` (a connection's
authentication), the protocol and the errors.  Nothing here knows an API's meaning.
"""
