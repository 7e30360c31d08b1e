"""kafkacore: a Kafka producer whose per-record work is compiled, built from the Java producer's parts.

``from kafkacore import KafkaProducer`` is the way in.  The producer is imported on first use, so
``import kafkacore.core`` alone stays light.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports on first use
    from kafkacore.core.batch import RecordMetadata
    from kafkacore.producer import KafkaProducer

__version__ = "0.1.0"
__all__ = ["KafkaProducer", "RecordMetadata", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "KafkaProducer":
        from kafkacore.producer import KafkaProducer

        return KafkaProducer
    if name == "RecordMetadata":
        from kafkacore.core import RecordMetadata

        return RecordMetadata
    raise AttributeError(f"module 'kafkacore' has no attribute {name!r}")
