"""tablelog's pulsar log system (log.system = pulsar)."""
