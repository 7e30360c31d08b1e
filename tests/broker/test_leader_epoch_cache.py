"""LeaderEpochFileCache: where each leader epoch starts, what OffsetForLeaderEpoch answers, and
that it survives a restart (the checkpoint file) and follows truncation."""

from kafkacore.broker.log.leader_epoch_cache import CHECKPOINT_FILE, LeaderEpochFileCache


def test_end_offset_for_each_epoch(tmp_path):
    cache = LeaderEpochFileCache(tmp_path)
    assert cache.end_offset_for(0, 0) == (-1, -1)  # nothing known yet
    cache.assign(0, 0)
    cache.assign(0, 5)  # the same epoch again: its start does not move
    cache.assign(2, 10)
    cache.assign(1, 7)  # an older epoch after a newer one: ignored
    cache.assign(5, 20)
    assert cache.entries() == [(0, 0), (2, 10), (5, 20)]
    leo = 30
    assert cache.end_offset_for(5, leo) == (5, 30)  # the latest epoch ends at the log end
    assert cache.end_offset_for(7, leo) == (5, 30)  # newer than anything: our latest
    assert cache.end_offset_for(2, leo) == (2, 20)  # ends where epoch 5 begins
    assert cache.end_offset_for(3, leo) == (2, 20)  # unknown epoch: the largest one below it
    assert cache.end_offset_for(0, leo) == (0, 10)


def test_checkpoint_survives_a_restart_and_truncation_forgets_later_epochs(tmp_path):
    cache = LeaderEpochFileCache(tmp_path)
    for epoch, start in ((0, 0), (1, 4), (3, 9)):
        cache.assign(epoch, start)
    assert (tmp_path / CHECKPOINT_FILE).read_text() == "0\n3\n0 0\n1 4\n3 9\n"  # Kafka's format
    again = LeaderEpochFileCache(tmp_path)
    assert again.entries() == [(0, 0), (1, 4), (3, 9)]
    again.truncate_from_end(9)  # the log was cut at 9: epoch 3 never happened here
    assert again.entries() == [(0, 0), (1, 4)]
    assert LeaderEpochFileCache(tmp_path).latest_epoch == 1


def test_a_damaged_checkpoint_is_an_empty_cache(tmp_path):
    (tmp_path / CHECKPOINT_FILE).write_text("0\nnot a number\n")
    assert LeaderEpochFileCache(tmp_path).entries() == []
