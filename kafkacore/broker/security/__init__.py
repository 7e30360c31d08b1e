"""Who a client is and what it may do: TLS, SASL and the authorizer.

``authentication`` (Kafka's ``SslFactory``, ``CredentialCache``, ``SaslServerAuthenticator``),
``scram_sasl_server``, ``authentication_executor`` (SASL off the network threads) and
``authorizer`` (``StandardAuthorizer``, ACLs and their APIs).  See docs/broker/security.rst.

May import: ``kafkacore.broker.server_common``, ``kafkacore.broker.config`` (listener settings),
the protocol and the errors.
"""
