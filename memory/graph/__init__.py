"""Knowledge-graph memory (AriGraph): semantic facts as triplets learnt from the memory stream,
kept current (a replaced fact keeps its ``valid_until``), linked to the memories they came
from, and searched breadth-first from the triplets nearest a query (docs/GRAPH.md)."""
