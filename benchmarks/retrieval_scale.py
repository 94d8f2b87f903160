"""How memory retrieval scales: latency, exactness and ingest speed at 10k, 100k and 1M records.

    python -m benchmarks.retrieval_scale --sizes 10000 100000 1000000 [--queries N] [--json]

For each size it builds a memory (``MemoryStream`` on LanceDB, records added through
``add_many(..., merge_duplicates=False)`` in batches) of varied personal-assistant texts made
from templates with a seeded RNG, created over the year before a fixed "now", importance 1-10
given. Vectors are real all-MiniLM-L6-v2 embeddings (the profile's embedder) for the first
100,000 texts. **Above 100,000 records the extra vectors are derived, not embedded**: each is a
normalised mixture of two random real vectors plus small Gaussian noise, paired with a text
built from the two source texts (embedding these texts ran at 55-200 texts/s on this 2-core
machine, so a million would take hours). The real vectors are kept as a .npy, and each built
memory in a folder keyed by size, under ``<cache_dir>/benchmarks/retrieval_scale``
(``--cache-dir`` to move it, ``--temp`` for a throw-away folder, ``--rebuild`` to start
afresh), so a re-run does not rebuild.

Then, for each size, ``--queries`` realistic questions from the same templates:

* ``p50_ms`` / ``p95_ms``: ``stream.retrieve(q, k=10, touch=False)`` with the default
  ``MemoryConfig`` (query embedding included), after one untimed warm-up query (stderr also
  gives the query embedding's own p50);
* ``top10_agreement``: the share of queries whose retrieved top-10 id set equals the exact
  top-10 over *all* records, computed with numpy: recency, importance and relevance each
  min-max normalised over all records, weights 1, 1, 1. The default relevance mixes in BM25
  (and, in the contextual mode, names and neighbouring records), which has no exact
  all-records form here, so this check runs ``retrieve`` with ``relevance="cosine"`` (the
  default config otherwise) and compares with exact cosine relevance;
* ``speedup_vs_naive`` (sizes up to 10,000 only, else null): a naive pure-Python
  implementation of the paper's formula (per record: recency, importance, cosine over the
  record's vector as a list; then min-max, sum, sort) against ``retrieve`` with that same
  formula (``relevance="cosine"``, the default config otherwise), like for like: both are
  handed the same query vector, so this is the ratio of the rankings, medians over up to 10
  queries. ``speedup_vs_naive_embedding_included`` has both embed the query themselves: the
  embedding (3-6 ms here) is the same model call on both sides, so this ratio cannot pass
  (naive + embedding) / embedding whatever the retrieval does (stderr prints that bound);
* ``ingest_records_per_s``: real-embedded records per second, embedding included: the time
  to embed them (in batches of 64, as ``add_many`` does; when they are cached, timed again on
  2,000 of them) + ``add_many`` over them with those vectors supplied + their share of the
  final index build. The memory is built inside ``Table.bulk()`` (indices folded once, at the
  end), as an import would;
* ``db_mb_per_100k``: the database folder's size on disk per 100,000 records.

``--json`` prints one JSON object ``{"<size>": {...those figures...}}``; otherwise a table.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.database import open_database
from memory.embedder import Embedder
from memory.locking import WriteLock
from memory.mirror import to_us
from memory.scoring import RetrievalWeights, cosine, min_max, recency
from memory.stream import MemoryStream, NewMemory, RelevanceMode

T = TypeVar("T")
Vectors = NDArray[np.float32]

REAL_LIMIT = 100_000
SEED = 20261121
# Bump when the texts, times or vector derivation change: the cache is keyed by it.
CORPUS_VERSION = 1
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SPAN = timedelta(days=365)
BATCH = 2_000
K = 10
NAIVE_MAX_SIZE = 10_000
DERIVED_NOISE = 0.01
# With every real vector cached, the embedding rate is timed again on this many texts.
EMBED_SAMPLE = 2_000
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
FIGURES = (
    "p50_ms",
    "p95_ms",
    "speedup_vs_naive",
    "speedup_vs_naive_embedding_included",
    "top10_agreement",
    "ingest_records_per_s",
    "db_mb_per_100k",
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# Texts


PEOPLE = (
    "Anna", "Ben", "Carla", "David", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas",
    "Kaito", "Lena", "Marco", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Samir", "Tara",
    "Ulrich", "Vera", "Wei", "Ximena", "Yusuf", "Zoe", "Aisha", "Bruno", "Chloe", "Dmitri",
    "Emma", "Felix", "Greta", "Hana", "Ivan", "Julia", "Kofi", "Laura", "Mateo", "Nora",
    "Oscar", "Paula", "Rafael", "Sofia", "Tomas", "Uma", "Viktor", "Wanda", "Yara", "Zeynep",
    "Alice", "Bilal", "Clara", "Diego", "Eva", "Filip", "Gustav", "Helga", "Isaac", "Jana",
    "Karim", "Lucia", "Miguel", "Noah", "Olga", "Pedro", "Rita", "Stefan", "Theo", "Valentina",
)  # fmt: skip
RELATIONS = (
    "my sister", "my brother", "my mother", "my father", "my boss", "my neighbour",
    "my dentist", "my landlord", "my cousin", "my aunt", "my uncle", "my grandmother",
    "my friend", "my colleague", "my partner", "my doctor", "my trainer", "my accountant",
)  # fmt: skip
PLACES = (
    "the old harbour", "the botanical garden", "the city library", "the corner bakery",
    "the climbing gym", "the farmers market", "the train station", "the riverside park",
    "the Italian place on Elm Street", "the sushi bar downtown", "the community centre",
    "the swimming pool", "the art museum", "the cinema on Main Street", "the coffee shop by "
    "the office", "the hardware store", "the vet clinic", "the town hall", "the beach",
    "the ski resort", "the night market", "the book shop", "the jazz club", "the airport",
    "the hospital", "the garden centre", "the tennis club", "the Thai restaurant",
    "the university campus", "the flea market", "the lake cabin", "the pharmacy",
)  # fmt: skip
CITIES = (
    "Lisbon", "Berlin", "Kyoto", "Toronto", "Nairobi", "Oslo", "Lima", "Seoul", "Dublin",
    "Prague", "Istanbul", "Melbourne", "Montreal", "Porto", "Vienna", "Cairo", "Hanoi",
    "Reykjavik", "Madrid", "Warsaw", "Mumbai", "Copenhagen", "Buenos Aires", "Edinburgh",
    "Marrakesh", "Helsinki", "Athens", "Singapore", "Zurich", "Mexico City",
)  # fmt: skip
ACTIVITIES = (
    "went hiking", "played tennis", "went swimming", "cooked dinner", "watched a film",
    "went to a concert", "played chess", "went for a run", "visited a gallery",
    "went cycling", "played board games", "baked bread", "went fishing", "did yoga",
    "went bouldering", "walked the dog", "went kayaking", "studied Spanish",
    "repaired the bike", "painted the fence", "went to the theatre", "played football",
    "went ice skating", "planted tomatoes", "went to a pub quiz", "practised the guitar",
)  # fmt: skip
QUESTION_ACTIVITIES = (
    "go hiking", "play tennis", "go swimming", "cook dinner", "watch a film",
    "go to a concert", "play chess", "go for a run", "visit a gallery", "go cycling",
    "play board games", "bake bread", "go fishing", "do yoga", "go bouldering",
    "walk the dog", "go kayaking", "study Spanish", "repair the bike", "paint the fence",
    "go to the theatre", "play football", "go ice skating", "plant tomatoes",
    "go to a pub quiz", "practise the guitar",
)  # fmt: skip
FEELINGS = (
    "happy", "exhausted", "relaxed", "anxious", "proud", "frustrated", "grateful", "bored",
    "excited", "sad", "calm", "stressed", "energised", "nostalgic", "lonely", "content",
    "annoyed", "hopeful", "overwhelmed", "inspired",
)  # fmt: skip
FOODS = (
    "peanuts", "shellfish", "gluten", "lactose", "strawberries", "eggs", "soy", "sesame",
    "kiwi", "mushrooms", "coriander", "olives", "spicy food", "pork", "almonds",
)  # fmt: skip
MEALS = ("breakfast", "brunch", "lunch", "dinner", "coffee", "drinks", "dessert", "tea")
ITEMS = (
    "a winter coat", "running shoes", "a new laptop", "headphones", "a coffee grinder",
    "a bookshelf", "a rain jacket", "a desk lamp", "a birthday present for {person}",
    "groceries for the week", "a tent", "a blender", "a second-hand bicycle", "house plants",
    "concert tickets", "a phone case", "a yoga mat", "paint for the bedroom", "a kettle",
    "a printer", "a board game", "flowers for {person}", "a pair of jeans", "a watch",
)  # fmt: skip
STORES = (
    "the supermarket", "the outlet mall", "an online shop", "the electronics store",
    "the second-hand shop", "the department store", "the local market", "IKEA",
    "the sports shop", "the bookshop",
)  # fmt: skip
TOPICS = (
    "the budget", "the holiday plans", "moving house", "the new job", "the wedding",
    "the garden", "school fees", "the car insurance", "a book she loved", "politics",
    "the kitchen renovation", "learning to drive", "the marathon", "the quarterly report",
    "the family reunion", "a podcast", "climate change", "the neighbour's dog",
    "retirement savings", "the team offsite", "a new recipe", "the football season",
)  # fmt: skip
PROJECTS = (
    "the website redesign", "the mobile app launch", "the data migration", "the audit",
    "the hiring plan", "the product roadmap", "the customer survey", "the security review",
    "the conference talk", "the grant proposal", "the office move", "the API upgrade",
)  # fmt: skip
BILLS = (
    "rent", "electricity", "the internet", "the phone bill", "car insurance", "the gym",
    "water", "council tax", "the streaming service", "health insurance", "the parking permit",
)  # fmt: skip
APPLIANCES = (
    "washing machine", "fridge", "dishwasher", "boiler", "oven", "dryer", "router",
    "smoke alarm", "heater", "microwave", "vacuum cleaner", "garage door",
)  # fmt: skip
ROOMS = ("kitchen", "bathroom", "hall", "bedroom", "basement", "living room", "garage", "attic")
NOISES = ("rattling", "clicking", "humming", "grinding", "beeping", "whistling", "buzzing")
BOOKS = (
    "a mystery novel", "a biography of Marie Curie", "a book on stoicism", "a sci-fi trilogy",
    "a cookbook", "a history of Rome", "a poetry collection", "a book about sleep",
    "a travel memoir", "a book on habits", "a fantasy novel", "a graphic novel",
)  # fmt: skip
SHOWS = (
    "a documentary about octopuses", "a Korean drama", "a crime series", "an old western",
    "a cooking show", "a nature documentary", "a stand-up special", "a French comedy",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
DAYPARTS = ("in the morning", "at lunchtime", "in the afternoon", "in the evening", "at night")
CURRENCIES = ("euros", "dollars", "pounds")
DRINKS = ("green tea", "espresso", "oat milk lattes", "red wine", "sparkling water", "cider")
HOBBIES = ("pottery", "birdwatching", "salsa dancing", "chess", "photography", "knitting")

MEMORY_TEMPLATES = (
    "Had {meal} with {person} at {place} on {weekday}; we talked about {topic}.",
    "{person}'s birthday is on {month} {day}.",
    "{Relation} {person} is allergic to {food}.",
    "{person} moved to {city} in {month} and works as a {job} now.",
    "{person} prefers {drink} to {drink2}, especially {daypart} at {place}.",
    "I {activity} with {person} near {place} and felt {feeling} afterwards.",
    "Need to call {person} about {topic} before {weekday}.",
    "Bought {item} for {amount} {currency} at {store}.",
    "Ran {km} km in {minutes} minutes along {place}; felt {feeling}.",
    "Slept {hours} hours on {weekday} night after I {activity}; woke up feeling {feeling}.",
    "The meeting with {person} about {project} moved to {weekday} at {hour} o'clock.",
    "Felt {feeling} after {topic} came up at dinner with {relation}.",
    "Flight to {city} on {month} {day} leaves at {hour}:{minute2} from gate {gate}.",
    "The {appliance} in the {room} started making a {noise} noise; {person} will look at it.",
    "Finished reading {book}, recommended by {person}; I'd give it {score} out of 10.",
    "Paid {amount} {currency} for {bill} on {month} {day}.",
    "{person} recommended {show}; we watched it {daypart} and I felt {feeling}.",
    "My {hobby} class moved to {weekday}s {daypart}, at {place}.",
    "{Relation} said the kids' school trip to {city} costs {amount} {currency}.",
    "Lent {person} {amount} {currency} for {topic}; they promised to pay it back by {month}.",
    "The Wi-Fi password at {relation}'s place is {word}{number}.",
    "Parked the car on level {level} of the garage near {place}, spot {number}.",
    "Doctor said my blood pressure was {pressure}; next check-up in {month}.",
    "I {activity} {daypart} on {weekday} and it made me feel {feeling}.",
    "{person} and I disagreed about {topic}; I felt {feeling} about it.",
    "Booked a table for {guests} at {place} on {weekday} at {hour} for {relation}'s visit.",
)
QUESTION_TEMPLATES = (
    "When is {person}'s birthday?",
    "What is {person} allergic to?",
    "Where does {person} live now?",
    "What did I talk about with {person} over {meal}?",
    "How much did I pay for {bill}?",
    "When is my flight to {city}?",
    "What's wrong with the {appliance}?",
    "When did I last {qactivity} with {person}?",
    "What did {person} recommend to read?",
    "When is the meeting about {project}?",
    "How far did I run along {place}?",
    "How did I sleep last week?",
    "Where did I park the car?",
    "What did I buy at {store}?",
    "How much money did I lend {person}?",
    "What does {person} like to drink?",
    "When is my {hobby} class?",
    "How was I feeling after talking about {topic}?",
    "What did the doctor say about my blood pressure?",
    "Where did I book a table for {relation}'s visit?",
    "What show did {person} recommend?",
    "What's the Wi-Fi password at {relation}'s place?",
)
JOBS = ("nurse", "teacher", "architect", "chef", "pilot", "lawyer", "designer", "engineer")
WORDS = ("sunflower", "tiger", "maple", "harbour", "comet", "violet", "falcon", "pepper")


def _fill(template: str, rng: random.Random) -> str:
    relation = rng.choice(RELATIONS)
    values = {
        "person": rng.choice(PEOPLE),
        "relation": relation,
        "Relation": relation[0].upper() + relation[1:],
        "place": rng.choice(PLACES),
        "city": rng.choice(CITIES),
        "activity": rng.choice(ACTIVITIES),
        "qactivity": rng.choice(QUESTION_ACTIVITIES),
        "feeling": rng.choice(FEELINGS),
        "food": rng.choice(FOODS),
        "meal": rng.choice(MEALS),
        "store": rng.choice(STORES),
        "topic": rng.choice(TOPICS),
        "project": rng.choice(PROJECTS),
        "bill": rng.choice(BILLS),
        "appliance": rng.choice(APPLIANCES),
        "room": rng.choice(ROOMS),
        "noise": rng.choice(NOISES),
        "book": rng.choice(BOOKS),
        "show": rng.choice(SHOWS),
        "weekday": rng.choice(WEEKDAYS),
        "month": rng.choice(MONTHS),
        "daypart": rng.choice(DAYPARTS),
        "currency": rng.choice(CURRENCIES),
        "drink": rng.choice(DRINKS),
        "drink2": rng.choice(DRINKS),
        "hobby": rng.choice(HOBBIES),
        "job": rng.choice(JOBS),
        "word": rng.choice(WORDS),
        "day": rng.randint(1, 28),
        "amount": rng.choice((rng.randint(5, 99), rng.randint(100, 2_500))),
        "km": round(rng.uniform(2.0, 21.0), 1),
        "minutes": rng.randint(12, 140),
        "hours": rng.choice(("four", "five", "six", "seven", "eight", "nine", "ten")),
        "hour": rng.randint(7, 20),
        "minute2": f"{rng.choice((0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55)):02d}",
        "gate": f"{rng.choice('ABCDEF')}{rng.randint(1, 40)}",
        "score": rng.randint(3, 10),
        "number": rng.randint(10, 999),
        "level": rng.randint(-3, 5),
        "pressure": f"{rng.randint(105, 150)} over {rng.randint(65, 95)}",
        "guests": rng.choice(("two", "three", "four", "five", "six")),
    }
    values["item"] = rng.choice(ITEMS).format(person=values["person"])
    return template.format(**values)


def memory_texts(count: int, seed: int = SEED) -> list[str]:
    """``count`` varied memory texts; the first n of a longer list are the same n texts."""
    rng = random.Random(seed)
    return [_fill(rng.choice(MEMORY_TEMPLATES), rng) for _ in range(count)]


def questions(count: int, seed: int = SEED + 1) -> list[str]:
    rng = random.Random(seed)
    return [_fill(rng.choice(QUESTION_TEMPLATES), rng) for _ in range(count)]


def derive_vectors(
    real: Vectors, count: int, seed: int = SEED + 2, noise: float = DERIVED_NOISE
) -> tuple[Vectors, NDArray[np.int64]]:
    """``count`` unit vectors, each a normalised mix of two random rows of ``real`` plus
    Gaussian noise; returns them and the (count, 2) source row indices."""
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, len(real), size=(count, 2))
    share = rng.uniform(0.3, 0.7, size=(count, 1)).astype(np.float32)
    mixed = share * real[pairs[:, 0]] + (1 - share) * real[pairs[:, 1]]
    mixed += np.asarray(rng.normal(0.0, noise, size=mixed.shape), dtype=np.float32)
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    vectors: Vectors = (mixed / np.maximum(norms, 1e-12)).astype(np.float32)
    return vectors, pairs


def derived_texts(texts: Sequence[str], pairs: NDArray[np.int64]) -> list[str]:
    return [f"{texts[a].rstrip('.')}, and also: {texts[b]}" for a, b in pairs.tolist()]


def record_metadata(count: int, seed: int = SEED + 3) -> tuple[list[datetime], list[int]]:
    """Creation times spread over the year before NOW, and importance 1-10."""
    rng = np.random.default_rng(seed)
    offsets = rng.uniform(0.0, SPAN.total_seconds(), size=count)
    importance = rng.integers(1, 11, size=count)
    created = [NOW - timedelta(seconds=float(s)) for s in offsets]
    return created, [int(i) for i in importance]


# Embedders for building and querying


class BenchEmbedder:
    """The real embedder, timed; or, while vectors are queued, those vectors in order (so
    ``add_many`` can store precomputed or derived vectors)."""

    def __init__(self, real: Embedder) -> None:
        from memory.embedder import OnnxSentenceEmbedder

        # The model's own time for every text: the app's embedder remembers recent vectors.
        self.real = real.without_memory() if isinstance(real, OnnxSentenceEmbedder) else real
        self.dimensions = real.dimensions
        self.seconds = 0.0
        self.texts = 0
        self._queued: Vectors | None = None

    @contextmanager
    def supplying(self, vectors: Vectors) -> Iterator[None]:
        self._queued = vectors
        try:
            yield
        finally:
            self._queued = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self._queued is not None:
            if len(texts) != len(self._queued):
                raise ValueError(f"{len(texts)} texts for {len(self._queued)} queued vectors")
            vectors, self._queued = self._queued, None
            return vectors
        start = time.perf_counter()
        result = self.real.embed(texts)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return result


def real_embedder() -> Embedder:
    """The configured MiniLM (imported late: HF_HUB_OFFLINE must be set before its imports)."""
    from assistant.parts import configured_embedder

    return configured_embedder()


def default_cache() -> Path:
    from assistant.config import load_config

    return load_config().settings.cache_dir / "benchmarks" / "retrieval_scale"


# Building


@dataclass
class BuildStats:
    size: int
    real_records: int
    embed_seconds: float  # embedding the real texts (measured when they were embedded)
    store_seconds: float = 0.0  # add_many over the real part, with those vectors supplied
    derived_records: int = 0
    derived_seconds: float = 0.0  # add_many over the derived part
    index_seconds: float = 0.0  # folding every row into the indices at the end
    db_bytes: int = 0  # the database folder (old versions LanceDB still keeps included)
    live_bytes: int = 0  # the latest version of the records and history tables

    @property
    def ingest_records_per_s(self) -> float:
        """Real records per second: embedding + add_many + their share of the indexing."""
        index_share = self.index_seconds * self.real_records / max(self.size, 1)
        seconds = self.embed_seconds + self.store_seconds + index_share
        return self.real_records / max(seconds, 1e-9)


class VectorCache:
    """Real vectors of the first n memory texts (``real-v*.npy``) and the seconds it took to
    embed them (``real-v*.json``); grown in chunks and saved after each, so an interrupted run
    keeps what it embedded."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"real-v{CORPUS_VERSION}.npy"
        self.info = folder / f"real-v{CORPUS_VERSION}.json"

    def load(self) -> tuple[Vectors, float]:
        if not self.path.exists() or not self.info.exists():
            return np.zeros((0, 0), dtype=np.float32), 0.0
        vectors: Vectors = np.load(self.path).astype(np.float32)
        seconds = float(json.loads(self.info.read_text())["seconds"])
        return vectors, seconds

    def save(self, vectors: Vectors, seconds: float) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp.npy")
        np.save(partial, vectors)
        self.info.write_text(json.dumps({"count": len(vectors), "seconds": seconds}))
        partial.replace(self.path)

    def real_vectors(
        self, texts: Sequence[str], embedder: BenchEmbedder, chunk: int = 5_000
    ) -> tuple[Vectors, float]:
        """Vectors of ``texts`` (the first len(texts) memory texts) and the seconds embedding
        them took, embedding and saving whatever the cache lacks."""
        cached, seconds = self.load()
        have = min(len(cached), len(texts))
        if have < len(texts):
            log(f"embedding {len(texts) - have:,} texts with the real embedder ({have:,} cached)")
        parts = [cached] if len(cached) else []
        for start in range(len(cached), len(texts), chunk):
            began = time.perf_counter()
            parts.append(embedder.embed(texts[start : start + chunk]))
            seconds += time.perf_counter() - began
            cached = np.concatenate(parts)
            parts = [cached]
            self.save(cached, seconds)
            log(f"embedded {len(cached):,}/{len(texts):,} texts, {seconds:.0f} s")
        per_text = seconds / max(len(cached), 1)
        if have == len(texts) and texts:
            # All cached: time the embedder now on a sample (the cached time may have been
            # taken on a busier machine), and check the cache still matches the texts.
            sample = min(len(texts), EMBED_SAMPLE)
            began = time.perf_counter()
            fresh = embedder.embed(texts[:sample])
            per_text = (time.perf_counter() - began) / sample
            if not np.allclose(fresh, cached[:sample], atol=1e-3):
                raise ValueError(f"{self.path} does not match the texts: delete it")
            log(
                f"embedding rate now {1 / per_text:,.0f} texts/s on {sample:,} texts "
                f"(when cached: {len(cached) / max(seconds, 1e-9):,.0f}/s)"
            )
        return cached[: len(texts)], per_text * len(texts)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def build_memory(
    folder: Path,
    size: int,
    embedder: BenchEmbedder,
    vector_cache: VectorCache,
    batch: int = BATCH,
    real_limit: int = REAL_LIMIT,
) -> BuildStats:
    """A memory of ``size`` records in ``folder`` (which must not hold one yet), added through
    ``add_many(merge_duplicates=False)`` in batches of ``batch``."""
    real_count = min(size, real_limit)
    texts = memory_texts(real_count)
    created, importance = record_metadata(size)
    real, embed_seconds = vector_cache.real_vectors(texts, embedder)
    stats = BuildStats(size, real_count, embed_seconds)
    vectors, extra = real, texts
    if size > real_count:
        stats.derived_records = size - real_count
        log(
            f"[{size:,}] above {real_limit:,}: {stats.derived_records:,} DERIVED vectors "
            "(normalised mixes of two real vectors + noise, not embedded)"
        )
        derived, pairs = derive_vectors(real, stats.derived_records)
        vectors = np.concatenate([real, derived])
        extra = [*texts, *derived_texts(texts, pairs)]
    stream = MemoryStream(
        open_database(folder), WriteLock(folder / "memory.lock"), embedder, clock=lambda: NOW
    )
    try:
        with stream.records.bulk(), stream.history.table.bulk():
            start = 0
            while start < size:
                stop = min(start + batch, real_count if start < real_count else size)
                items = _items(extra[start:stop], created[start:stop], importance[start:stop])
                began = time.perf_counter()
                with embedder.supplying(vectors[start:stop]):
                    stream.add_many(items, merge_duplicates=False)
                seconds = time.perf_counter() - began
                if start < real_count:
                    stats.store_seconds += seconds
                else:
                    stats.derived_seconds += seconds
                _progress(size, stop, size, stats.store_seconds + stats.derived_seconds)
                start = stop
            began = time.perf_counter()
        stats.index_seconds = time.perf_counter() - began
        stats.live_bytes = sum(
            int(table.stats()["total_bytes"])
            for table in (stream.records._table, stream.history.table._table)
        )
    finally:
        stream.close()
    stats.db_bytes = folder_bytes(folder)
    return stats


def _items(
    texts: Sequence[str], created: Sequence[datetime], importance: Sequence[int]
) -> list[NewMemory]:
    return [
        NewMemory(text, importance=value, created_at=moment)
        for text, moment, value in zip(texts, created, importance, strict=True)
    ]


def _progress(size: int, done: int, total: int, seconds: float) -> None:
    if done == total or done % 50_000 < BATCH:
        log(f"[{size:,}] {done:,}/{total:,} records, {seconds:.0f} s")


# Scoring: exact over all records (numpy) and naive (pure Python)


@dataclass(frozen=True)
class Snapshot:
    """Every record's id, vector, last access and importance, read back from the table."""

    ids: list[str]
    vectors: Vectors
    last_accessed_us: NDArray[np.int64]
    importance: NDArray[np.float64]


def snapshot(stream: MemoryStream) -> Snapshot:
    rows = stream.records.query(
        where="deleted = false", columns=["id", "vector", "last_accessed_at", "importance"]
    )
    flat = rows.column("vector").combine_chunks().flatten().to_numpy()
    return Snapshot(
        ids=rows.column("id").to_pylist(),
        vectors=flat.reshape(rows.num_rows, -1).astype(np.float32),
        last_accessed_us=rows.column("last_accessed_at").cast(pa.int64()).to_numpy(),
        importance=rows.column("importance").to_numpy().astype(np.float64),
    )


def exact_top_k(
    data: Snapshot,
    query: Vectors,
    now: datetime = NOW,
    k: int = K,
    weights: RetrievalWeights | None = None,
) -> list[str]:
    """The top ``k`` ids by the retrieval formula, each term min-max normalised over all
    records, relevance = cosine."""
    weights = weights or RetrievalWeights()
    scores = (
        weights.recency * min_max(recency(data.last_accessed_us, to_us(now)))
        + weights.importance * min_max(data.importance)
        + weights.relevance * min_max(cosine(query, data.vectors))
    )
    order = np.argsort(-scores, kind="stable")[:k]
    return [data.ids[i] for i in order]


NaiveRow = tuple[str, int, float, list[float]]


def naive_rows(data: Snapshot) -> list[NaiveRow]:
    """The records as plain Python values: (id, last access in µs, importance, vector list)."""
    return [
        (record_id, int(last), float(importance), vector)
        for record_id, last, importance, vector in zip(
            data.ids,
            data.last_accessed_us.tolist(),
            data.importance.tolist(),
            data.vectors.tolist(),
            strict=True,
        )
    ]


def naive_top_k(
    rows: Sequence[NaiveRow],
    query: Sequence[float],
    now: datetime = NOW,
    k: int = K,
    weights: RetrievalWeights | None = None,
) -> list[str]:
    """The same formula, one record at a time in plain Python."""
    weights = weights or RetrievalWeights()
    now_us = to_us(now)
    query_norm = math.sqrt(sum(x * x for x in query))
    recencies: list[float] = []
    importances: list[float] = []
    relevances: list[float] = []
    for _, last_us, importance, vector in rows:
        hours = max(now_us - last_us, 0) / 3_600_000_000
        recencies.append(0.995**hours)
        importances.append(importance)
        dot = 0.0
        norm = 0.0
        for a, b in zip(vector, query, strict=True):
            dot += a * b
            norm += a * a
        relevances.append(dot / max(math.sqrt(norm) * query_norm, 1e-12))

    def normalised(values: list[float]) -> list[float]:
        low, high = min(values), max(values)
        if high - low <= 1e-12:
            return [0.0] * len(values)
        return [(v - low) / (high - low) for v in values]

    scores = [
        weights.recency * r + weights.importance * i + weights.relevance * v
        for r, i, v in zip(
            normalised(recencies), normalised(importances), normalised(relevances), strict=True
        )
    ]
    order = sorted(range(len(rows)), key=lambda index: -scores[index])
    return [rows[index][0] for index in order[:k]]


# Measuring


def timed(action: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def percentile(values: Sequence[float], share: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), share * 100))


@contextmanager
def relevance_mode(stream: MemoryStream, relevance: RelevanceMode) -> Iterator[None]:
    """The stream's default configuration with another relevance term, for a while."""
    default_config = stream.config
    stream.config = dataclasses.replace(default_config, relevance=relevance)
    try:
        yield
    finally:
        stream.config = default_config


def measure(
    stream: MemoryStream,
    embedder: BenchEmbedder,
    asked: Sequence[str],
    naive: bool,
    label: str = "",
) -> dict[str, float | None]:
    """Latency (default config), agreement (cosine config) and, if asked, the naive speedup."""
    stream.retrieve(asked[0], k=K, touch=False)  # warm-up: caches, index files
    latencies = []
    for question in asked:
        _, seconds = timed(lambda q=question: stream.retrieve(q, k=K, touch=False))  # type: ignore[misc]
        latencies.append(seconds * 1000)
    log(f"{label} retrieve p50 {statistics.median(latencies):.1f} ms")

    data = snapshot(stream)
    agreeing = 0
    with relevance_mode(stream, "cosine"):
        for question in asked:
            found = {m.record.id for m in stream.retrieve(question, k=K, touch=False)}
            query = embedder.embed([question])[0]
            agreeing += found == set(exact_top_k(data, query))
    log(f"{label} top-10 agreement {agreeing}/{len(asked)}")

    embed_ms = statistics.median(
        timed(lambda q=q: embedder.embed([q]))[1] * 1000  # type: ignore[misc]
        for q in asked
    )
    log(f"{label} of which embedding the query: p50 {embed_ms:.1f} ms")
    speedups: dict[str, float | None] = {
        "speedup_vs_naive": None,
        "speedup_vs_naive_embedding_included": None,
    }
    if naive:
        speedups = naive_speedups(stream, embedder, data, asked, label)
    return {
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 0.95),
        **speedups,
        "top10_agreement": agreeing / len(asked),
    }


def naive_speedups(
    stream: MemoryStream,
    embedder: BenchEmbedder,
    data: Snapshot,
    asked: Sequence[str],
    label: str = "",
) -> dict[str, float | None]:
    """``retrieve`` against the naive loop, like for like: the paper's formula (cosine
    relevance) on both sides, both handed the same query vector (``speedup_vs_naive``: the
    ranking, which is what the loop does), and both embedding the query themselves
    (``..._embedding_included``: the model's inference, the same on both sides, bounds this
    one)."""
    rows = naive_rows(data)
    sample = asked[: max(5, min(len(asked), 10))]
    embedded = [timed(partial(embedder.embed, [question])) for question in sample]
    embed_ms = [seconds * 1000 for _, seconds in embedded]
    # Each side in a loop of its own, so neither runs on caches the other has just emptied.
    naive_ms = [
        timed(partial(naive_top_k, rows, vectors[0].tolist()))[1] * 1000 for vectors, _ in embedded
    ]
    ranked_ms, whole_ms = [], []
    with relevance_mode(stream, "cosine"):
        for question, (vectors, _) in zip(sample, embedded, strict=True):
            with embedder.supplying(vectors):
                ranked_ms.append(timed(partial(stream.retrieve, question, k=K, touch=False))[1])
        for question in sample:
            whole_ms.append(timed(partial(stream.retrieve, question, k=K, touch=False))[1])
    ranked_ms = [seconds * 1000 for seconds in ranked_ms]
    whole_ms = [seconds * 1000 for seconds in whole_ms]
    naive, ranked = statistics.median(naive_ms), statistics.median(ranked_ms)
    embedding, whole = statistics.median(embed_ms), statistics.median(whole_ms)
    log(
        f"{label} paper's formula, given the query vector: retrieve {ranked:.2f} ms, "
        f"naive loop {naive:.0f} ms ({naive / ranked:.0f}x); embedding the query too "
        f"({embedding:.1f} ms): {whole:.1f} ms vs {embedding + naive:.0f} ms "
        f"({(embedding + naive) / whole:.0f}x; at most {(embedding + naive) / embedding:.0f}x "
        "for any retrieval that embeds the query)"
    )
    return {
        "speedup_vs_naive": naive / ranked,
        "speedup_vs_naive_embedding_included": (embedding + naive) / whole,
    }


def code_key() -> str:
    """Changes to the table's indexing make a cached memory stale: key the cache by it."""
    import hashlib

    import memory.table

    source = Path(memory.table.__file__).read_bytes()
    return hashlib.sha256(source).hexdigest()[:10]


def prepared(
    cache: Path, size: int, embedder: BenchEmbedder, rebuild: bool, real_limit: int = REAL_LIMIT
) -> tuple[Path, BuildStats]:
    """The memory of ``size`` records under ``cache``, built unless a finished one is there."""
    folder = cache / f"memory-v{CORPUS_VERSION}-{code_key()}-{size}"
    done = folder / "build.json"
    if done.exists() and not rebuild:
        log(f"[{size:,}] reusing the memory in {folder}")
        return folder, BuildStats(**json.loads(done.read_text()))
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    stats = build_memory(folder / "data", size, embedder, VectorCache(cache), real_limit=real_limit)
    done.write_text(json.dumps(dataclasses.asdict(stats)))
    return folder, stats


def run(
    sizes: Sequence[int],
    query_count: int,
    cache: Path,
    embedder: Embedder,
    rebuild: bool = False,
    real_limit: int = REAL_LIMIT,
) -> dict[str, dict[str, float | None]]:
    bench = BenchEmbedder(embedder)
    asked = questions(query_count)
    report: dict[str, dict[str, float | None]] = {}
    for size in sizes:
        folder, stats = prepared(cache, size, bench, rebuild, real_limit)
        log(
            f"[{size:,}] built: {stats.real_records:,} real records at "
            f"{stats.ingest_records_per_s:,.0f}/s (embedding {stats.embed_seconds:.0f} s, "
            f"add_many {stats.store_seconds:.0f} s)"
            + (
                f", {stats.derived_records:,} derived at "
                f"{stats.derived_records / max(stats.derived_seconds, 1e-9):,.0f}/s"
                if stats.derived_records
                else ""
            )
            + f", final indexing {stats.index_seconds:.1f} s; on disk "
            + f"{stats.db_bytes / 1e6:,.0f} MB ({stats.live_bytes / 1e6:,.0f} MB in the latest "
            + "version; older versions go at the first fold after they are an hour old)"
        )
        data = folder / "data"
        stream = MemoryStream(
            open_database(data), WriteLock(data / "memory.lock"), bench, clock=lambda: NOW
        )
        try:
            figures = measure(
                stream, bench, asked, naive=size <= NAIVE_MAX_SIZE, label=f"[{size:,}]"
            )
        finally:
            stream.close()
        report[str(size)] = {
            **figures,
            "ingest_records_per_s": stats.ingest_records_per_s,
            "db_mb_per_100k": stats.db_bytes / 1e6 / size * 100_000,
        }
    return report


def table(report: dict[str, dict[str, float | None]], real_limit: int = REAL_LIMIT) -> str:
    def cell(name: str, value: float | None) -> str:
        if value is None:
            return "-"
        if name == "top10_agreement":
            return f"{value:.0%}"
        if name.startswith("speedup_vs_naive"):
            return f"{value:,.0f}x"
        return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"

    lines = ["| records | " + " | ".join(FIGURES) + " |", "|" + " --- |" * (len(FIGURES) + 1)]
    for size, figures in report.items():
        cells = [cell(name, figures[name]) for name in FIGURES]
        lines.append(f"| {int(size):,} | " + " | ".join(cells) + " |")
    if any(int(size) > real_limit for size in report):
        lines.append(
            f"\nAbove {real_limit:,} records the extra vectors are DERIVED (normalised mixes of "
            "two real MiniLM vectors plus noise), not embedded."
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--cache-dir", type=Path, help="where built memories are kept")
    parser.add_argument("--temp", action="store_true", help="build in a temporary folder")
    parser.add_argument("--rebuild", action="store_true", help="ignore cached memories")
    parser.add_argument(
        "--real-limit",
        type=int,
        default=REAL_LIMIT,
        help="embed at most this many texts; derive the rest (default %(default)s)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = real_embedder()
    with tempfile.TemporaryDirectory(prefix="retrieval-scale-") as temp:
        cache = Path(temp) if args.temp else (args.cache_dir or default_cache())
        report = run(args.sizes, args.queries, cache, embedder, args.rebuild, args.real_limit)
    print(json.dumps(report) if args.json else table(report, args.real_limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
