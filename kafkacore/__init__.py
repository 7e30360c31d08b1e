"""kafkacore: a Kafka producer whose per-record work is compiled, built from the Java producer's parts."""

__version__ = "0.1.0"
