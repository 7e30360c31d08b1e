"""kafkacore's broker: the request reactor, the APIs and the log on disk (see docs/broker/)."""
