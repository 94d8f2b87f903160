"""Utility that learns: memories that helped rise, those that misled fall, within bounds, and
retrieval ranks by it. Real LanceDB and embedder; a scripted model for the agent's and a
task's control flow."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.corrections import corrects
from assistant.agent.events import HeartbeatTick, UserText
from assistant.agent.feedback import content_words, used_in
from assistant.agent.instructions import instructions
from assistant.agent.tools import Stores
from assistant.agent.turn import AgentConfig
from assistant.protocol.memory import MemoryDelete, MemoryEdit, MemoryUndo
from assistant.service.desks.memory import MemoryDesk
from assistant.tasks.reminders import ReminderStore
from assistant.tasks.toolbox import Workspace
from memory.embedder import OnnxSentenceEmbedder
from memory.scoring import RetrievalWeights, combined_score
from memory.stream import MemoryConfig, MemoryStream, NewMemory
from tests.agent_helpers import ScriptedStream, say
from tests.memory_helpers import Clock, open_stream
from tests.task_helpers import NOW, ScriptedSteps, run_task, step

SISTER = "User: My sister Brigida lives in Parma."
NURSE = "User: My sister Brigida works as a nurse."
QUESTION = "Where does my sister Brigida live?"


def utility(stream: MemoryStream, record_id: str) -> float:
    record = stream.get(record_id)
    assert record is not None
    return record.utility


# The memory: bounded steps, kept, and a fourth term of the score


def test_utility_rises_falls_and_stays_within_its_bound(
    tmp_path: Path, stream: MemoryStream, embedder: OnnxSentenceEmbedder
) -> None:
    config = stream.config
    record = stream.add("Use the blue folder for taxes.")
    stream.adjust_utility([record.id], helped=True)
    assert utility(stream, record.id) == config.utility_gain == 1.0
    stream.adjust_utility([record.id, record.id], helped=False)  # one verdict, not two
    assert utility(stream, record.id) == 1.0 - config.utility_loss
    for _ in range(20):
        stream.adjust_utility([record.id], helped=True)
    assert utility(stream, record.id) == config.utility_bound
    for _ in range(20):
        stream.adjust_utility([record.id], helped=False)
    assert utility(stream, record.id) == -config.utility_bound
    stream.adjust_utility(["no-such-memory"], helped=True)  # gone meanwhile: nothing to do
    reopened = open_stream(tmp_path / "data", embedder)
    try:
        assert utility(reopened, record.id) == -config.utility_bound
        listed = reopened.list_memories(sort="utility", descending=False).items
        assert listed[0].id == record.id and listed[0].utility == -config.utility_bound
    finally:
        reopened.close()


def test_the_score_adds_utility_on_its_fixed_scale() -> None:
    rec = np.array([1.0, 0.0])
    imp = np.array([5.0, 5.0])
    rel = np.array([0.2, 0.4])
    weights = RetrievalWeights(recency=1.0, importance=1.0, relevance=1.0, utility=0.5)
    assert combined_score(rec, imp, rel, weights) == pytest.approx([1.0, 1.0])
    # -5 and +2.5 over the bound 5: -1 and 0.5, whatever the other records hold.
    assert combined_score(
        rec, imp, rel, weights, np.array([-5.0, 2.5]), bound=5.0
    ) == pytest.approx([1.0 - 0.5, 1.0 + 0.25])
    assert combined_score(
        rec, imp, rel, weights, np.array([-50.0, 0.0]), bound=5.0
    ) == pytest.approx([0.5, 1.0])


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "candidates"])
def test_of_two_equally_relevant_memories_the_more_useful_ranks_first(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, clock: Clock, exact: bool
) -> None:
    # Cosine relevance: a LanceDB update moves the row out of the full-text index until the
    # next fold, and its BM25 score changes meanwhile (as a retrieval's touch does); the
    # memories must stay equally relevant here.
    config = MemoryConfig(relevance="cosine", exact_scoring=exact)
    memory = open_stream(tmp_path / "data", embedder, clock=clock, config=config)
    try:
        text = "The bike pump is in the hall cupboard."
        first, second = memory.add_many(
            [NewMemory(text, importance=5), NewMemory(text, importance=5)], merge_duplicates=False
        )
        memory.add("The car is booked for its inspection in March.", importance=5)

        def ranked(weights: RetrievalWeights | None = None) -> list[str]:
            found = memory.retrieve("Where is the bike pump?", k=2, weights=weights, touch=False)
            return [m.record.id for m in found]

        assert ranked() == [first.id, second.id]  # a tie: the older first
        memory.adjust_utility([second.id], helped=True)
        assert ranked() == [second.id, first.id]
        found = memory.retrieve("Where is the bike pump?", k=2, touch=False)
        assert found[0].relevance == found[1].relevance
        assert found[0].utility == pytest.approx(1.0 / memory.config.utility_bound)
        assert ranked(RetrievalWeights(utility=0.0)) == [first.id, second.id]
        memory.adjust_utility([second.id], helped=False)  # 1 - 2: below the untouched one
        assert ranked() == [first.id, second.id]
    finally:
        memory.close()


def test_the_screens_search_ranks_by_relevance_only(stream: MemoryStream) -> None:
    text = "The bike pump is in the hall cupboard."
    first, second = stream.add_many([NewMemory(text), NewMemory(text)], merge_duplicates=False)
    stream.adjust_utility([second.id], helped=True)
    found = stream.search("spare key").items
    assert [m.record.id for m in found[:2]] == [first.id, second.id]


# The screen: an edit of the text or a delete is a correction


def test_an_edit_of_the_text_on_screen_lowers_utility_and_undo_keeps_it(stores: Stores) -> None:
    stream = stores.stream
    record = stream.add("User: The dentist is on Fir Street.")
    stream.adjust_utility([record.id], helped=True)
    desk = MemoryDesk(stores)
    desk.edit(MemoryEdit(ref="1", id=record.id, importance=8))
    assert utility(stream, record.id) == 1.0, "a changed importance is not a correction"
    desk.edit(MemoryEdit(ref="2", id=record.id, text="User: The dentist is on Yew Street."))
    assert utility(stream, record.id) == 1.0 - stream.config.utility_loss
    changes = stream.changes(record.id)
    assert changes[0].action == "edit"
    assert changes[0].after["text"] == "User: The dentist is on Yew Street."
    desk.undo(MemoryUndo(ref="3"))
    undone = stream.get(record.id)
    assert undone is not None and undone.text == "User: The dentist is on Fir Street."
    assert undone.utility == -1.0, "undoing the edit keeps what it cost"


def test_a_delete_lowers_utility_and_a_restore_keeps_it(stores: Stores) -> None:
    stream = stores.stream
    record = stream.add("User: My gym membership ends in June.")
    desk = MemoryDesk(stores)
    desk.delete(MemoryDelete(ref="1", id=record.id))
    assert utility(stream, record.id) == -stream.config.utility_loss
    desk.delete(MemoryDelete(ref="2", id=record.id, restore=True))
    restored = stream.get(record.id)
    assert restored is not None and not restored.deleted
    assert restored.utility == -stream.config.utility_loss


# The agent: the user's next message judges the memories the reply used


@pytest.mark.parametrize(
    "message",
    [
        "No, that's wrong.",
        "Actually it's on Thursday.",
        "That's not right, she lives in Parma.",
        "no, my sister is called Aya",
        "Nope, it was last year.",
        "You got it wrong: the meeting is at 4.",
        "I said Tuesday, not Thursday.",
        "Wrong, it's 5 pm.",
        "That\u2019s incorrect.",
        "Not quite, it's the blue folder.",
        "Her name is actually Malin.",
        "Actually, the dentist is on Friday.",
        "I never said that.",
        "No.",
    ],
)
def test_corrections_are_recognised(message: str) -> None:
    assert corrects(message, "Aya lives in Lugano.")


@pytest.mark.parametrize(
    "message",
    [
        "Thanks!",
        "Great, thank you.",
        "No thanks.",
        "No problem, talk later.",
        "No way, that's amazing!",
        "Actually, can you remind me at 6?",
        "Actually I need to go now.",
        "What's wrong with my car?",
        "That's right!",
        "Not bad at all!",
        "Nothing else for now.",
        "Now remind me to call Aya.",
        "Is it wrong to eat late?",
        "What is actually on my calendar?",
        "I said I'd call her, and I did.",
        "",
    ],
)
def test_other_messages_are_not_corrections(message: str) -> None:
    assert not corrects(message, "Aya lives in Lugano.")


def test_no_to_a_question_is_an_answer_not_a_correction() -> None:
    asked = "Would you like me to remind you tomorrow?"
    assert not corrects("No.", asked) and not corrects("nope", asked)
    assert corrects("No, that's wrong.", asked)


def test_a_memory_is_used_when_the_reply_says_what_only_it_could_give(
    stream: MemoryStream,
) -> None:
    sister, nurse = stream.add(SISTER), stream.add(NURSE)
    words = content_words("Brain OS: Brigida's sisters live at 4")
    assert words == {"brigida", "sister", "live", "4"}
    assert used_in("Brigida lives in Parma.", QUESTION, [sister, nurse]) == [sister.id]
    assert used_in("I don't know where Brigida lives.", QUESTION, [sister, nurse]) == []


def agent_on(llm: ScriptedStream, stores: Stores) -> Agent:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=8192))
    return Agent(llm, stores, context, AgentConfig())  # type: ignore[arg-type]


@pytest.fixture
def remembered(stores: Stores) -> Iterator[tuple[str, str]]:
    sister = stores.stream.add(SISTER, importance=6)
    nurse = stores.stream.add(NURSE, importance=6)
    yield sister.id, nurse.id


def grounded(message: str) -> str:
    return '{"known": true, "message": "' + message + '"}'


def test_memories_a_reply_used_rise_when_the_user_does_not_correct_it(
    stores: Stores, remembered: tuple[str, str]
) -> None:
    sister, nurse = remembered
    llm = ScriptedStream(grounded("Brigida lives in Parma."), say("You're welcome!"))
    agent = agent_on(llm, stores)
    turn = agent.respond(UserText(QUESTION))
    assert turn.reply == "Brigida lives in Parma."
    shown = "\n".join(m["content"] for m in llm.calls[0])
    assert SISTER in shown and NURSE in shown, "both shown, one used"
    assert utility(stores.stream, sister) == 0.0, "not judged until the user answers"
    agent.respond(HeartbeatTick())  # not the user: judges nothing
    assert utility(stores.stream, sister) == 0.0
    agent.respond(UserText("Thanks, good to know."))
    assert utility(stores.stream, sister) == stores.stream.config.utility_gain
    assert utility(stores.stream, nurse) == 0.0, "shown but not used"
    agent.respond(UserText("Bye for now."))
    assert utility(stores.stream, sister) == stores.stream.config.utility_gain, "judged once"


def test_memories_a_reply_used_fall_when_the_user_corrects_it(
    stores: Stores, remembered: tuple[str, str]
) -> None:
    sister, nurse = remembered
    llm = ScriptedStream(
        grounded("Brigida lives in Parma."), say("Thanks for telling me: Lugano it is.")
    )
    agent = agent_on(llm, stores)
    agent.respond(UserText(QUESTION))
    agent.respond(UserText("No, that's wrong: she moved to Lugano last year."))
    assert utility(stores.stream, sister) == -stores.stream.config.utility_loss
    assert utility(stores.stream, nurse) == 0.0


def test_an_interrupted_reply_is_not_judged(stores: Stores, remembered: tuple[str, str]) -> None:
    sister, _ = remembered
    long = "Brigida lives in Parma. She has lived there for years, near the old bridge."
    llm = ScriptedStream(grounded(long), say("Okay."), chunk=4)
    agent = agent_on(llm, stores)
    cancel = threading.Event()
    turn = agent.respond(UserText(QUESTION), on_text=lambda piece: cancel.set(), cancel=cancel)
    assert turn.interrupted and "Parma" in turn.reply
    agent.respond(UserText("Thanks."))
    assert utility(stores.stream, sister) == 0.0


# A delegated task: done, the memories its output drew on rise; failed, nothing changes


@pytest.fixture
def workspace(stores: Stores, tmp_path: Path) -> Workspace:
    return Workspace(stores, ReminderStore(tmp_path / "data" / "reminders.json"), lambda: NOW)


def test_a_task_that_finished_well_raises_the_memories_it_used(workspace: Workspace) -> None:
    stream = workspace.stores.stream
    lugano = stream.add("User: My sister Aya moved to Lugano last spring.")
    car = stream.add("User: My sister Aya drives a red car.")
    dentist = stream.add("User: The dentist appointment is on Friday at 3.")
    llm = ScriptedSteps(
        step("memory_search", ["Find where Aya lives", "Answer"], query="dentist appointment"),
        step("finish", progress="done", result="Aya lives in Lugano."),
    )
    record, _ = run_task(workspace, llm, goal="Find where my sister Aya lives")
    assert record.status == "done"
    assert utility(stream, lugano.id) == stream.config.utility_gain
    assert utility(stream, car.id) == 0.0, "retrieved for the goal, not used"
    assert utility(stream, dentist.id) == 0.0, "found by its search, not used"


def test_a_task_that_gave_up_changes_nothing(workspace: Workspace) -> None:
    stream = workspace.stores.stream
    lugano = stream.add("User: My sister Aya moved to Lugano last spring.")
    llm = ScriptedSteps(step("give_up", reason="Aya lives in Lugano, but I cannot say so."))
    record, _ = run_task(workspace, llm, goal="Find where my sister Aya lives")
    assert record.status == "failed"
    assert utility(stream, lugano.id) == 0.0


def test_utility_survives_an_export_round_trip_of_the_record(stream: MemoryStream) -> None:
    record = stream.add("Use the blue folder for taxes.")
    stream.adjust_utility([record.id], helped=True)
    got = stream.get(record.id)
    assert got is not None
    stream.restore_records([dataclasses.replace(got, utility=2.0)])
    assert utility(stream, record.id) == 2.0
    found = stream.retrieve("blue folder taxes", k=1, touch=False)
    assert found[0].record.utility == 2.0, "the mirror reloaded with it"
