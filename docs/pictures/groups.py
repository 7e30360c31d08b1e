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


def _offsets(out_dir):
    fig, ax = _boxes.figure(12.0, 6.6)
    b, a = _boxes.box, _boxes.arrow
    ax.text(0.2, 6.25, "__consumer_offsets: where a group's commits live, and who answers for "
            "them", fontsize=11, weight="bold")
    b(ax, 0.2, 4.5, 2.4, 1.0, "consumer\ngroup.id=g", "python", 9)
    b(ax, 3.4, 4.5, 4.6, 1.0, "p = abs(hashCode(\"g\")) % 50\nFindCoordinator: leader of "
      "partition p", "wire", 9)
    a(ax, 2.6, 5.0, 3.4, 5.0)
    # three brokers, each with a replica of partition p
    b(ax, 0.2, 2.0, 3.4, 1.8, "broker 1: leader of p\nGroupCoordinator\n"
      "GroupMetadataManager cache\nOffsetCommit -> append,\nacks=all (produce purgatory)",
      "thread", 8)
    b(ax, 4.4, 2.0, 3.2, 1.8, "broker 2: follower of p\nreplica fetcher\n(no groups loaded)",
      "python", 8)
    b(ax, 8.4, 2.0, 3.4, 1.8, "broker 3: follower of p\nreplica fetcher\n(no groups loaded)",
      "python", 8)
    a(ax, 5.0, 4.5, 1.9, 3.8, "coordinator = broker 1")
    a(ax, 4.4, 2.9, 3.6, 2.9)
    ax.text(3.75, 3.05, "Fetch", fontsize=8)
    # broker 3's fetches go under broker 2
    ax.plot([10.1, 10.1, 2.6], [2.0, 1.65, 1.65], color="#333333", lw=1)
    a(ax, 2.6, 1.65, 2.6, 2.0)
    ax.text(8.0, 1.72, "Fetch", fontsize=8)
    ax.text(0.2, 1.1, "The commit is answered when the high watermark passed it: every ISR "
            "member has the record.", fontsize=8, color="#333333")
    ax.text(0.2, 0.7, "Broker 1 dies: the controller elects broker 2 (in the ISR) -> onElection: "
            "load p from its own log (COORDINATOR_LOAD_IN_PROGRESS meanwhile),", fontsize=8,
            color="#333333")
    ax.text(0.2, 0.35, "then serve g; clients got NOT_COORDINATOR or lost the connection, look "
            "the coordinator up again, rejoin, and fetch the same committed offsets.",
            fontsize=8, color="#333333")
    _boxes.save(fig, out_dir / "group_offsets.png")


def draw(out_dir):
    _states(pathlib.Path(out_dir))
    _offsets(pathlib.Path(out_dir))
