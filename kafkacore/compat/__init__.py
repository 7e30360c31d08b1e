"""Other clients' interfaces over kafkacore's producer, for code written for them.

:mod:`kafkacore.compat.confluent` is confluent-kafka's ``Producer``: a script written for it runs
with its import changed and nothing else (see docs/migration.rst).
"""
