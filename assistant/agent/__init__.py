"""The master agent (MemGPT's main context and tools over the memory stream)."""
