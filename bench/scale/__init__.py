"""``python -m bench.scale``: tablelog's curves against table size (see ``__main__``).

Modules: ``schedule`` (the arithmetic: checkpoints, growth, window order, percentiles),
``data`` (the rows), ``sink`` (the Spark sink's growth and measured windows), ``runs``
(sorted runs per bucket; waiting for the background compaction), ``checkpoint`` (what is
measured at a table size), ``jobs`` and ``spark_job`` (the measurements in processes of
their own), ``task_memory`` (Spark task workers' peak RSS), ``s3_counter`` (S3 requests,
counted by a proxy), ``expiry``, ``summary`` (targets, text) and ``plots``.
"""
