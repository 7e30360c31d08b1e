"""The broker: the parts of a Kafka broker, built from Kafka's own classes."""
