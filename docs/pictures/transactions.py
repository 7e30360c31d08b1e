"""Transactions on the broker: the coordinator's state machine, and one commit end to end."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _states(out_dir):
    fig, ax = _boxes.figure(12.0, 6.4)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 6.05, "TransactionState: one transactional id, each state written to "
            "__transaction_state before it counts", fontsize=11, weight="bold")
    b(ax, 0.3, 4.0, 2.2, 0.9, "Empty\nInitProducerId: epoch+1", "python", 9)
    b(ax, 4.0, 4.0, 2.6, 0.9, "Ongoing\npartitions added", "python", 9)
    b(ax, 8.3, 4.6, 3.2, 0.9, "PrepareCommit\nEndTxn answered; markers", "thread", 9)
    b(ax, 8.3, 2.9, 3.2, 0.9, "PrepareAbort\nEndTxn answered; markers", "thread", 9)
    b(ax, 8.3, 0.6, 3.2, 0.9, "CompleteCommit /\nCompleteAbort", "python", 9)
    b(ax, 4.0, 1.9, 2.6, 0.9, "PrepareEpochFence\n(epoch+1, not written)", "wire", 9)
    a(ax, 2.5, 4.45, 4.0, 4.45)
    ax.text(2.55, 4.6, "AddPartitionsToTxn\nAddOffsetsToTxn", fontsize=8)
    a(ax, 6.6, 4.7, 8.3, 5.0)
    ax.text(6.7, 5.15, "EndTxn(commit)", fontsize=8)
    a(ax, 6.6, 4.2, 8.3, 3.4)
    ax.text(6.75, 3.3, "EndTxn(abort)", fontsize=8)
    a(ax, 5.3, 4.0, 5.3, 2.8)
    ax.text(5.4, 3.25, "InitProducerId of a newer\nproducer, or the timeout", fontsize=8)
    a(ax, 6.6, 2.35, 8.3, 3.1)
    ax.text(6.7, 2.05, "abort with the\nbumped epoch", fontsize=8)
    a(ax, 9.9, 4.6, 9.9, 1.5)
    a(ax, 10.9, 2.9, 10.9, 1.5)
    ax.text(10.0, 2.05, "every marker\nwritten", fontsize=8)
    a(ax, 8.3, 1.05, 1.4, 4.0)
    ax.text(3.0, 1.1, "begin the next transaction, or InitProducerId", fontsize=8)
    ax.text(0.3, 0.15, "A request that finds a change being written (pending state), or a "
            "Prepare state, gets CONCURRENT_TRANSACTIONS and retries.", fontsize=8,
            color="#333333")
    _boxes.save(fig, out_dir / "transaction_states.png")


def _commit(out_dir):
    fig, ax = _boxes.figure(12.0, 6.6)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 6.25, "One commit: the coordinator writes its decision, then the markers",
            fontsize=11, weight="bold")
    b(ax, 0.2, 4.6, 2.4, 1.0, "producer\ntransactional.id=t", "python", 9)
    b(ax, 4.0, 4.6, 3.6, 1.0, "TransactionCoordinator\n(leader of __transaction_state\n"
      "partition of t)", "thread", 8)
    b(ax, 8.8, 4.6, 3.0, 1.0, "__transaction_state-p\nPrepareCommit, then\nCompleteCommit",
      "wire", 8)
    a(ax, 2.6, 5.1, 4.0, 5.1)
    ax.text(2.8, 5.25, "EndTxn", fontsize=8)
    a(ax, 7.6, 5.1, 8.8, 5.1)
    ax.text(7.7, 5.25, "1 append", fontsize=8)
    b(ax, 4.0, 2.5, 3.6, 1.0, "TransactionMarker\nChannelManager (thread)", "thread", 8)
    a(ax, 5.8, 4.6, 5.8, 3.5)
    ax.text(5.9, 4.0, "2 markers (after 1 is acked)", fontsize=8)
    b(ax, 0.2, 0.5, 3.4, 1.3, "orders-0 leader\nr r r [COMMIT]\nLSO moves past it", "python", 8)
    b(ax, 4.2, 0.5, 3.4, 1.3, "orders-1 leader\nr r [COMMIT]", "python", 8)
    b(ax, 8.2, 0.5, 3.6, 1.3, "__consumer_offsets-q\noffsets [COMMIT]: the\npending "
      "offsets count", "python", 8)
    a(ax, 4.8, 2.5, 1.9, 1.8)
    ax.text(1.0, 2.3, "WriteTxnMarkers to each leader", fontsize=8)
    a(ax, 5.8, 2.5, 5.9, 1.8)
    a(ax, 6.8, 2.5, 10.0, 1.8)
    ax.text(7.8, 3.0, "3 all written: CompleteCommit appended", fontsize=8)
    _boxes.save(fig, out_dir / "transaction_commit.png")


def draw(out_dir):
    _states(pathlib.Path(out_dir))
    _commit(pathlib.Path(out_dir))
