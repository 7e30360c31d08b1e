"""``python -m kafkacore.testing``: a local broker for trying kafkacore, up until Ctrl-C.

Prints one line, the bootstrap address to give a client (``127.0.0.1:PORT``), then waits.
Ctrl-C (SIGINT) or SIGTERM stops the broker and exits 0.  The broker is kafkacore's own (one
node, its data in a temporary directory, topics created on first use); ``--kind tansu`` starts
tansu, the independent broker the tests also judge kafkacore with.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from kafkacore.testing.localbroker import BrokerUnavailableError, LocalBroker


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacore.testing",
                                     description=(__doc__ or "").splitlines()[0].replace("``", ""))
    parser.add_argument("--port", type=int, default=None, help="port to listen on (default: a free one)")
    parser.add_argument("--kind", choices=("kafkacore", "tansu"), default="kafkacore",
                        help="kafkacore's own broker (default), or tansu (needs the broker "
                             "extra)")
    args = parser.parse_args(argv)

    stop = threading.Event()
    # SIGTERM as well as Ctrl-C, so a supervisor (or a test) can stop it the same way.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        broker = LocalBroker(args.port, kind=args.kind).start()
    except BrokerUnavailableError as e:
        print(f"kafkacore.testing: {e}", file=sys.stderr)
        return 1
    try:
        print(broker.bootstrap, flush=True)
        print(f"broker up ({args.kind}, pid {broker.pid}, log {broker.log_path}); Ctrl-C to stop",
              file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            if not broker.is_running():
                print(f"kafkacore.testing: the broker exited; see {broker.log_path}", file=sys.stderr)
                return 1
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
