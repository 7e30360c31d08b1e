"""kafkacore: a Kafka producer whose per-record work is compiled, built from the Java producer's parts.

``from kafkacore import KafkaProducer`` is the way in.  The producer is imported on first use, so
``import kafkacore.core`` alone stays light.
"""

import os
from importlib.machinery import EXTENSION_SUFFIXES
from typing import TYPE_CHECKING, Any


def _refuse_an_unbuilt_source_tree() -> None:
    """Imported from a clone whose compiled core was never built: say so, and what to do.

    Python looks first in the directory of the script it runs (the current directory for
    ``python -c``, ``python -m`` and the prompt), so a script saved in the clone's root imports
    the clone's ``kafkacore``, not the one ``pip install .`` built; without this, the first
    compiled module is "not found".  numpy refuses its source tree the same way.
    """
    core = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core")
    try:
        names = os.listdir(core)
    except OSError:
        return
    if "batch.pyx" not in names:
        return  # an installed wheel: no sources beside the compiled modules
    if any(n.startswith("batch.") and n.endswith(tuple(EXTENSION_SUFFIXES)) for n in names):
        return  # built in place (pip install -e ., or build_ext --inplace)
    root = os.path.dirname(os.path.dirname(core))
    raise ImportError(
        f"kafkacore is being imported from its source tree, {root}, whose compiled core was "
        "never built, so it hides the kafkacore you installed. Python looks first in the "
        "directory of the script you run (or the current directory, for python -c, python -m "
        "and the prompt). Run your script from outside the source tree, or build the tree in "
        "place: pip install -e . (from that directory)."
    )


_refuse_an_unbuilt_source_tree()

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
