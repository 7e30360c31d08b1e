"""Faults a test injects into a running broker on purpose (see docs/broker/faults.rst).

librdkafka's mock cluster is the model: answer the next requests of an API with chosen errors,
slow a broker down, or cut it off from everyone without killing it.  The :class:`Broker` owns one
:class:`FaultInjector`; the reactor (:mod:`kafkacore.broker.network.socket_server`), the APIs
(:mod:`kafkacore.broker.server.kafka_apis`) and the inter-broker clients consult it.

A broker running as another process is switched through its control socket
(``kafkacore-broker --control-socket PATH``): :class:`ControlServer` serves one JSON object per
line on a Unix socket, :class:`BrokerControl` is the client a test holds.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from kafkacore import errors
from kafkacore.errors import Errors
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: How long :meth:`FaultInjector.isolate` waits for every network thread to have closed its
#: connections before it gives up waiting (the isolation itself stays on).
ISOLATE_WAIT_S = 5.0


class InjectedError(NamedTuple):
    """One queued answer: ``error_code`` (0: answer normally), and for Produce whether the
    batches are appended before the error is returned."""

    error_code: int
    after_append: bool


class FaultInjector:
    """The faults switched on in one broker; every method is thread-safe.

    Three kinds, each undone by a call of the same family:

    * :meth:`fail_next`: the next requests of one API are answered with given error codes, in
      turn (librdkafka's ``rd_kafka_mock_push_request_errors``); :meth:`clear` forgets them.
    * :meth:`set_latency`: every response is held this long by its network thread before it is
      written; ``set_latency(0)`` releases the held ones at once.
    * :meth:`isolate` / :meth:`heal`: every client connection is closed and new ones are closed
      as soon as accepted; nothing is answered until healed.
    """

    def __init__(self) -> None:
        # Lock order: leaf. Guards the injected faults; waiters wait on it.
        self._lock = threading.Condition(threading.Lock())
        #: True while the broker is cut from clients and peers (``isolate``/``heal``): it refuses
        #: and closes client connections, and its own connections to peers and the controller
        #: (replica fetchers, heartbeats) are closed and not re-opened until healed.
        self.isolated = False
        #: Extra delay, in milliseconds, before each response is sent.
        self.latency_ms = 0
        self._errors: dict[int, collections.deque[InjectedError]] = {}  # guarded by _lock
        #: Network threads attached (name -> wakeup), and the isolation generation each has
        #: enforced: isolate() returns once all have closed their connections.
        self._threads: dict[str, Callable[[], None]] = {}  # guarded by _lock
        self._enforced: dict[str, int] = {}  # guarded by _lock
        self._generation = 0  # guarded by _lock; +1 per isolate()
        #: How many responses carried an injected error, per API key (for tests and logs).
        self.injected: collections.Counter[int] = collections.Counter()  # written under _lock

    # -- the faults ----------------------------------------------------------------------------

    def fail_next(self, api: int | str, error_codes: Iterable[int | str],
                  after_append: bool = False) -> None:
        """Answer the next ``len(error_codes)`` requests of ``api`` with these codes, in turn.

        ``api`` is an :class:`~kafkacore.protocol.api_keys.ApiKey` or Kafka's name of the API
        (``"Produce"``, ``"InitProducerId"``); each error is a code or Kafka's name
        (``"NOT_LEADER_OR_FOLLOWER"``), 0 / ``"NONE"`` meaning "answer this one normally".
        With ``after_append=True`` (Produce only) the batches are appended first and the error
        is returned instead of their offsets: the client cannot know they were written (a
        REQUEST_TIMED_OUT after the append, or NOT_ENOUGH_REPLICAS_AFTER_APPEND).
        Calls add to what is already queued for that API.
        """
        api_key = resolve_api(api)
        if isinstance(error_codes, (str, bytes, int)):
            raise TypeError("error_codes must be a list of codes or names, "
                            f"got {type(error_codes).__name__}")
        codes = [resolve_error(e) for e in error_codes]
        if not isinstance(after_append, bool):
            raise TypeError(f"after_append must be a bool, got {type(after_append).__name__}")
        if after_append and api_key != ApiKey.PRODUCE:
            raise ValueError("after_append applies to Produce only")
        with self._lock:
            queued = self._errors.setdefault(api_key, collections.deque())
            queued.extend(InjectedError(c, after_append) for c in codes)
        log.info("fault: the next %d %s requests answered with %s%s", len(codes),
                 api_name(api_key), codes, " after the append" if after_append else "")

    def next_error(self, api_key: int) -> InjectedError | None:
        """The answer queued for this request of ``api_key`` (taken off the queue), or None.

        Called once per request by :meth:`KafkaApis.handle
        <kafkacore.broker.server.kafka_apis.KafkaApis.handle>`; an entry with code 0 is taken and answers
        normally.
        """
        if not self._errors:  # the common case, without the lock (a dict's truth is atomic)
            return None
        with self._lock:
            queued = self._errors.get(api_key)
            if not queued:
                return None
            injected = queued.popleft()
            if not queued:
                del self._errors[api_key]
            if injected.error_code == Errors.NONE:
                return None
            self.injected[api_key] += 1
        return injected

    def pending(self) -> dict[str, list[int]]:
        """The error codes still queued, by API name."""
        with self._lock:
            return {api_name(k): [e.error_code for e in q] for k, q in self._errors.items()}

    def clear(self) -> None:
        """Forget every queued error (latency and isolation are left as they are)."""
        with self._lock:
            self._errors.clear()

    def set_latency(self, ms: int) -> None:
        """Hold each response ``ms`` milliseconds before writing it (0: none, and release the
        held ones now).  A held response keeps its connection muted, as a slow broker would."""
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise TypeError(f"latency must be an int number of ms, got {type(ms).__name__}")
        if ms < 0:
            raise ValueError(f"latency must be >= 0 ms, got {ms}")
        with self._lock:
            self.latency_ms = ms
            wakeups = list(self._threads.values())
        log.info("fault: latency %d ms", ms)
        for wakeup in wakeups:
            wakeup()

    def isolate(self, wait_s: float = ISOLATE_WAIT_S) -> None:
        """Cut the broker off: close every client connection, refuse new ones.

        Returns once every network thread has closed its connections (bounded by ``wait_s``):
        from then on no request is read and no response written until :meth:`heal`.
        """
        with self._lock:
            self.isolated = True
            self._generation += 1
            generation = self._generation
            wakeups = list(self._threads.values())
        log.info("fault: isolated")
        for wakeup in wakeups:
            wakeup()
        deadline = time.monotonic() + wait_s
        with self._lock:
            while self.isolated and any(
                    self._enforced.get(name, 0) < generation for name in self._threads):
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("isolate: network threads did not confirm within %.1f s", wait_s)
                    return
                self._lock.wait(left)

    def heal(self) -> None:
        """End :meth:`isolate`: connections are accepted and served again."""
        with self._lock:
            self.isolated = False
            self._lock.notify_all()
        log.info("fault: healed")

    def reset(self) -> None:
        """Switch every fault off: no queued errors, no latency, not isolated."""
        self.clear()
        self.set_latency(0)
        self.heal()

    def status(self) -> dict[str, Any]:
        """What is switched on, as plain data (the control socket's ``status``)."""
        with self._lock:
            return {
                "isolated": self.isolated,
                "latency_ms": self.latency_ms,
                "pending": {api_name(k): [e.error_code for e in q]
                            for k, q in self._errors.items()},
                "injected": {api_name(k): n for k, n in self.injected.items()},
            }

    # -- the network threads' side --------------------------------------------------------------

    def attach(self, name: str, wakeup: Callable[[], None]) -> None:
        """A network thread registers; ``wakeup`` is called when a fault changes."""
        with self._lock:
            self._threads[name] = wakeup
            self._enforced[name] = self._generation

    def detach(self, name: str) -> None:
        with self._lock:
            self._threads.pop(name, None)
            self._enforced.pop(name, None)
            self._lock.notify_all()

    def isolation_enforced(self, name: str) -> None:
        """The network thread ``name`` has closed every connection it had while isolated."""
        with self._lock:
            if self._enforced.get(name, -1) < self._generation:
                self._enforced[name] = self._generation
                self._lock.notify_all()


# -- names ---------------------------------------------------------------------------------------

def resolve_api(api: int | str) -> int:
    """An API key from an int or Kafka's name (``"Produce"``, ``"INIT_PRODUCER_ID"``)."""
    if isinstance(api, bool):
        raise TypeError("api must be an ApiKey, an int or a name, got bool")
    if isinstance(api, int):
        if not 0 <= api < 2**15:
            raise ValueError(f"api key {api} is not within 0..32767")
        return int(api)
    if not isinstance(api, str):
        raise TypeError(f"api must be an ApiKey, an int or a name, got {type(api).__name__}")
    key = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api.strip()).upper()
    try:
        return int(ApiKey[key])
    except KeyError:
        raise ValueError(f"unknown API {api!r}; known: "
                         f"{', '.join(api_name(k) for k in ApiKey)}") from None


def api_name(api_key: int) -> str:
    """Kafka's name of an API key (``Produce``), or the number when we do not know it."""
    try:
        return "".join(part.capitalize() for part in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


_CODES_BY_NAME = {cls.code_name: code for code, cls in errors.ERRORS_BY_CODE.items()}
_CODES_BY_NAME["NONE"] = 0


def resolve_error(error: int | str) -> int:
    """An error code from an int or Kafka's name (``"NOT_LEADER_OR_FOLLOWER"``)."""
    if isinstance(error, bool):
        raise TypeError("an error must be a code or a name, got bool")
    if isinstance(error, int):
        if not -(2**15) <= error < 2**15:
            raise ValueError(f"error code {error} does not fit in an int16")
        return int(error)
    if not isinstance(error, str):
        raise TypeError(f"an error must be a code or a name, got {type(error).__name__}")
    code = _CODES_BY_NAME.get(error.strip().upper())
    if code is None:
        raise ValueError(f"unknown error name {error!r} (Kafka's names, e.g. "
                         "'NOT_LEADER_OR_FOLLOWER')")
    return code


# -- the error in a response ---------------------------------------------------------------------

def set_error_codes(body: dict[str, Any], error_code: int) -> dict[str, Any]:
    """``body`` with ``error_code`` in its per-partition (or per-topic, per-resource) fields.

    The error goes to the shallowest level *below* the top that has ``error_code`` fields (a
    Produce response's partitions, a Metadata response's topics, a Fetch response's partitions
    rather than its session-level code); only a response without such a level gets it at the
    top.  Where the error is set, what a successful answer would carry is taken back: records,
    base offsets.
    """
    level = [body]
    while level:
        below: list[dict[str, Any]] = []
        for item in level:
            for value in item.values():
                if isinstance(value, list):
                    below.extend(v for v in value if isinstance(v, dict))
                elif isinstance(value, dict):
                    below.append(value)
        if any("error_code" in d for d in below):
            for d in below:
                if "error_code" in d:
                    _fail_entry(d, error_code)
            return body
        level = below
    if "error_code" in body:
        _fail_entry(body, error_code)
    return body


def _fail_entry(d: dict[str, Any], error_code: int) -> None:
    d["error_code"] = error_code
    if "error_message" in d:
        d["error_message"] = "injected by the broker's FaultInjector"
    if "records" in d:
        d["records"] = b""
    for key in ("base_offset", "log_append_time_ms", "log_start_offset"):
        if key in d:
            d[key] = -1


def produce_error_body(request_body: Mapping[str, Any], error_code: int) -> dict[str, Any]:
    """A Produce response with ``error_code`` for every partition of the request, written to
    no log (the answer to a Produce that fails before its append)."""
    return {
        "responses": [
            {"name": t["name"], "partition_responses": [
                {"index": pd["index"], "error_code": error_code, "base_offset": -1,
                 "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
                 "error_message": "injected by the broker's FaultInjector"}
                for pd in t["partition_data"]]}
            for t in request_body["topic_data"]
        ],
        "throttle_time_ms": 0,
    }


# -- the control socket --------------------------------------------------------------------------

#: sun_path's size on Linux: a longer socket path cannot be bound.
_UNIX_PATH_MAX = 108

#: The longest line either side accepts (a fail_next of thousands of codes fits).
MAX_LINE = 1 << 20


class BrokerControlError(errors.KafkaError):
    """The broker's control socket could not be reached, or answered something unexpected."""


class BrokerControlTimeoutError(BrokerControlError, errors.KafkaTimeoutError):
    """The control socket did not answer within the bound."""


class InvalidFaultError(BrokerControlError, ValueError):
    """The broker refused the fault asked for (an unknown API or error name, a bad value)."""


class ControlSocketPathError(BrokerControlError, FileExistsError):
    """The control socket's path is taken: by a file that is not a socket, or by a live one."""


def _remove_stale_socket(path: str) -> None:
    """Remove what a killed broker left at ``path`` (a socket nobody listens on); refuse anything
    else: a regular file, a directory, a link, or a socket another process serves."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ControlSocketPathError(
            f"{path!r} exists and is not a socket: refusing to replace it with the control socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)  # nobody listens: the stale socket of a broker that was killed
        return
    except OSError as exc:
        raise ControlSocketPathError(f"{path!r} is a socket we cannot probe: {exc}") from exc
    finally:
        probe.close()
    raise ControlSocketPathError(f"{path!r} is served by another process (a running broker?)")


class ControlServer:
    """Serves a :class:`FaultInjector` on a Unix socket: one JSON object per line each way.

    Requests are ``{"op": "isolate"}``, ``{"op": "heal"}``, ``{"op": "set_latency", "ms": 500}``,
    ``{"op": "fail_next", "api": 0, "errors": [7, 7], "after_append": true}``,
    ``{"op": "clear"}``, ``{"op": "reset"}``, ``{"op": "status"}``, and
    ``{"op": "statistics"}`` (the broker's counters, if given); answers are
    ``{"ok": true, ...}`` or ``{"ok": false, "error": "ValueError", "message": "..."}``.  A connection may send several
    requests; each is answered before the next is read.
    """

    def __init__(self, faults: FaultInjector, path: str | os.PathLike[str],
                 statistics: Callable[[], dict[str, Any]] | None = None) -> None:
        self.faults = faults
        self.statistics = statistics
        self.path = os.fspath(path)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._running = False

    def start(self) -> ControlServer:
        if len(os.fsencode(self.path)) >= _UNIX_PATH_MAX:
            raise ValueError(f"a Unix socket path must be shorter than {_UNIX_PATH_MAX} bytes: "
                             f"{self.path!r}")
        _remove_stale_socket(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self.path)  # fails if anything appeared at the path meanwhile
            # Whoever can connect can isolate the broker: owner only, whatever the umask.  The
            # mode is set before listen(), and connecting to a socket that does not listen yet
            # is refused, so there is no moment when others could get in.
            os.chmod(self.path, 0o600)
            sock.listen(16)
        except BaseException:
            sock.close()
            raise
        sock.settimeout(0.3)  # accept() wakes up to notice stop()
        self._sock = sock
        self._running = True
        self._thread = threading.Thread(target=self._serve, name="kafkacore-broker-control",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(5.0)
        if self._sock is not None:
            self._sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def _serve(self) -> None:
        if self._sock is None:
            raise errors.IllegalStateError("the fault injector serves without its socket")
        while self._running:
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._running:
                    log.exception("control socket accept failed")
                return
            threading.Thread(target=self._serve_connection, args=(conn,), daemon=True,
                             name="kafkacore-broker-control-connection").start()

    def _serve_connection(self, conn: socket.socket) -> None:
        conn.settimeout(30.0)  # a silent client does not keep a thread for ever
        with conn, conn.makefile("rb") as reader:
            while self._running:
                try:
                    line = reader.readline(MAX_LINE + 1)
                except OSError:
                    return
                if not line:
                    return
                if len(line) > MAX_LINE:
                    self._reply(conn, {"ok": False, "error": "ValueError",
                                       "message": f"request longer than {MAX_LINE} bytes"})
                    return
                if not self._reply(conn, self.handle(line)):
                    return

    @staticmethod
    def _reply(conn: socket.socket, answer: dict[str, Any]) -> bool:
        try:
            conn.sendall(json.dumps(answer).encode() + b"\n")
            return True
        except OSError:
            return False

    def handle(self, line: bytes) -> dict[str, Any]:
        """One request line -> its answer (never raises)."""
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
            op = request.get("op")
            f = self.faults
            if op == "isolate":
                f.isolate()
            elif op == "heal":
                f.heal()
            elif op == "set_latency":
                f.set_latency(request["ms"])
            elif op == "fail_next":
                f.fail_next(request["api"], request["errors"],
                            after_append=request.get("after_append", False))
            elif op == "clear":
                f.clear()
            elif op == "reset":
                f.reset()
            elif op == "statistics" and self.statistics is not None:
                return {"ok": True, "statistics": self.statistics()}
            elif op != "status":
                raise ValueError(f"unknown op {op!r}")
            return {"ok": True, "status": f.status()}
        except (ValueError, TypeError, KeyError) as exc:
            return {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        except Exception as exc:  # a bug: say so to the client, keep serving
            log.exception("control request %r failed", line[:200])
            return {"ok": False, "error": type(exc).__name__, "message": str(exc)}


class BrokerControl:
    """A test's handle on the faults of a broker in another process, by its control socket.

    >>> control = BrokerControl("/tmp/broker-1.sock")            # doctest: +SKIP
    >>> control.fail_next("Produce", ["NOT_LEADER_OR_FOLLOWER"])  # doctest: +SKIP

    Each call connects, sends one request, waits at most ``timeout_s`` for the answer and
    raises :class:`BrokerControlError` (unreachable, no answer: :class:`BrokerControlTimeoutError`)
    or :class:`InvalidFaultError` (refused); arguments are checked here first, so a bad name
    raises ``ValueError`` / ``TypeError`` at the call.
    """

    def __init__(self, path: str | os.PathLike[str], timeout_s: float = 10.0) -> None:
        self.path = os.fspath(path)
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.timeout_s = timeout_s

    def isolate(self) -> None:
        self._call({"op": "isolate"})

    def heal(self) -> None:
        self._call({"op": "heal"})

    def set_latency(self, ms: int) -> None:
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise TypeError(f"latency must be an int number of ms, got {type(ms).__name__}")
        if ms < 0:
            raise ValueError(f"latency must be >= 0 ms, got {ms}")
        self._call({"op": "set_latency", "ms": ms})

    def fail_next(self, api: int | str, errors: Iterable[int | str],
                  after_append: bool = False) -> None:
        if isinstance(errors, (str, bytes, int)):
            raise TypeError(f"errors must be a list of codes or names, got {type(errors).__name__}")
        api_key = resolve_api(api)
        codes = [resolve_error(e) for e in errors]
        if after_append and api_key != ApiKey.PRODUCE:
            raise ValueError("after_append applies to Produce only")
        self._call({"op": "fail_next", "api": api_key, "errors": codes,
                    "after_append": bool(after_append)})

    def clear(self) -> None:
        self._call({"op": "clear"})

    def reset(self) -> None:
        """Switch every fault off: no queued errors, no latency, healed."""
        self._call({"op": "reset"})

    def status(self) -> dict[str, Any]:
        """``{"isolated": ..., "latency_ms": ..., "pending": {...}, "injected": {...}}``."""
        return dict(self._call({"op": "status"})["status"])

    def statistics(self) -> dict[str, Any]:
        """The broker's counters (``Broker.statistics()``)."""
        return dict(self._call({"op": "statistics"})["statistics"])

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(self.timeout_s)
                s.connect(self.path)
                s.sendall(json.dumps(request).encode() + b"\n")
                data = bytearray()
                while not data.endswith(b"\n"):
                    s.settimeout(max(0.001, deadline - time.monotonic()))
                    chunk = s.recv(65536)
                    if not chunk:
                        raise BrokerControlError(
                            f"the broker's control socket {self.path} closed without answering")
                    data += chunk
                    if len(data) > MAX_LINE:
                        raise BrokerControlError("the control socket's answer is too long")
        except TimeoutError:
            raise BrokerControlTimeoutError(
                f"no answer from the control socket {self.path} within {self.timeout_s} s "
                f"to {request['op']}") from None
        except OSError as exc:
            raise BrokerControlError(
                f"cannot reach the broker's control socket {self.path}: {exc}") from exc
        try:
            answer = json.loads(data)
        except ValueError:
            raise BrokerControlError(f"the control socket answered {bytes(data[:200])!r}") from None
        if not isinstance(answer, dict) or "ok" not in answer:
            raise BrokerControlError(f"the control socket answered {answer!r}")
        if not answer["ok"]:
            raise InvalidFaultError(f"{request['op']}: {answer.get('error')}: "
                                    f"{answer.get('message')}")
        return answer

    def __repr__(self) -> str:
        return f"BrokerControl({self.path!r})"
