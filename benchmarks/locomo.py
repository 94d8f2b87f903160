"""Retrieval recall of the memory stream on LoCoMo (Maharana et al., ACL 2024), no LLM involved.

    python -m benchmarks.locomo --data ../shared/eval/locomo/locomo-dev.json --k 5 10 20 [--json]

For each conversation of the file a fresh ``MemoryStream`` (real MiniLM embedder, real LanceDB,
in a temporary folder) stores every dialogue turn as one observation, in one ``add_many`` batch
(near-copies are not merged): the text is ``"<speaker>: <text>"``, followed by
``" [shares a photo: <caption>]"`` when the turn carries an image caption; ``created_at`` is the
session's date (``session_N_date_time``, e.g. "1:56 pm on 8 May, 2023", read as UTC); importance
is left unrated (every turn has the same default, so the importance term carries nothing). The
stream's clock stands at the last session's time, as if the questions were asked right after it.

Every question of categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5,
adversarial, has no evidence to find) is asked through ``MemoryStream.retrieve`` (k = the largest
``--k``, ``touch=False``), once per configuration. recall@k of one question = |evidence turns
among the top k| / |evidence turns|; the figures are its mean over questions, per category and
over all of them ("all"). An evidence entry naming several turns ("D8:6; D9:17") counts as
each of them; an id that names no turn is left out (and reported on stderr), and a question left
with no evidence is skipped. Configurations change only the stream's ``MemoryConfig`` and the
retrieval weights, so every conversation is embedded once and shared by all of them:

* ``cosine``: relevance only, cosine similarity of MiniLM vectors;
* ``text``: relevance only, BM25 (LanceDB full-text search);
* ``paper``: Park et al.'s score, weights recency 1, importance 1, relevance 1, cosine relevance;
* ``hybrid``: relevance only, min-max blend of cosine and BM25, half each (the former default);
* ``rrf``: relevance only, reciprocal-rank fusion of the cosine and BM25 rankings;
* ``hybrid+names``: ``contextual`` without the episode context (``context_weight=0``);
* ``hybrid+context``: ``contextual`` without the name matching (``subject_boost=0``);
* ``contextual``: relevance only, ``MemoryConfig()`` as shipped (contextual relevance: hybrid,
  plus query names matched to the records they open, plus each turn's neighbours);
* ``contextual+paper``: ``MemoryConfig()`` with Park et al.'s weights 1, 1, 1;
* ``contextual-candidates``: ``contextual`` scored over a candidate list read from the indices
  (``exact_scoring=False``) instead of over every record;
* ``hybrid+graph``, ``contextual+graph`` (only with ``--graph``): ``hybrid`` and ``contextual``
  with the knowledge graph as one more relevance source (``graph_weight`` 0.5, see
  ``memory.graph.search.GraphRelevance``). The graph is learnt first, turn by turn in order, by
  the configured LLM (the local model unless an endpoint is set); what that took is printed as
  LLM calls and seconds, in all and per 100 turns (``"extraction"`` in the JSON).

``--turns N`` keeps each conversation's first N turns and the questions whose evidence lies in
them; ``--samples`` picks conversations; ``--keep DIR`` keeps each conversation's memory and
graph there and reuses them next time (an interrupted graph goes on where it stopped);
``--batch`` sets the memories per extraction request.

``--utility-weights W ...`` runs, instead of the configurations, the utility sweep of
``benchmarks/locomo_utility.py``: usage simulated on half of each conversation's questions,
recall measured on the other half for each utility weight (0 among them), the weight that
keeps recall chosen; ``--json`` prints its figures, the table a median and p95 per time.

``--configurations NAME ...`` runs only some of them. ``best`` is the configuration with the
highest "all" recall averaged over the requested k. The
human table goes to stdout with the median time of one ``retrieve`` call (the question's
embedding included); progress goes to stderr.
``--json`` prints one JSON object instead: ``{"<configuration>": {"<k>": {"1": r, "2": r, "3": r,
"4": r, "all": r}}, "best": "<configuration>"}`` (a category without questions is ``null``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assistant.config import ConfigError
from assistant.parts import configured_embedder
from memory.database import open_database
from memory.embedder import Embedder
from memory.graph.graph import BATCH, KnowledgeGraph
from memory.graph.search import RETRIEVAL_GRAPH_SEARCH, GraphRelevance
from memory.graph.store import GraphStore
from memory.llm import StructuredLLM
from memory.locking import WriteLock
from memory.scoring import RetrievalWeights
from memory.stream import MemoryConfig, MemoryStream, NewMemory
from models import ModelError

CATEGORIES = ("1", "2", "3", "4")
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
ALL = "all"
DEFAULT_KS = (5, 10, 20)
RELEVANCE_ONLY = RetrievalWeights(recency=0.0, importance=0.0, relevance=1.0)
PAPER = RetrievalWeights(recency=1.0, importance=1.0, relevance=1.0)
GRAPH_WEIGHT = 0.5
# Turns read into the knowledge graph between two progress lines (and saves of its cost).
GRAPH_CHUNK = 10

# Recall per configuration, per k, per category ("1".."4", "all"); None: no such questions.
Results = dict[str, dict[str, dict[str, float | None]]]


class LocomoError(Exception):
    """The data file cannot be read as LoCoMo."""


@dataclass(frozen=True)
class Configuration:
    name: str
    config: MemoryConfig
    weights: RetrievalWeights
    graph: bool = False  # needs the knowledge graph (--graph)


CONFIGURATIONS: tuple[Configuration, ...] = (
    Configuration("cosine", MemoryConfig(relevance="cosine"), RELEVANCE_ONLY),
    Configuration("text", MemoryConfig(relevance="text"), RELEVANCE_ONLY),
    Configuration("paper", MemoryConfig(relevance="cosine"), PAPER),
    Configuration("hybrid", MemoryConfig(relevance="hybrid"), RELEVANCE_ONLY),
    Configuration("rrf", MemoryConfig(relevance="rrf"), RELEVANCE_ONLY),
    Configuration("hybrid+names", MemoryConfig(context_weight=0.0), RELEVANCE_ONLY),
    Configuration("hybrid+context", MemoryConfig(subject_boost=0.0), RELEVANCE_ONLY),
    Configuration("contextual", MemoryConfig(), RELEVANCE_ONLY),
    Configuration("contextual+paper", MemoryConfig(), PAPER),
    Configuration("contextual-candidates", MemoryConfig(exact_scoring=False), RELEVANCE_ONLY),
    Configuration(
        "hybrid+graph",
        MemoryConfig(relevance="hybrid", graph_weight=GRAPH_WEIGHT),
        RELEVANCE_ONLY,
        True,
    ),
    Configuration(
        "contextual+graph", MemoryConfig(graph_weight=GRAPH_WEIGHT), RELEVANCE_ONLY, True
    ),
)


# Reading the data


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    when: datetime
    caption: str | None = None

    def memory_text(self) -> str:
        photo = f" [shares a photo: {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{photo}"


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: str


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    # Evidence ids that name no turn of the conversation (annotation slips), left out.
    unknown_evidence: tuple[str, ...] = ()

    def first(self, turns: int) -> Conversation:
        """Its first ``turns`` turns, with the questions whose evidence lies wholly in them."""
        kept = self.turns[:turns]
        said = {turn.dia_id for turn in kept}
        questions = tuple(q for q in self.questions if set(q.evidence) <= said)
        return replace(self, turns=kept, questions=questions)


MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
SESSION_TIME = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
SESSION_KEY = re.compile(r"session_(\d+)")
EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")


def parse_session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC (LoCoMo gives no zone; UTC is assumed)."""
    match = SESSION_TIME.match(text)
    month = MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise LocomoError(f"cannot read the session time {text!r}")
    hour, minute = int(match.group(1)), int(match.group(2))
    if not 1 <= hour <= 12:
        raise LocomoError(f"cannot read the session time {text!r}")
    hour = hour % 12 + (12 if match.group(3).lower() == "p" else 0)
    try:
        return datetime(int(match.group(6)), month, int(match.group(4)), hour, minute, tzinfo=UTC)
    except ValueError as error:
        raise LocomoError(f"cannot read the session time {text!r}: {error}") from None


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    conversation = sample["conversation"]
    sessions = sorted(
        (int(match.group(1)), key)
        for key in conversation
        if (match := SESSION_KEY.fullmatch(key)) and isinstance(conversation[key], list)
    )
    turns: list[Turn] = []
    for number, key in sessions:
        when = parse_session_time(str(conversation[f"session_{number}_date_time"]))
        for turn in conversation[key]:
            caption = turn.get("blip_caption")
            turns.append(
                Turn(
                    dia_id=str(turn["dia_id"]),
                    speaker=str(turn["speaker"]),
                    text=str(turn.get("text") or ""),
                    when=when,
                    caption=str(caption) if caption else None,
                )
            )
    known = {turn.dia_id for turn in turns}
    questions: list[Question] = []
    unknown: list[str] = []
    for item in sample.get("qa", []):
        category = str(item.get("category"))
        if category not in CATEGORIES:
            continue
        # Some items hold several ids in one string ("D8:6; D9:17").
        named = [
            part
            for entry in item.get("evidence") or []
            for part in EVIDENCE_SEPARATORS.split(str(entry))
            if part
        ]
        unknown.extend(e for e in named if e not in known)
        evidence = tuple(dict.fromkeys(e for e in named if e in known))
        if evidence:
            questions.append(Question(str(item["question"]), evidence, category))
    return Conversation(
        str(sample.get("sample_id", f"sample-{id(sample)}")),
        tuple(turns),
        tuple(questions),
        tuple(unknown),
    )


def load_conversations(path: Path) -> list[Conversation]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise LocomoError(f"cannot read {path}: {error}") from None
    samples = data if isinstance(data, list) else [data]
    try:
        return [parse_conversation(sample) for sample in samples]
    except (KeyError, TypeError, AttributeError) as error:
        raise LocomoError(f"{path} is not in the LoCoMo format: {error!r}") from None


# Scoring


def recall_at(evidence: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    """Share of the evidence turns found among the first k retrieved."""
    wanted = set(evidence)
    return len(wanted & set(retrieved[:k])) / len(wanted) if wanted else 0.0


@dataclass
class Tally:
    """Recall sums and question counts per k and category, and retrieval times."""

    ks: tuple[int, ...]
    sums: dict[int, dict[str, float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, question: Question, retrieved: Sequence[str]) -> None:
        for category in (question.category, ALL):
            self.counts[category] = self.counts.get(category, 0) + 1
            for k in self.ks:
                per_k = self.sums.setdefault(k, {})
                per_k[category] = per_k.get(category, 0.0) + recall_at(
                    question.evidence, retrieved, k
                )

    def means(self) -> dict[str, dict[str, float | None]]:
        return {
            str(k): {
                category: (
                    self.sums[k][category] / self.counts[category]
                    if self.counts.get(category)
                    else None
                )
                for category in (*CATEGORIES, ALL)
            }
            for k in self.ks
        }


# Running


TURNS_FILE = "turns.json"
COST_FILE = "graph-cost.json"


@contextmanager
def conversation_stream(
    conversation: Conversation, embedder: Embedder, folder: Path
) -> Iterator[tuple[MemoryStream, dict[str, str]]]:
    """A stream in ``folder`` holding every turn; yields it with the map record id -> dia_id
    (in turn order). A folder that holds them already (``--keep``) is opened as it is."""
    last = max((turn.when for turn in conversation.turns), default=datetime.now(UTC))
    stream = MemoryStream(
        open_database(folder), WriteLock(folder / "memory.lock"), embedder, clock=lambda: last
    )
    saved = folder / TURNS_FILE
    try:
        if saved.exists():
            yield stream, json.loads(saved.read_text(encoding="utf-8"))
            return
        kept = [turn for turn in conversation.turns if turn.memory_text().strip()]
        records = stream.add_many(
            [NewMemory(turn.memory_text(), created_at=turn.when) for turn in kept],
            merge_duplicates=False,
        )
        dia_ids = {record.id: turn.dia_id for record, turn in zip(records, kept, strict=True)}
        saved.write_text(json.dumps(dia_ids), encoding="utf-8")
        yield stream, dia_ids
    finally:
        stream.close()


# The knowledge graph


@dataclass(frozen=True)
class ExtractionCost:
    """What reading turns into the knowledge graph took, summed over conversations."""

    turns: int = 0  # turns read (a turn whose extraction failed is not counted)
    llm_calls: int = 0
    seconds: float = 0.0
    triplets: int = 0
    replaced: int = 0

    def __add__(self, other: ExtractionCost) -> ExtractionCost:
        return ExtractionCost(
            *(getattr(self, f) + getattr(other, f) for f in ExtractionCost.__dataclass_fields__)
        )

    def per_100_turns(self) -> dict[str, float]:
        scale = 100 / self.turns if self.turns else 0.0
        return {"llm_calls": self.llm_calls * scale, "seconds": self.seconds * scale}


def learn_graph(
    stream: MemoryStream,
    dia_ids: dict[str, str],
    llm: StructuredLLM,
    embedder: Embedder,
    folder: Path,
    batch: int = BATCH,
    progress: bool = False,
) -> tuple[GraphStore, ExtractionCost]:
    """The conversation's turns read into a knowledge graph in ``folder``, in order, and what
    that took. The graph remembers what it has read, so a folder kept from an interrupted run
    goes on where it stopped (its cost so far is kept beside it)."""
    store = GraphStore(open_database(folder), WriteLock(folder / "memory.lock"), embedder)
    saved = folder / COST_FILE
    cost = (
        ExtractionCost(**json.loads(saved.read_text(encoding="utf-8")))
        if saved.exists()
        else ExtractionCost()
    )
    graph = KnowledgeGraph(store, embedder, llm, batch=batch)
    order = {record_id: index for index, record_id in enumerate(dia_ids)}
    records = sorted(stream.get_many(list(dia_ids), embeddings=False), key=lambda r: order[r.id])
    todo = graph.unread(records)
    for start in range(0, len(todo), GRAPH_CHUNK):
        began = time.perf_counter()
        learnt = graph.learn(todo[start : start + GRAPH_CHUNK])
        cost += ExtractionCost(
            learnt.read,
            learnt.llm_calls,
            time.perf_counter() - began,
            learnt.triplets,
            learnt.replaced,
        )
        saved.write_text(json.dumps(asdict(cost)), encoding="utf-8")
        if progress:
            print(
                f"  graph: {min(start + GRAPH_CHUNK, len(todo))}/{len(todo)} turns; so far {cost}",
                file=sys.stderr,
            )
    return store, cost


def run(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    ks: Sequence[int] = DEFAULT_KS,
    configurations: Sequence[Configuration] = CONFIGURATIONS,
    progress: bool = False,
    graph_llm: StructuredLLM | None = None,
    keep: Path | None = None,
    batch: int = BATCH,
) -> tuple[Results, dict[str, float], ExtractionCost | None]:
    """Recall per configuration, k and category, the median seconds per retrieve call, and
    what learning the knowledge graph took (None: no configuration needs it). The graph is
    learnt with ``graph_llm``; ``keep``: the folder to keep each conversation's memory and
    graph in (and to find them in next time) instead of a temporary one."""
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1:
        raise ValueError("k must be at least 1")
    needs_graph = any(c.graph for c in configurations)
    if needs_graph and graph_llm is None:
        raise ValueError("a graph configuration needs an LLM to learn the graph")
    tallies = {c.name: Tally(ks) for c in configurations}
    cost = ExtractionCost() if needs_graph else None
    with tempfile.TemporaryDirectory(prefix="locomo-") as scratch:
        for conversation in conversations:
            started = time.perf_counter()
            name = f"{conversation.sample_id}-{len(conversation.turns)}-turns"
            folder = (keep or Path(scratch)) / name
            with conversation_stream(conversation, embedder, folder) as (stream, dia_ids):
                if progress:
                    print(
                        f"{conversation.sample_id}: {len(dia_ids)} turns stored in "
                        f"{time.perf_counter() - started:.1f} s; "
                        f"{len(conversation.questions)} questions",
                        file=sys.stderr,
                    )
                if needs_graph and graph_llm is not None and cost is not None:
                    store, learnt = learn_graph(
                        stream, dia_ids, graph_llm, embedder, folder, batch, progress
                    )
                    cost += learnt
                    stream.graph = GraphRelevance(store, RETRIEVAL_GRAPH_SEARCH)
                for configuration in configurations:
                    stream.config = configuration.config
                    tally = tallies[configuration.name]
                    for question in conversation.questions:
                        begun = time.perf_counter()
                        found = stream.retrieve(
                            question.text, k=ks[-1], weights=configuration.weights, touch=False
                        )
                        tally.seconds.append(time.perf_counter() - begun)
                        tally.add(question, [dia_ids.get(f.record.id, "") for f in found])
    results = {name: tally.means() for name, tally in tallies.items()}
    timings = {
        name: statistics.median(tally.seconds) if tally.seconds else 0.0
        for name, tally in tallies.items()
    }
    return results, timings, cost


def best_configuration(results: Results) -> str:
    """The configuration with the highest overall recall averaged over the k values."""

    def overall(name: str) -> float:
        values = [per_k[ALL] or 0.0 for per_k in results[name].values()]
        return sum(values) / len(values) if values else 0.0

    return max(results, key=overall)


def to_json(results: Results, cost: ExtractionCost | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {**results, "best": best_configuration(results)}
    if cost is not None:
        report["extraction"] = {**asdict(cost), "per_100_turns": cost.per_100_turns()}
    return report


def format_cost(cost: ExtractionCost) -> str:
    per_100 = cost.per_100_turns()
    return (
        f"knowledge graph: {cost.turns} turns read, {cost.triplets} facts, {cost.replaced} "
        f"replaced; {cost.llm_calls} LLM calls in {cost.seconds:.0f} s = "
        f"{per_100['llm_calls']:.0f} calls and {per_100['seconds']:.0f} s per 100 turns"
    )


def format_table(
    results: Results,
    timings: dict[str, float],
    counts: dict[str, int],
) -> str:
    header = ["configuration", "k"]
    header += [f"{c} {CATEGORY_NAMES[c]} ({counts.get(c, 0)})" for c in CATEGORIES]
    header += [f"all ({counts.get(ALL, 0)})", "ms/query"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for name, per_k in results.items():
        for k, values in per_k.items():
            cells = [name, k]
            cells += ["-" if values[c] is None else f"{values[c]:.3f}" for c in (*CATEGORIES, ALL)]
            cells.append(f"{timings.get(name, 0.0) * 1000:.1f}")
            lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\nbest: {best_configuration(results)}")
    return "\n".join(lines)


def question_counts(conversations: Sequence[Conversation]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for conversation in conversations:
        for question in conversation.questions:
            for category in (question.category, ALL):
                counts[category] = counts.get(category, 0) + 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument(
        "--configurations",
        nargs="+",
        choices=[c.name for c in CONFIGURATIONS],
        help="only these configurations (default: all)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--utility-weights",
        type=float,
        nargs="+",
        help="instead of the configurations, the utility sweep over these weights "
        "(0 among them; benchmarks/locomo_utility.py)",
    )
    parser.add_argument(
        "--graph",
        action="store_true",
        help="also the configurations with knowledge-graph search; the graph is learnt with "
        "the configured LLM (the local model unless an endpoint is set)",
    )
    parser.add_argument(
        "--turns",
        type=int,
        help="only each conversation's first TURNS turns (and the "
        "questions whose evidence lies in them)",
    )
    parser.add_argument("--samples", nargs="+", help="only these conversations (sample ids)")
    parser.add_argument(
        "--keep", type=Path, help="keep each conversation's memory and graph here, and reuse them"
    )
    parser.add_argument(
        "--batch", type=int, default=BATCH, help="turns per extraction request (graph)"
    )
    args = parser.parse_args(argv)
    if min(args.k) < 1 or (args.turns is not None and args.turns < 1) or args.batch < 1:
        parser.error("--k, --turns and --batch must be at least 1")
    if args.utility_weights is not None and 0.0 not in args.utility_weights:
        parser.error("--utility-weights needs 0 among them, to compare with")
    chosen = [
        c
        for c in CONFIGURATIONS
        if (args.graph or not c.graph)
        and (not args.configurations or c.name in args.configurations)
    ]
    try:
        conversations = load_conversations(args.data)
    except LocomoError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.samples:
        conversations = [c for c in conversations if c.sample_id in args.samples]
    if args.turns:
        conversations = [c.first(args.turns) for c in conversations]
    for conversation in conversations:
        if conversation.unknown_evidence:
            print(
                f"{conversation.sample_id}: evidence naming no turn left out: "
                f"{', '.join(conversation.unknown_evidence)}",
                file=sys.stderr,
            )
    try:
        embedder = configured_embedder()
    except (ConfigError, ModelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.utility_weights is not None:
        return _utility_sweep(conversations, embedder, args.k, args.utility_weights, args.json)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    with ExitStack() as resources:
        llm = None
        if any(c.graph for c in chosen):
            from assistant.config import load_config
            from assistant.llm.runtime import LLMRuntime

            llm = resources.enter_context(LLMRuntime(load_config().settings))
        results, timings, cost = run(
            conversations, embedder, args.k, chosen, True, llm, args.keep, args.batch
        )
    if args.json:
        print(json.dumps(to_json(results, cost)))
    else:
        print(format_table(results, timings, question_counts(conversations)))
        if cost is not None:
            print(format_cost(cost))
    return 0


def _utility_sweep(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    ks: Sequence[int],
    weights: Sequence[float],
    as_json: bool,
) -> int:
    # Imported here: the sweep module builds on this one.
    from benchmarks import locomo_utility

    runs = locomo_utility.sweep(conversations, embedder, ks, list(dict.fromkeys(weights)), True)
    if as_json:
        print(json.dumps(locomo_utility.to_json(runs)))
    else:
        print(locomo_utility.format_table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
