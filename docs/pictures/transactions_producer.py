"""The transactional producer's state machine, drawn from the real transition table
(``kafkacore.transaction_manager._VALID_SOURCES``), and the requests of one transaction."""

import importlib.util
import pathlib

from kafkacore.transaction_manager import _VALID_SOURCES, State

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)

# Where each state sits (x, y of its box's lower left corner).
_AT = {
    State.UNINITIALIZED: (0.2, 4.2),
    State.INITIALIZING: (2.7, 4.2),
    State.READY: (5.2, 4.2),
    State.IN_TRANSACTION: (7.9, 4.2),
    State.COMMITTING_TRANSACTION: (10.6, 5.3),
    State.ABORTING_TRANSACTION: (10.6, 3.1),
    State.ABORTABLE_ERROR: (7.9, 2.0),
    State.FATAL_ERROR: (0.2, 2.0),
}
_W, _H = 2.2, 0.6


def _edge(ax, source, target):
    (x1, y1), (x2, y2) = _AT[source], _AT[target]
    c1 = (x1 + _W / 2, y1 + _H / 2)
    c2 = (x2 + _W / 2, y2 + _H / 2)
    # From the side of one box to the side of the other, along the line between their centres.
    dx, dy = c2[0] - c1[0], c2[1] - c1[1]
    k1 = min(_W / 2 / abs(dx) if dx else 9, _H / 2 / abs(dy) if dy else 9) + 0.02
    k2 = min(_W / 2 / abs(dx) if dx else 9, _H / 2 / abs(dy) if dy else 9) + 0.02
    _boxes.arrow(ax, c1[0] + dx * k1, c1[1] + dy * k1, c2[0] - dx * k2, c2[1] - dy * k2)


def draw(out_dir):
    fig, ax = _boxes.figure(13.0, 6.2)
    for state, (x, y) in _AT.items():
        kind = "wire" if state is State.FATAL_ERROR else (
            "compiled" if state is State.ABORTABLE_ERROR else "python")
        _boxes.box(ax, x, y, _W, _H, state.value, kind, 7)
    for target, sources in _VALID_SOURCES.items():
        if target is State.FATAL_ERROR:
            continue  # from anywhere: said in words below
        for source in sources:
            if source is not target:
                _edge(ax, source, target)
    ax.text(0.2, 1.5, "FATAL_ERROR from any state: fenced (PRODUCER_FENCED, or an old epoch at the "
            "coordinator), unauthorized, INVALID_TXN_STATE; only close() is left", fontsize=8)
    ax.text(0.2, 5.8, "the transactional producer's states; every arrow is an entry of the "
            "transition table in transaction_manager.py", fontsize=8)
    steps = ["begin_transaction()", "send(): records\nqueue as usual", "drain: new partition\n"
             "-> AddPartitionsToTxn", "ProduceRequest\n(transactional)", "commit: flush,\n"
             "then EndTxn", "coordinator writes\nCOMMIT markers"]
    kinds = ["python", "compiled", "thread", "wire", "thread", "wire"]
    for i, (text, kind) in enumerate(zip(steps, kinds, strict=True)):
        _boxes.box(ax, 0.2 + i * 2.15, 0.2, 1.95, 0.8, text, kind, 7)
        if i:
            _boxes.arrow(ax, i * 2.15 + 0.05, 0.6, i * 2.15 + 0.2, 0.6)
    _boxes.save(fig, pathlib.Path(out_dir) / "transactions_producer.png")
