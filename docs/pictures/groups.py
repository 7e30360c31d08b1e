"""The classic consumer group's state machine (GroupState) and what moves it."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _states(out_dir):
    fig, ax = _boxes.figure(12.0, 6.2)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 5.85, "GroupState: one group, as the coordinator moves it", fontsize=11,
            weight="bold")
    b(ax, 0.3, 3.9, 2.0, 0.9, "Empty\nno members", "python", 9)
    b(ax, 4.1, 3.9, 3.2, 0.9, "PreparingRebalance\nDelayedJoin in the purgatory", "thread", 9)
    b(ax, 4.1, 0.9, 3.2, 0.9, "CompletingRebalance\nwaiting for the leader's SyncGroup",
      "python", 9)
    b(ax, 9.2, 0.9, 2.4, 0.9, "Stable\nheartbeats", "python", 9)
    b(ax, 9.2, 3.9, 2.4, 0.9, "Dead\n(coordinator moved)", "wire", 9)
    # Empty -> Preparing: the first JoinGroup (InitialDelayedJoin waits for more members).
    a(ax, 2.3, 4.45, 4.1, 4.45)
    ax.text(2.35, 4.6, "first JoinGroup\n(InitialDelayedJoin)", fontsize=8)
    # Preparing -> Empty: the join completed with no member left.
    a(ax, 4.1, 4.05, 2.3, 4.05)
    ax.text(2.45, 3.55, "join done,\nno members", fontsize=8)
    # Preparing -> Completing: every member rejoined, or the rebalance timeout.
    a(ax, 5.3, 3.9, 5.3, 1.8)
    ax.text(3.1, 2.75, "all members rejoined\nor rebalance timeout:\ngeneration + 1,\nleader gets "
            "members", fontsize=8)
    # Completing -> Stable: the leader's SyncGroup.
    a(ax, 7.3, 1.35, 9.2, 1.35)
    ax.text(7.45, 1.5, "leader's SyncGroup:\nassignments out", fontsize=8)
    # Completing -> Preparing and Stable -> Preparing.
    a(ax, 6.4, 1.8, 6.4, 3.9)
    ax.text(6.5, 2.45, "join, leave,\nsession expiry", fontsize=8)
    a(ax, 9.6, 1.8, 7.3, 3.95)
    ax.text(8.35, 3.0, "JoinGroup (new member,\nleader, new subscription),\nLeaveGroup, "
            "DelayedHeartbeat\nexpires", fontsize=8)
    ax.text(0.3, 0.3, "While Preparing: Heartbeat answers REBALANCE_IN_PROGRESS, "
            "SyncGroup too; OffsetCommit checks the generation.", fontsize=8, color="#333333")
    _boxes.save(fig, out_dir / "groups.png")


def draw(out_dir):
    _states(pathlib.Path(out_dir))
