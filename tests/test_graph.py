"""The knowledge graph: extraction, entities, replacement and search, on real LanceDB with the
real embedder; a scripted LLM drives the control flow (the real local model is in
test_graph_real.py)."""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from assistant.llm.client import Endpoint, LLMClient
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from memory.archival import ArchivalStore
from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.graph import graph as graph_module
from memory.graph.extract import EXTRACT, OUTDATED, extract, extraction_schema
from memory.graph.graph import REPLACEMENT_CANDIDATES, GraphLearner, KnowledgeGraph
from memory.graph.search import GraphRelevance, GraphSearchConfig, episode_score, graph_search
from memory.graph.store import GraphStore, Triplet
from memory.locking import WriteLock
from memory.scoring import RetrievalWeights
from memory.stream import MemoryConfig, MemoryStream
from tests.helpers.fake_openai import scripted_endpoint
from tests.memory_helpers import Clock, ScriptedLLM, store_fact


@pytest.fixture
def store(graph_store: GraphStore) -> GraphStore:
    return graph_store


class GraphLLM(ScriptedLLM):
    """The scripted model, answering each kind of question from its own script: extraction,
    replacement, and whether two names are one thing (no by default)."""

    def __init__(
        self,
        extractions: Sequence[Any],
        replacements: Sequence[Any] = (),
        same: Any = None,
    ) -> None:
        super().__init__(self._route)
        self.scripts = {
            EXTRACT: ScriptedLLM(*extractions),
            OUTDATED: ScriptedLLM(*(replacements or [{"outdated": []}])),
        }
        self.same = ScriptedLLM(same or {"same": False})

    def _route(self, messages: Sequence[dict[str, str]]) -> dict[str, Any]:
        task = messages[-1]["content"].split("\n", 1)[0]
        script = self.scripts.get(task, self.same)
        return script.complete_json(messages, {})

    def asked(self, task: str) -> list[str]:
        """The questions (last message) of one task, in order."""
        return [m[-1]["content"] for m in self.calls if m[-1]["content"].startswith(task)]


def facts(*triplets: tuple[int, str, str, str]) -> dict[str, Any]:
    return {
        "triplets": [
            {"memory": m, "subject": s, "relation": r, "object": o, "certain": True}
            for m, s, r, o in triplets
        ]
    }


def replaced(*pairs: tuple[int, str]) -> dict[str, Any]:
    return {"outdated": [{"known": known, "new": new} for known, new in pairs]}


def current_texts(store: GraphStore, name: str) -> set[str]:
    entity = next(e for e in store.all_entities()[0] if e.name == name)
    return {t.text for t in store.triplets_about([entity.id], current_only=True)}


def test_facts_are_learnt_in_batches_and_linked_to_their_memories(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    said = [
        stream.add("User: My sister Aya lives in Parma and works as a nurse.", source="user"),
        stream.add("User: I had pasta for lunch.", source="user"),
        stream.add("User: Aya is getting married in June.", source="user"),
    ]
    llm = GraphLLM(
        [
            facts(
                (1, "Aya", "is sister of", "user"),
                (1, "Aya", "lives in", "Parma"),
                (1, "Aya", "works as", "nurse"),
                (1, "user", "said", "hello"),  # about the talk: left out
                (3, "Aya", "is getting married in", "June"),
            )
        ],
        [],
    )
    graph = KnowledgeGraph(store, embedder, llm, batch=3)
    learnt = graph.learn(said)
    assert (learnt.read, learnt.triplets, learnt.replaced) == (3, 4, 0)
    # One extraction for the batch and no other question: the wedding (third memory) is about
    # Aya, known from the first, but no known fact about her is about the same aspect, so it
    # cannot replace one. (The names are far apart: no question about entities.)
    assert learnt.llm_calls == 1 and len(llm.calls) == 1
    assert "1. User: My sister Aya" in llm.asked(EXTRACT)[0]
    assert current_texts(store, "Aya") == {
        "Aya is sister of user",
        "Aya lives in Parma",
        "Aya works as nurse",
        "Aya is getting married in June",
    }
    triplets = store.triplets_about([e.id for e in store.all_entities()[0]])
    by_text = {t.text: t for t in triplets}
    assert by_text["Aya lives in Parma"].episodes == (said[0].id,)
    assert by_text["Aya is getting married in June"].episodes == (said[2].id,)
    # The lunch memory gave nothing and is not read again; nothing is asked a second time.
    assert store.episode_sizes([r.id for r in said]) == {
        said[0].id: 3,
        said[1].id: 0,
        said[2].id: 1,
    }
    assert graph.unread(said) == [] and graph.learn(said).llm_calls == 0


def test_a_changed_fact_replaces_the_old_one_which_keeps_its_valid_until(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder, clock: Clock
) -> None:
    parma = stream.add("User: Aya lives in Parma.", source="user")
    clock.advance(days=30)
    lugano = stream.add("User: Aya moved to Lugano last week.", source="user")
    llm = GraphLLM(
        [facts((1, "Aya", "lives in", "Parma")), facts((1, "Aya", "lives in", "Lugano"))],
        [replaced((1, "a"))],
    )
    graph = KnowledgeGraph(store, embedder, llm, batch=1)
    assert graph.learn([parma, lugano]).replaced == 1
    assert "1. Aya lives in Parma" in llm.asked(OUTDATED)[0]
    assert current_texts(store, "Aya") == {"Aya lives in Lugano"}
    history = {t.text: t for t in store.triplets_about([e.id for e in store.all_entities()[0]])}
    old, new = history["Aya lives in Parma"], history["Aya lives in Lugano"]
    # It stopped holding when the move happened ("last week", the memory's event time), not
    # when it was said.
    assert lugano.event_time is not None and lugano.event_time < lugano.created_at
    assert old.valid_from == parma.created_at and old.valid_until == lugano.event_time
    assert old.replaced_by == new.id and new.current
    # Both come back from a search; the fact that holds now first, the past one marked.
    result = graph_search(store, "Where does Aya live?")
    texts = [t.describe() for t in result.triplets]
    assert texts[0] == "Aya lives in Lugano"
    assert "Aya lives in Parma (until" in " ".join(texts)


def test_i_in_a_users_memory_is_the_user(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder, clock: Clock
) -> None:
    """Small models write "I" where the rules ask for "user": it is the same person, so the
    move meets the old fact."""
    bremen = stream.add("User: I live in Bremen.", source="user")
    clock.advance(days=30)
    minden = stream.add("User: I moved to Minden.", source="user")
    said = stream.add("Assistant: I speak Portuguese too.", source="assistant")
    llm = GraphLLM(
        [
            facts((1, "user", "lives in", "Bremen")),
            facts((1, "I", "moved to", "Minden")),
            facts((1, "I", "speaks", "Portuguese")),
        ],
        [replaced((1, "a"))],
    )
    graph = KnowledgeGraph(store, embedder, llm, batch=1)
    assert graph.learn([bremen, minden, said]).replaced == 1
    assert current_texts(store, "user") == {"user moved to Minden"}
    assert current_texts(store, "assistant") == {"assistant speaks Portuguese"}
    assert not any(e.name == "I" for e in store.all_entities()[0])


def test_a_fact_stays_the_persons_whose_sentence_states_it() -> None:
    """The 1.5B model gave "Hi, I'm Malin. My brother Lars lives in Valletta and works as a
    nurse." as (Malin, lives in, Valletta) and (Malin, works as, nurse): a person's fact is
    kept only from a sentence that names them (or, after one that did, says "he" or "she");
    the speaker's, from one that is not about someone they name."""
    said = "User: Hi, I'm Malin. My brother Lars lives in Valletta and works as a nurse."
    llm = ScriptedLLM(
        facts(
            (1, "Malin", "lives in", "Valletta"),
            (1, "user", "works as", "nurse"),
            (1, "user", "has brother", "Lars"),
            (1, "Lars", "lives in", "Valletta"),
            (1, "Lars", "works as", "nurse"),
            (1, "user", "is named", "Malin"),
            (1, "user", "retired", "Lars"),  # Lars is named, but this is no kin relation
        )
    )
    kept = extract(llm, [said])
    assert kept is not None
    assert [(t.subject, t.relation, t.object) for t in kept] == [
        ("user", "has brother", "Lars"),
        ("Lars", "lives in", "Valletta"),
        ("Lars", "works as", "nurse"),
        ("user", "is named", "Malin"),
    ]
    told = "Clemence: My sister Aya moved to Lyon. She teaches piano. I went hiking today."
    llm = ScriptedLLM(
        facts(
            (1, "Aya", "teaches", "piano"),  # "she", after the sentence that named Aya
            (1, "Clemence", "went", "hiking"),  # the speaker, named before the colon
            (1, "Clemence", "moved to", "Lyon"),
            (1, "weather", "was", "hiking"),  # a thing, not someone: left to the other checks
        )
    )
    kept = extract(llm, [told])
    assert kept is not None
    assert [(t.subject, t.object) for t in kept] == [
        ("Aya", "piano"),
        ("Clemence", "hiking"),
        ("weather", "hiking"),
    ]


def test_a_fact_said_again_is_one_triplet_with_two_episodes(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    first = stream.add("User: Aya loves jazz.", source="user")
    again = stream.add("User: We went to a concert on Friday, since Aya loves jazz.", source="user")
    llm = GraphLLM([facts((1, "Aya", "loves", "jazz")), facts((1, "aya", "loves", "Jazz"))])
    graph = KnowledgeGraph(store, embedder, llm, batch=1)
    assert graph.learn([first, again]).triplets == 1
    [triplet] = store.triplets_about([e.id for e in store.all_entities()[0]])
    assert triplet.episodes == (first.id, again.id)


@pytest.mark.parametrize(
    "reply",
    [
        RuntimeError("the server is down"),
        {},
        {"triplets": "Aya lives in Parma"},
        {"triplets": [{"memory": 7, "subject": "Aya", "relation": "is", "object": "x"}]},
        {"triplets": [{"memory": 1, "subject": "Aya", "relation": 3, "object": "x"}]},
        {"triplets": [None]},
    ],
)
def test_a_broken_or_empty_extraction_changes_nothing(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder, reply: Any
) -> None:
    said = stream.add("User: Aya lives in Parma.", source="user")
    graph = KnowledgeGraph(store, embedder, GraphLLM([reply]))
    assert graph.learn([said]).read == 0
    assert store.all_entities()[0] == [] and store.episode_sizes([said.id]) == {}
    # Left unread, so the next pass tries again.
    assert graph.unread([said]) == [said]


@pytest.mark.parametrize(
    "reply", [RuntimeError("timeout"), {"outdated": [{"known": 9, "new": "a"}]}, {"x": 1}]
)
def test_a_broken_replacement_answer_keeps_both_facts(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder, reply: Any
) -> None:
    parma = stream.add("User: Aya lives in Parma.", source="user")
    lugano = stream.add("User: Aya moved to Lugano.", source="user")
    llm = GraphLLM(
        [facts((1, "Aya", "lives in", "Parma")), facts((1, "Aya", "lives in", "Lugano"))], [reply]
    )
    KnowledgeGraph(store, embedder, llm, batch=1).learn([parma, lugano])
    assert current_texts(store, "Aya") == {"Aya lives in Parma", "Aya lives in Lugano"}


def test_names_of_one_thing_become_one_entity_with_aliases(
    store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    asked: list[str] = []

    def same(messages: Sequence[dict[str, str]]) -> dict[str, Any]:
        question = messages[-1]["content"]
        asked.append(question)
        return {"same": '"Ana Silva"' in question}

    graph = KnowledgeGraph(store, embedder, ScriptedLLM(same))
    ana = graph.resolve("Ana")
    assert graph.resolve("ana") == ana and graph.resolve("the Ana") == ana  # no LLM needed
    assert asked == []
    nurse = graph.resolve("nurse")
    assert graph.resolve("a nurse").id == nurse.id  # an article does not count
    # Close names go to the LLM: "Ana Silva" is Ana (cosine 0.64), "Lisbon" is not Porto (0.69).
    assert graph.resolve("Ana Silva").id == ana.id
    porto = graph.resolve("Porto")
    assert graph.resolve("Lisbon").id != porto.id
    assert any('New name: "Ana Silva"' in q for q in asked)
    assert any('New name: "Lisbon"' in q for q in asked)
    # Far names do not: "Tiago" is nothing like any entity.
    before = len(asked)
    graph.resolve("Tiago")
    assert len(asked) == before
    merged = next(e for e in store.all_entities()[0] if e.id == ana.id)
    assert merged.aliases == ("Ana Silva",) and graph.resolve("ANA SILVA").id == ana.id


def test_no_answer_on_a_name_makes_a_new_entity(
    store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    graph = KnowledgeGraph(store, embedder, ScriptedLLM(RuntimeError("down")))
    aya = graph.resolve("Aya")
    assert graph.resolve("Aya Silva").id != aya.id


def test_the_episode_score_is_the_papers_formula() -> None:
    assert episode_score(2, 4) == pytest.approx(2 / 4 * math.log(4))  # 0.693
    assert episode_score(3, 3) == pytest.approx(math.log(3))  # 1.099
    assert episode_score(1, 1) == 0.0 and episode_score(0, 0) == 0.0
    assert episode_score(1, 10) == pytest.approx(0.1 * math.log(10))  # 0.230


def chain(store: GraphStore, names: Sequence[str], episodes: Sequence[str]) -> list[Triplet]:
    """A path of facts name0 -knows-> name1 -knows-> name2 …, each from its own memory."""
    entities = [store.add_entity(name) for name in names]
    triplets = [
        Triplet(
            id=f"t{i}",
            subject=a.id,
            relation="knows",
            object=b.id,
            subject_name=a.name,
            object_name=b.name,
            episodes=(episodes[i],),
            valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        )
        for i, (a, b) in enumerate(itertools.pairwise(entities))
    ]
    store.add_triplets(triplets)
    store.add_episodes({episode: [f"t{i}"] for i, episode in enumerate(episodes)})
    return triplets


def test_search_expands_breadth_first_within_depth_and_width(
    store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    names = ["Aya", "Bruno", "Carla", "Duarte", "Elisa", "Filipe"]
    chain(store, names, [f"m{i}" for i in range(5)])

    def found(depth: int, width: int = 3) -> list[str]:
        config = GraphSearchConfig(k=1, depth=depth, width=width)
        result = graph_search(store, "Who does Aya know?", config)
        return sorted(t.id for t in result.triplets)

    assert found(0) == ["t0"]  # the nearest triplet only
    assert found(1) == ["t0", "t1"]  # Bruno's other fact
    assert found(2) == ["t0", "t1", "t2"]
    assert found(10) == ["t0", "t1", "t2", "t3", "t4"]  # the whole path, and no further

    # Width: of an entity's incident facts, only the `width` nearest the query are taken.
    hub = store.all_entities()[0][1]  # Bruno
    extra = [
        Triplet(
            id=f"x{i}",
            subject=hub.id,
            relation="plays",
            object=store.add_entity(game).id,
            subject_name=hub.name,
            object_name=game,
            episodes=("m-games",),
            valid_from=store.triplets_about([hub.id])[0].valid_from,
        )
        for i, game in enumerate(["chess", "tennis", "football"])
    ]
    store.add_triplets(extra)
    config = GraphSearchConfig(k=1, depth=1, width=1)
    result = graph_search(store, "Who does Aya know?", config)
    assert len(result.triplets) == 2  # t0, then one incident fact per entity of it


def test_episodes_are_ranked_by_the_share_of_their_facts_that_were_found(
    store: GraphStore, embedder: OnnxSentenceEmbedder, stream: MemoryStream
) -> None:
    # m-rich gave three facts about Aya; m-thin gave one about Aya and five about the weather.
    llm = GraphLLM(
        [
            facts(
                (1, "Aya", "lives in", "Parma"),
                (1, "Aya", "works as", "nurse"),
                (1, "Aya", "loves", "jazz"),
                (2, "Aya", "has", "cat"),
                (2, "weather", "was", "rainy"),
                (2, "rain", "fell on", "Monday"),
                (2, "wind", "blew from", "north"),
                (2, "sky", "was", "grey"),
                (2, "sea", "was", "rough"),
            )
        ],
    )
    rich = stream.add("User: Aya lives in Parma, is a nurse and loves jazz.", source="user")
    thin = stream.add(
        "User: Aya has a cat. Rainy Monday, north wind, grey sky, rough sea.", source="user"
    )
    KnowledgeGraph(store, embedder, llm, batch=2).learn([rich, thin])
    config = GraphSearchConfig(k=4, depth=1, width=5)
    result = graph_search(store, "Tell me about Aya", config)
    scores = {e.record_id: e for e in result.episodes}
    assert result.episodes[0].record_id == rich.id
    assert scores[rich.id].size == 3 and scores[thin.id].size == 6
    assert scores[rich.id].score == pytest.approx(
        episode_score(scores[rich.id].found, 3)
    ) and scores[thin.id].score == pytest.approx(episode_score(scores[thin.id].found, 6))


def test_one_memory_per_request_leaves_the_memory_number_out_of_the_schema() -> None:
    one = extraction_schema(1)["properties"]["triplets"]["items"]
    two = extraction_schema(2)["properties"]["triplets"]["items"]
    assert "memory" not in one["properties"] and "memory" not in one["required"]
    assert two["properties"]["memory"]["enum"] == [1, 2]


def test_an_older_memory_read_late_does_not_retire_a_newer_fact(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder, clock: Clock
) -> None:
    parma = stream.add("User: Aya lives in Parma.", source="user")
    clock.advance(days=30)
    lugano = stream.add("User: Aya lives in Lugano.", source="user")
    llm = GraphLLM(
        [
            {
                "triplets": [
                    {"subject": "Aya", "relation": "lives in", "object": "Lugano", "certain": True}
                ]
            },
            {
                "triplets": [
                    {"subject": "Aya", "relation": "lives in", "object": "Parma", "certain": True}
                ]
            },
        ],
        [replaced((1, "a"))],
    )
    graph = KnowledgeGraph(store, embedder, llm)
    graph.learn([lugano])
    assert graph.learn([parma]).replaced == 0  # the model said so; the dates say no
    assert current_texts(store, "Aya") == {"Aya lives in Lugano", "Aya lives in Parma"}


def test_only_the_known_facts_nearest_the_new_ones_are_asked_about(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    places = "Lagos Faro Evora Tavira Elvas Leiria Viseu Guarda Beja Tomar Sintra Cascais "
    places += "Setubal Obidos Nazare"
    said = stream.add(f"User: Aya lives in Guimaraes and has lived near {places}.", source="user")
    moved = stream.add("User: Aya moved to Lamego.", source="user")
    llm = GraphLLM(
        [
            facts(
                *[(1, "Aya", "lives near", town) for town in places.split()],
                (1, "Aya", "lives in", "Guimaraes"),
            ),
            facts((1, "Aya", "lives in", "Lamego")),
        ],
        [replaced((REPLACEMENT_CANDIDATES, "a"))],
    )
    graph = KnowledgeGraph(store, embedder, llm, batch=1)
    graph.learn([said])
    graph.learn([moved])
    [asked] = llm.asked(OUTDATED)
    listed = [line for line in asked.split("\n") if line[:1].isdigit()]
    assert len(listed) == REPLACEMENT_CANDIDATES
    assert any("Aya lives in Guimaraes" in line for line in listed)


def test_facts_about_another_aspect_are_not_asked_about(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    """Replacement needs the same aspect: a move is never put beside hobbies or a job."""
    said = stream.add("User: Aya is a nurse who loves chess and jazz.", source="user")
    moved = stream.add("User: Aya moved to Lugano.", source="user")
    llm = GraphLLM(
        [
            facts(
                (1, "Aya", "works as", "nurse"),
                (1, "Aya", "loves", "chess"),
                (1, "Aya", "loves", "jazz"),
            ),
            facts((1, "Aya", "lives in", "Lugano")),
        ],
        [],
    )
    graph = KnowledgeGraph(store, embedder, llm, batch=1)
    graph.learn([said])
    assert graph.learn([moved]).llm_calls == 1  # the extraction only
    assert llm.asked(OUTDATED) == []
    assert current_texts(store, "Aya") == {
        "Aya works as nurse",
        "Aya loves chess",
        "Aya loves jazz",
        "Aya lives in Lugano",
    }
    known = store.triplets_about([store.entity_named("Aya").id], current_only=True)  # type: ignore[union-attr]
    job = next(t for t in known if t.relation == "works as")
    new_job = replace(job, id="new", relation="works at", object="x", object_name="hospital")
    assert graph.same_aspect(known, [new_job]) == [job]


def test_a_fact_whose_object_the_memory_does_not_name_is_not_kept(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    """The 1.5B model filled slots with the instructions' example city and with "unknown"."""
    said = stream.add("Clemence: I went to the choir rehearsal; I'm a counsellor.")
    llm = GraphLLM(
        [
            facts(
                (1, "Clemence", "lives in", "Parma"),
                (1, "Clemence", "lives in", "unknown"),
                (1, "Clemence", "went to", "a choir rehearsal"),
                (1, "Clemence", "works as", "counsellor"),
            )
        ]
    )
    KnowledgeGraph(store, embedder, llm, batch=1).learn([said])
    assert current_texts(store, "Clemence") == {
        "Clemence went to a choir rehearsal",
        "Clemence works as counsellor",
    }
    assert store.entity_named("Parma") is None and store.entity_named("unknown") is None


def test_the_learner_reads_the_newest_page_then_walks_back_to_older_unread_memories(
    stream: MemoryStream,
    store: GraphStore,
    embedder: OnnxSentenceEmbedder,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(graph_module, "RECENT", 3)
    said = []
    for n in range(7):
        said.append(stream.add(f"User: Fact number {n} about Aya.", source="user"))
        clock.advance(minutes=1)
    llm = GraphLLM([{"triplets": []}])
    graph = KnowledgeGraph(store, embedder, llm)
    learner = GraphLearner(graph, stream, interval_s=3600)
    try:
        read: list[set[str]] = []
        for _ in range(4):
            learner.poke()
            assert learner.wait_idle(30)
            read.append(store.read_episodes([r.id for r in said]))
        ids = [r.id for r in said]
        assert read[0] == set(ids[4:])  # the newest page first
        assert read[1] == set(ids[1:])  # then the page before it
        assert read[2] == set(ids) == read[3]  # then the rest; then nothing more to read
    finally:
        learner.close()


def test_closing_abandons_an_extraction_in_flight_and_leaves_its_memory_unread(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    """A shutdown does not wait for the background server to finish writing (half a minute
    for one extraction on a small machine): the request is dropped, the memory read next time."""
    said = stream.add("User: My sister Aya lives in Parma.", source="user")
    slow = json.dumps(facts(*[(0, "Aya", "lives in", "Parma")] * 20))
    with scripted_endpoint("slow_stream", slow) as (url, endpoint):
        gate = ForegroundGate()
        llm = BackgroundLLM(LLMClient(Endpoint(url, "scripted")), gate)
        learner = GraphLearner(KnowledgeGraph(store, embedder, llm), stream, interval_s=3600)
        learner.poke()
        deadline = time.monotonic() + 10
        while not endpoint.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert endpoint.requests, "the extraction was sent"
        started = time.monotonic()
        gate.close()
        learner.close()
        assert time.monotonic() - started < 3
    assert store.read_episodes([said.id]) == set()
    assert store.all_entities()[0] == []


@pytest.fixture
def archival(tmp_path: Path, embedder: OnnxSentenceEmbedder, clock: Clock) -> ArchivalStore:
    data = tmp_path / "data"
    return ArchivalStore(open_database(data), WriteLock(data / "memory.lock"), embedder, clock)


def test_a_documents_pieces_are_learnt_in_order_and_linked_to_the_facts(
    store: GraphStore, archival: ArchivalStore, embedder: OnnxSentenceEmbedder
) -> None:
    first = "Aya Silva joined the Parma city orchestra in 2019 as a cellist. " * 6
    second = "In 2024 Aya Silva left the orchestra and moved to Lugano to teach music. " * 6
    ids = archival.insert(f"{first.strip()}\n\n{second.strip()}", "import", "aya.md")
    chunks = archival.list_chunks().items
    assert [c.id for c in chunks] == ids and len(ids) >= 2 and chunks[0].title == "aya.md"
    llm = GraphLLM(
        [
            facts((1, "Aya Silva", "works as", "cellist"), (1, "Aya Silva", "lives in", "Parma")),
            *([facts((1, "Aya Silva", "lives in", "Lugano"))] * (len(ids) - 1)),
        ],
        [replaced((1, "a"))],
    )
    graph = KnowledgeGraph(store, embedder, llm)
    assert graph.learn(chunks).read == len(ids)
    assert graph.unread(chunks) == []
    assert "Aya Silva joined" in llm.asked(EXTRACT)[0]  # the document's first piece first
    facts_now = {t.text: t for t in store.triplets_about([store.entity_named("Aya Silva").id])}  # type: ignore[union-attr]
    assert facts_now["Aya Silva works as cellist"].episodes == (ids[0],)
    assert not facts_now["Aya Silva lives in Parma"].current
    assert facts_now["Aya Silva lives in Lugano"].current
    assert set(facts_now["Aya Silva lives in Lugano"].episodes) == set(ids[1:])
    assert (store.read_count(documents=True), store.read_count()) == (len(ids), 0)


def test_the_learner_reads_every_memory_before_any_document(
    stream: MemoryStream,
    store: GraphStore,
    archival: ArchivalStore,
    embedder: OnnxSentenceEmbedder,
) -> None:
    said = stream.add("User: My sister Aya lives in Parma.", source="user")
    [piece] = archival.insert("Parma is a city in the north of Italy.", "import", "parma.md")
    llm = GraphLLM([{"triplets": []}])
    learner = GraphLearner(KnowledgeGraph(store, embedder, llm), stream, archival, 3600)
    try:
        read: list[set[str]] = []
        for _ in range(3):
            learner.poke()
            assert learner.wait_idle(30)
            read.append(store.read_episodes([said.id, piece]))
        assert read == [{said.id}, {said.id, piece}, {said.id, piece}]
    finally:
        learner.close()


@pytest.mark.parametrize("exact", [True, False])
def test_graph_search_is_a_relevance_source_of_the_memory_retrieval(
    stream: MemoryStream, store: GraphStore, exact: bool
) -> None:
    """The memory behind the fact the graph finds rises to the top, in both scoring modes; with
    graph_weight 0 the graph changes nothing."""
    behind = stream.add("User: she just got the keys to a flat by the river Douro.", source="user")
    for text in [
        "User: Aya's cat is called Momo.",
        "User: Where do people in Aya's office eat lunch?",
        "User: Aya said the weather in Parma is lovely.",
        "User: I should call Aya this weekend.",
    ]:
        stream.add(text, source="user")
    store_fact(store, "Aya", "lives in", "Parma", (behind.id,))
    store_fact(store, "Aya", "owns", "cat Momo", ("elsewhere",))
    question = "Which city does Aya live in?"
    only_relevance = RetrievalWeights(recency=0.0, importance=0.0, relevance=1.0)

    def top(weight: float) -> list[str]:
        stream.config = MemoryConfig(graph_weight=weight, exact_scoring=exact)
        found = stream.retrieve(question, k=5, weights=only_relevance, touch=False)
        return [f.record.id for f in found]

    stream.graph = GraphRelevance(store, GraphSearchConfig(episodes=10))
    assert top(0.0)[0] != behind.id  # by words and meaning alone, another memory leads
    assert top(1.0)[0] == behind.id
    stream.graph = None
    assert top(1.0)[0] != behind.id


def test_a_failing_graph_source_leaves_retrieval_as_it_was(stream: MemoryStream) -> None:
    stream.add("User: Aya lives in Parma.", source="user")

    def broken(query: str, vector: Any) -> dict[str, float]:
        raise OSError("graph table unreadable")

    stream.config = MemoryConfig(graph_weight=1.0)
    stream.graph = broken
    [found] = stream.retrieve("Where does Aya live?", k=1)
    assert found.record.text == "User: Aya lives in Parma."


def test_a_stop_during_extraction_leaves_the_memory_unread(
    stream: MemoryStream, store: GraphStore, embedder: OnnxSentenceEmbedder
) -> None:
    said = stream.add("User: Aya lives in Parma.", source="user")
    stop = threading.Event()

    def extraction(messages: Sequence[dict[str, str]]) -> dict[str, Any]:
        stop.set()  # the service closes while the model is answering
        return facts((1, "Aya", "lives in", "Parma"))

    llm = GraphLLM([extraction])
    graph = KnowledgeGraph(store, embedder, llm)
    assert graph.learn([said], stop).read == 0
    assert llm.asked(OUTDATED) == [] and graph.unread([said]) == [said]
    assert store.triplets_about([e.id for e in store.all_entities()[0]]) == []
