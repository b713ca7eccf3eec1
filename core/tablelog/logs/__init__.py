"""The log systems, as the core sees them.

* :mod:`.discovery`: finding them by name (entry points, hook wrappers) and loading them;
* :mod:`.client`: a loaded log system and an open connection, the core's typed access to
  their hooks;
* :mod:`.pool`: open connections lent to the write tasks of one process;
* :mod:`.filesystem`: the log system that ships inside the core distribution.
"""
