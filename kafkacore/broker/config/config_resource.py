"""The kinds of config resource (Kafka's ``ConfigResource.Type``), as DescribeConfigs,
AlterConfigs and the metadata log's ConfigRecords name them."""

RESOURCE_TYPE_TOPIC = 2
RESOURCE_TYPE_BROKER = 4
RESOURCE_TYPE_BROKER_LOGGER = 8
RESOURCE_TYPE_GROUP = 32
