"""Every message kafkacore speaks, declared once, as data (being split by API family)."""

from kafkacore.protocol.messages.transactions import *  # noqa: F403
