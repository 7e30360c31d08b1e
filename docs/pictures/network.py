"""The network client: one poll() turn, the two ends of a connection, connection states, backoff."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _poll_turn(out_dir):
    fig, ax = _boxes.figure(12.0, 6.2)
    b, a = _boxes.box, _boxes.arrow
    ax.text(
        0.2,
        5.9,
        "NetworkClient.poll(timeout_ms)  -- on the Sender thread",
        fontsize=11,
        weight="bold",
    )
    steps = [
        ("1. metadata due?\nsend MetadataRequest\nto least_loaded_node", "python"),
        ("2. selector.select(\nmin(timeout, next\ndeadline))", "thread"),
        ("3. writable: sendmsg\n(gather list)\nreadable: recv, frames", "python"),
        ("4. deadlines:\nrequest.timeout.ms,\nsetup timeout, idle", "python"),
        ("5. callbacks, in\ncompletion order", "python"),
    ]
    for i, (text, kind) in enumerate(steps):
        b(ax, 0.2 + i * 2.35, 4.3, 2.1, 1.1, text, kind, 8)
        if i:
            a(ax, 0.2 + i * 2.35 - 0.25, 4.85, 0.2 + i * 2.35, 4.85)
    ax.text(
        2.6,
        3.95,
        "wakeup(): another thread writes to an eventfd the selector also watches",
        fontsize=8,
        color="#333333",
    )

    # One connection's queues.
    ax.text(0.2, 3.45, "BrokerConnection (one per node)", fontsize=10, weight="bold")
    ax.text(0.2, 3.1, "send queue: each request is a list of buffers", fontsize=8)
    parts = [
        ("size", 0.6, "wire"),
        ("header +\nfields", 1.2, "python"),
        ("batch 0\n(memoryview)", 1.5, "compiled"),
        ("fields", 0.7, "python"),
        ("batch 1\n(memoryview)", 1.5, "compiled"),
    ]
    x = 0.2
    for text, w, kind in parts:
        b(ax, x, 2.2, w, 0.7, text, kind, 7)
        x += w + 0.05
    a(ax, x + 0.1, 2.55, x + 0.9, 2.55)
    ax.text(x + 0.05, 2.0, "sendmsg: the kernel\ngathers the pieces", fontsize=8)
    ax.text(
        0.2,
        1.75,
        "in-flight deque (oldest first): corr 41 | corr 42 | corr 43",
        fontsize=8,
        family="monospace",
    )
    ax.text(
        0.2,
        1.4,
        "a response frame must carry the OLDEST correlation id; anything else:"
        " the stream is out of step -> close",
        fontsize=8,
    )

    # The broker's side (Kafka's SocketServer).
    b(
        ax,
        8.0,
        0.3,
        3.8,
        3.0,
        "broker (SocketServer)\n\nAcceptor: accept()\n  -> a Processor\nProcessor: read a whole\n"
        "  request, stop reading\n  (mute) until its response\n  is written\n"
        "Handler threads: apis.handle",
        "thread",
        8,
    )
    a(ax, 7.3, 1.0, 8.0, 1.0, "TCP")
    ax.text(
        0.2,
        0.6,
        "the broker answers one connection's requests in order: that is why one\n"
        "deque per connection is enough to match responses to requests",
        fontsize=8,
    )
    _boxes.save(fig, out_dir / "network_poll.png")


def _states(out_dir):
    fig, ax = _boxes.figure(11.0, 3.4)
    b, a = _boxes.box, _boxes.arrow
    names = ["DISCONNECTED", "CONNECTING", "CHECKING_API_VERSIONS", "READY"]
    xs = [0.2, 3.0, 5.6, 8.9]
    ws = [2.2, 2.0, 2.7, 1.8]
    for name, x, w in zip(names, xs, ws, strict=True):
        b(ax, x, 1.9, w, 0.7, name, "python", 8)
    for x1, x2, label in ((2.4, 3.0, "ready()"), (5.0, 5.6, "TCP up"), (8.3, 8.9, "versions")):
        a(ax, x1, 2.25, x2, 2.25)
        ax.text((x1 + x2) / 2, 2.75, label, fontsize=8, ha="center")
    ax.annotate(
        "", xy=(1.3, 1.9), xytext=(6.9, 1.0), arrowprops={"arrowstyle": "->", "color": "#aa3333"}
    )
    ax.text(
        2.2,
        0.55,
        "refused, setup timeout, request timeout, EOF, bad frame, correlation mismatch:\n"
        "close, fail what was in flight, back off  reconnect.backoff.ms x 2^failures "
        "(capped, +/-20 %)",
        fontsize=8,
        color="#aa3333",
    )
    _boxes.save(fig, out_dir / "network_states.png")


def _backoff(out_dir):
    import matplotlib.pyplot as plt

    from kafkacore.metadata import Metadata
    from kafkacore.network.client import NetworkClient

    # The real code computes the delays (so the picture cannot drift from it).
    client = NetworkClient(
        "127.0.0.1:9", Metadata(), reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000
    )
    samples = []
    try:
        for run in range(40):
            client._node_states.pop(-1, None)
            for failure in range(1, 9):
                client._note_failure(-1, 0)
                samples.append((failure, client._node_states[-1].backoff_ms, run))
    finally:
        client.close()
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    ax.scatter([s[0] for s in samples], [s[1] for s in samples], s=8, alpha=0.4)
    ax.set_xlabel("consecutive failures")
    ax.set_ylabel("wait before reconnecting (ms)")
    ax.set_title(
        "reconnect.backoff.ms=50, reconnect.backoff.max.ms=1000, jitter +/-20 %", fontsize=9
    )
    ax.grid(alpha=0.3)
    _boxes.save(fig, out_dir / "network_backoff.png")


def draw(out_dir):
    out_dir = pathlib.Path(out_dir)
    _poll_turn(out_dir)
    _states(out_dir)
    _backoff(out_dir)
