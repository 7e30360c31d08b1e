"""A local stand-in for Confluent Schema Registry: the few REST endpoints confluent-kafka's
serializers and deserializers call, kept in memory.

Enough for confluent-kafka-python's serializer examples (register a schema, and its references,
under a subject; look it up; fetch it by id or by version), and honest about the rest: what it
does not know is a 404 with Schema Registry's error JSON, not an invented answer.  No
compatibility checks, no deletes, no contexts, no modes.

    with SchemaRegistry() as registry:
        ...  # registry.url, e.g. http://127.0.0.1:51234
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Schema Registry's error codes (its REST API reference, "Errors").
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
NOT_FOUND = 404
INVALID_SCHEMA = 42201

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class _NotFound(Exception):
    def __init__(self, code: int, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class SchemaRegistry:
    """The registry's state, and its HTTP server on 127.0.0.1 (a free port) in a thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # id -> {"schema", "schemaType", "references"}; one id per distinct schema, as the
        # real registry gives the same schema the same id under every subject.
        self.schemas: dict[int, dict[str, Any]] = {}
        self.subjects: dict[str, list[int]] = {}  # subject -> schema id of each version
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the test output quiet
                pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def do_PUT(self) -> None:
                self._answer("PUT")

            def do_DELETE(self) -> None:
                self._answer("DELETE")

            def _answer(self, method: str) -> None:
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                try:
                    status, answer = 200, registry.route(method, url.path, body)
                except _NotFound as e:
                    status, answer = e.status, {"error_code": e.code, "message": e.message}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="schema-registry", daemon=True)

    def __enter__(self) -> SchemaRegistry:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # -- the REST API -------------------------------------------------------------------------

    def route(self, method: str, path: str, body: Any) -> Any:
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        with self._lock:
            if method == "GET" and parts == ["config"]:
                return {"compatibilityLevel": "BACKWARD"}
            if method == "GET" and parts == ["subjects"]:
                return sorted(self.subjects)
            if method == "GET" and len(parts) == 3 and parts[:2] == ["schemas", "ids"]:
                return self._schema(self._id(parts[2]))
            if len(parts) >= 2 and parts[0] == "subjects":
                subject = parts[1]
                if method == "POST" and len(parts) == 2:
                    return self._lookup(subject, body)
                if method == "POST" and parts[2:] == ["versions"]:
                    return {"id": self._register(subject, body)}
                if method == "GET" and parts[2:] == ["versions"]:
                    return list(range(1, len(self._versions(subject)) + 1))
                if method == "GET" and len(parts) == 4 and parts[2] == "versions":
                    return self._version(subject, parts[3])
        raise _NotFound(NOT_FOUND, f"HTTP 404 Not Found: {method} {path}")

    @staticmethod
    def _key(body: Any) -> tuple[str, str, str]:
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise _NotFound(INVALID_SCHEMA, "Invalid schema: no 'schema' string", 422)
        references = json.dumps(body.get("references") or [], sort_keys=True)
        return body["schema"], body.get("schemaType") or "AVRO", references

    def _id(self, text: str) -> int:
        if not re.fullmatch(r"\d+", text) or int(text) not in self.schemas:
            raise _NotFound(SCHEMA_NOT_FOUND, f"Schema {text} not found")
        return int(text)

    def _schema(self, schema_id: int) -> dict[str, Any]:
        return dict(self.schemas[schema_id])

    def _versions(self, subject: str) -> list[int]:
        if subject not in self.subjects:
            raise _NotFound(SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
        return self.subjects[subject]

    def _register(self, subject: str, body: Any) -> int:
        schema, schema_type, references = self._key(body)
        schema_id = next((i for i, s in self.schemas.items()
                          if (s["schema"], s["schemaType"],
                              json.dumps(s["references"], sort_keys=True))
                          == (schema, schema_type, references)), None)
        if schema_id is None:
            schema_id = len(self.schemas) + 1
            self.schemas[schema_id] = {"schema": schema, "schemaType": schema_type,
                                       "references": json.loads(references)}
        versions = self.subjects.setdefault(subject, [])
        if schema_id not in versions:
            versions.append(schema_id)
        return schema_id

    def _registered(self, subject: str, version: int) -> dict[str, Any]:
        schema_id = self.subjects[subject][version - 1]
        return {"subject": subject, "version": version, "id": schema_id,
                **self._schema(schema_id)}

    def _lookup(self, subject: str, body: Any) -> dict[str, Any]:
        versions = self._versions(subject)
        schema, schema_type, references = self._key(body)
        for version, schema_id in enumerate(versions, 1):
            s = self.schemas[schema_id]
            if (s["schema"], s["schemaType"], json.dumps(s["references"], sort_keys=True)) == (
                    schema, schema_type, references):
                return self._registered(subject, version)
        raise _NotFound(SCHEMA_NOT_FOUND, "Schema not found")

    def _version(self, subject: str, text: str) -> dict[str, Any]:
        versions = self._versions(subject)
        if text == "latest":
            return self._registered(subject, len(versions))
        if not re.fullmatch(r"\d+", text) or not 1 <= int(text) <= len(versions):
            raise _NotFound(VERSION_NOT_FOUND, f"Version {text} not found.")
        return self._registered(subject, int(text))
