"""Scale-out on Redis: stores and the relay shared by every worker on every machine."""
