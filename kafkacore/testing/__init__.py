"""Support for testing code that uses kafkacore: a real broker on a loopback port.

``python -m kafkacore.testing`` starts one, prints its bootstrap address and stays up until
Ctrl-C (see :mod:`kafkacore.testing.__main__`).

>>> from kafkacore.testing import LocalBroker
>>> with LocalBroker() as broker:            # doctest: +SKIP
...     print(broker.bootstrap)
127.0.0.1:40123
"""

from __future__ import annotations

from kafkacore.testing.localbroker import (
    BrokerUnavailableError,
    LocalBroker,
    free_port,
    given_or_local_broker,
    resolve_broker_binary,
)

__all__ = [
    "BrokerUnavailableError",
    "LocalBroker",
    "free_port",
    "given_or_local_broker",
    "resolve_broker_binary",
]
