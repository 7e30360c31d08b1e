"""The options of ``format("kafkacore")`` checked as Spark's Kafka connector checks them, and the
planning arithmetic (ranges cut for ``minPartitions``, ``maxOffsetsPerTrigger`` shared among
partitions) against Spark's documented results.  No Spark session, no broker: milliseconds."""

from __future__ import annotations

import pytest

from kafkacore.errors import ConfigError
from kafkacore.spark.options import (
    Assign,
    Earliest,
    GlobalTimestamp,
    Latest,
    SpecificOffsets,
    Subscribe,
    SubscribePattern,
    parse_sink_options,
    parse_source_options,
)

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (the `spark` extra)")

BS = {"kafka.bootstrap.servers": "h:9092"}


def test_strategies_and_defaults():
    s = parse_source_options({**BS, "subscribe": " a, b ,"}, streaming=True)
    assert s.strategy == Subscribe(("a", "b"))
    assert s.starting == Latest() and s.fail_on_data_loss and not s.include_headers
    assert s.kafka_config == {"bootstrap.servers": "h:9092"}
    b = parse_source_options({**BS, "SubscribePattern": "t-.*"}, streaming=False)
    assert b.strategy == SubscribePattern("t-.*")
    assert (b.starting, b.ending) == (Earliest(), Latest())
    a = parse_source_options({**BS, "assign": '{"t":[1,0]}', "startingOffsets": '{"t":{"0":5,"1":-2}}',
                              "startingTimestamp": "1000"}, streaming=True)
    assert a.strategy == Assign((("t", 0), ("t", 1)))
    # a timestamp wins over offsets, as in Spark
    assert a.starting == GlobalTimestamp(1000)
    o = parse_source_options({**BS, "assign": '{"t":[0]}', "startingOffsets": '{"t":{"0":5}}',
                              "kafka.group.id": "g", "kafka.isolation.level": "read_committed"},
                             streaming=True)
    assert o.starting == SpecificOffsets(((("t", 0), 5),))
    assert o.kafka_config == {"bootstrap.servers": "h:9092", "isolation.level": "read_committed"}


@pytest.mark.parametrize("options, streaming, words", [
    ({"subscribe": "t"}, True,
     "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"),
    ({**BS}, True, "One of the following options must be specified for Kafka source"),
    ({**BS, "subscribe": "t", "assign": '{"t":[0]}'}, False,
     "Only one of the following options can be specified for Kafka source"),
    ({**BS, "subscribe": " , "}, True, "No topics to subscribe to"),
    ({**BS, "assign": "t"}, True, "No topicpartitions to assign"),
    ({**BS, "subscribe": "t", "startingOffsets": "latest"}, False,
     "starting offset can't be latest for batch queries on Kafka"),
    ({**BS, "subscribe": "t", "endingOffsets": "earliest"}, False,
     "ending offset can't be earliest for batch queries on Kafka"),
    ({**BS, "subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'}, False,
     "startingOffsets for t-0 can't be latest for batch queries on Kafka"),
    ({**BS, "subscribe": "t", "endingOffsets": "latest"}, True,
     "ending offset not valid in streaming queries"),
    ({**BS, "subscribe": "t", "startingOffsets": '{"t":{"0":9}}',
      "endingOffsets": '{"t":{"0":3}}'}, False, "is greater than its ending offset 3"),
    ({**BS, "subscribe": "t", "minPartitions": "0"}, False, "minPartitions must be positive"),
    ({**BS, "subscribe": "t", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, True,
     "The value of minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5)."),
    ({**BS, "subscribe": "t", "kafka.auto.offset.reset": "earliest"}, True,
     "Kafka option 'auto.offset.reset' is not supported"),
    ({**BS, "subscribe": "t", "failOnDataLoss": "yes"}, True,
     "option 'failOnDataLoss' must be 'true' or 'false'"),
    ({**BS, "subscribe": "t", "startingOffsets": "{bad"}, True, "Expected e.g."),
    ({**BS, "subscribe": "t", "maxOffsetPerTrigger": "5"}, True,
     "unknown option 'maxoffsetpertrigger' for the kafkacore source; did you mean "
     "'maxOffsetsPerTrigger'?"),
    ({**BS, "subscribe": "t", "topic": "x"}, True,
     "option 'topic' is for the kafkacore sink, not the source"),
    ({**BS, "subscribe": "t", "kafka.fetch.max.byte": "1000"}, True,
     "unknown reader setting 'fetch.max.byte'; did you mean 'fetch.max.bytes'?"),
    ({**BS, "subscribe": "t", "kafka.isolation.level": "committed"}, False,
     "invalid value 'committed' for 'isolation.level'"),
])
def test_bad_source_options_say_what_is_wrong(options, streaming, words):
    with pytest.raises(ConfigError) as info:
        parse_source_options(options, streaming=streaming)
    assert words in str(info.value)


def _schema(**columns):
    from pyspark.sql import types as T

    headers = T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                        T.StructField("value", T.BinaryType())]))
    named = {"string": T.StringType(), "binary": T.BinaryType(), "int": T.IntegerType(),
             "bigint": T.LongType(), "map<string,string>": T.MapType(T.StringType(),
                                                                     T.StringType()),
             "array<struct<key:string,value:binary>>": headers}
    return T.StructType([T.StructField(n, named[t]) for n, t in columns.items()])


def test_sink_options_and_columns():
    s = parse_sink_options({**BS, "topic": "out", "checkpointLocation": "/x"},
                           _schema(key="string", value="binary", partition="int",
                                   headers="array<struct<key:string,value:binary>>"))
    assert (s.topic, s.value_column, s.key_column, s.partition_column, s.headers_column) == (
        "out", "value", "key", "partition", "headers")
    s = parse_sink_options({**BS, "deliveryMode": "exactly-once"},
                           _schema(topic="string", value="string"), extra_options=["deliveryMode"])
    assert s.topic is None and s.topic_column == "topic"
    assert s.extra == {"deliverymode": "exactly-once"}


@pytest.mark.parametrize("options, columns, error, words", [
    ({"topic": "t"}, {"value": "string"}, ConfigError,
     "Option 'kafka.bootstrap.servers' must be specified"),
    ({**BS}, {"value": "string"}, ConfigError,
     "topic option required when no 'topic' attribute is present"),
    ({**BS, "topic": "t"}, {"key": "string"}, ConfigError, "Required attribute 'value' not found"),
    ({**BS, "topic": "t"}, {"value": "bigint"}, TypeError,
     "value attribute type must be a string or binary, not bigint"),
    ({**BS, "topic": "t"}, {"value": "string", "key": "int"}, TypeError,
     "key attribute type must be a string or binary"),
    ({**BS, "topic": "t"}, {"value": "string", "partition": "bigint"}, TypeError,
     "partition attribute type must be an int"),
    ({**BS, "topic": "t"}, {"value": "string", "headers": "map<string,string>"}, TypeError,
     "headers attribute type must be array<struct<key:string,value:binary>>"),
    ({**BS, "topc": "t"}, {"value": "string"}, ConfigError, "did you mean 'topic'?"),
    ({**BS, "topic": "t", "subscribe": "t"}, {"value": "string"}, ConfigError,
     "option 'subscribe' is for the kafkacore source, not the sink"),
])
def test_bad_sink_input_says_what_is_wrong(options, columns, error, words):
    with pytest.raises(error) as info:
        parse_sink_options(options, _schema(**columns))
    assert words in str(info.value)


def test_ranges_cut_for_min_partitions_and_max_records():
    from kafkacore.spark.source import split_ranges

    cut = split_ranges([(("t", 0), 0, 100), (("t", 1), 5, 5), (("t", 2), 0, 10)],
                       min_partitions=11)
    # the empty range is dropped, the others cut in proportion: 100 -> 10 pieces, 10 -> 1
    assert [(p.partition, p.start, p.end) for p in cut][:2] == [(0, 0, 10), (0, 10, 20)]
    assert len(cut) == 11 and (cut[-1].partition, cut[-1].start, cut[-1].end) == (2, 0, 10)
    cut = split_ranges([(("t", 0), 0, 25)], max_records_per_partition=10)
    assert [(p.start, p.end) for p in cut] == [(0, 8), (8, 16), (16, 25)]


def test_max_offsets_per_trigger_shared_as_spark_shares_it():
    from kafkacore.spark.source import _rate_limit

    begin = {("t", 0): 0, ("t", 1): 0, ("t", 2): 100}
    latest = {("t", 0): 100, ("t", 1): 1, ("t", 2): 400}
    # shares of 10 by waiting records (100, 1, 300 of 401): 2.49 -> 2, 0.02 -> 1 (below one
    # record: up), 7.48 -> 7
    assert _rate_limit(begin, latest, 10) == {("t", 0): 2, ("t", 1): 1, ("t", 2): 107}
    assert _rate_limit(begin, latest, 1000) == latest
