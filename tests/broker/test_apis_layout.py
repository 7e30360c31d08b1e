"""Where KafkaApis' handlers live (docs/broker/apis.rst, "Where each handler lives"): one module
per API family, whose docstring names the requests it answers; KafkaApis is handed its
collaborators, never the Broker; a handler checks its request's body without ``assert``."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

from kafkacore import errors
from kafkacore.broker import Broker
from kafkacore.broker.network.request import Request
from kafkacore.broker.server.apis.base import body_of
from kafkacore.broker.server.kafka_apis import KafkaApis
from kafkacore.protocol.api_keys import ApiKey

SERVER = Path(__file__).resolve().parents[2] / "kafkacore" / "broker" / "server"
#: Modules outside the apis package that answer requests for the controller too.
SHARED = {"kafkacore.broker.network.api_request_handler",
          "kafkacore.broker.security.authorizer.acl_apis"}


def _kafka_name(key: int) -> str:
    """``ApiKey.ADD_PARTITIONS_TO_TXN`` -> ``AddPartitionsToTxn`` (Kafka's request name)."""
    return "".join(word.capitalize() for word in ApiKey(key).name.split("_"))


def test_each_handler_lives_in_a_module_whose_docstring_names_its_request(tmp_path):
    broker = Broker({"log.dirs": str(tmp_path)}).start()
    try:
        handlers = dict(broker.apis.handlers)
    finally:
        broker.stop()
    assert len(handlers) > 40
    for key, handler in handlers.items():
        module = handler.__func__.__module__
        assert module.startswith("kafkacore.broker.server.apis.") or module in SHARED, \
            (ApiKey(key).name, module)
        assert _kafka_name(key) in (sys.modules[module].__doc__ or ""), (ApiKey(key).name, module)


def test_kafka_apis_is_handed_its_collaborators_not_the_broker():
    parameters = inspect.signature(KafkaApis).parameters
    assert "broker" not in parameters
    assert {"replica_manager", "group_coordinator", "transaction_coordinator",
            "metadata_cache", "authorizer", "quotas", "fetch_manager",
            "forwarding_manager"} <= set(parameters)
    for path in [SERVER / "kafka_apis.py", *sorted((SERVER / "apis").glob("*.py"))]:
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "kafkacore.broker.server.broker_server" not in imported, path.name
        # The handlers' run-time checks are real ones (python -O removes an assert).
        assert not any(isinstance(node, ast.Assert) for node in ast.walk(tree)), path.name
        assert len(path.read_text().splitlines()) <= 1500, path.name


def test_a_handler_reached_without_a_parsed_body_raises_invalid_request():
    # KafkaApis.handle answers such a request with UNSUPPORTED_VERSION before any handler runs;
    # a handler called otherwise raises Kafka's error, which the handler thread answers.
    header = {"request_api_key": ApiKey.METADATA, "request_api_version": 12,
              "correlation_id": 1, "client_id": "layout"}
    with pytest.raises(errors.InvalidRequestError):
        body_of(Request(0, "c", header, None, ("127.0.0.1", 1), 0))
    body = {"topics": None}
    assert body_of(Request(0, "c", header, body, ("127.0.0.1", 1), 0)) is body
