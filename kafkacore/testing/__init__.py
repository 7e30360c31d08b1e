"""Support for testing code that uses kafkacore: a real broker on a loopback port.

``python -m kafkacore.testing`` starts one, prints its bootstrap address and stays up until
Ctrl-C (see :mod:`kafkacore.testing.__main__`).  :func:`fetch_record_batches` reads a
partition's record batches back as the broker stores them.

>>> from kafkacore.testing import LocalBroker
>>> with LocalBroker() as broker:            # doctest: +SKIP
...     print(broker.bootstrap)
127.0.0.1:40123
"""

from __future__ import annotations

from kafkacore.testing.fetch import fetch_record_batches
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
    "fetch_record_batches",
    "free_port",
    "given_or_local_broker",
    "resolve_broker_binary",
]
