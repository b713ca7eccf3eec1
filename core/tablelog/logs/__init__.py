"""Log systems that ship inside the core distribution."""
