"""The only package that starts threads: reader loops, handler pools, pending calls."""
