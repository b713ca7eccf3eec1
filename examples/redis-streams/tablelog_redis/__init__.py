"""tablelog's ``redis`` log system: a table's changelog in Redis Streams.

The hooks are in :mod:`tablelog_redis.plugin` (the entry point), options in
:mod:`tablelog_redis.config`, the position encoding in
:mod:`tablelog_redis.positions`.
"""

__version__ = "0.1.0"
