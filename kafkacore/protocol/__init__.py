"""Kafka's wire protocol: every message declared once, as data, and one codec for all of them.

``messages`` holds the declarations (the fields of each request and response, the versions that
have them, the flexible versions and the tagged fields), written the way Kafka's own JSON schemas
are, one module per API family.  ``codec`` holds the one encoder and the one decoder that read those declarations, for
requests and responses alike.
"""

from kafkacore.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey

__all__ = ["SUPPORTED_VERSIONS", "ApiKey"]
