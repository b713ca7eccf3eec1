"""tablelog's ``redis`` log system: a table's changelog in Redis Streams.

The plugin is the class :class:`tablelog_redis.plugin.RedisStreamsLog` (the entry
point), whose methods are the hooks; options are in :mod:`tablelog_redis.config`, the
position encoding in :mod:`tablelog_redis.positions`.
"""

__version__ = "0.1.0"
