"""The checks a reply passes through while it streams (pipeline.py declares their order,
check.py their one interface)."""
