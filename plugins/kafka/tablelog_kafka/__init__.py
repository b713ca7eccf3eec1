"""tablelog's kafka log system (log.system = kafka)."""
