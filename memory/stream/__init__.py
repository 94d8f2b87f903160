"""The memory stream (memory_stream.MemoryStream) and the types its callers hand it and get
back; each concern of the stream lives in its own module here."""

from memory.stream.config import MemoryConfig, RelevanceMode
from memory.stream.filters import Filters
from memory.stream.listing import EvidenceNode
from memory.stream.memory_stream import MemoryStream
from memory.stream.retrieval import ScoredMemory
from memory.stream.stored import MemoryRequestError
from memory.stream.writing import NewMemory

__all__ = [
    "EvidenceNode",
    "Filters",
    "MemoryConfig",
    "MemoryRequestError",
    "MemoryStream",
    "NewMemory",
    "RelevanceMode",
    "ScoredMemory",
]
