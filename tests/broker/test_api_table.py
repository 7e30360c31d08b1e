"""The table of APIs in docs/broker/apis.rst says what a running broker advertises."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from test_admin_calls import _call

from kafkacore.broker import Broker
from kafkacore.protocol import codec
from kafkacore.protocol.api_keys import ApiKey

CHAPTER = Path(__file__).resolve().parents[2] / "docs" / "broker" / "apis.rst"
ROW = re.compile(r"^   \* - (\w+)\n     - (\d+)(?:-(\d+))?\n", re.MULTILINE)


def test_the_docs_table_is_what_apiversions_says(tmp_path):
    documented = {name: (int(low), int(high or low))
                  for name, low, high in ROW.findall(CHAPTER.read_text())}
    broker = Broker({"log.dirs": str(tmp_path)}).start()
    try:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        answer = _call(SimpleNamespace(host=host, port=int(port)), ApiKey.API_VERSIONS, 3,
                       {"client_software_name": "docs-table", "client_software_version": "1"})
    finally:
        broker.stop()
    advertised = {codec.REQUESTS[a["api_key"]].body.name.removesuffix("Request"):
                  (a["min_version"], a["max_version"]) for a in answer["api_keys"]}
    assert documented == advertised
