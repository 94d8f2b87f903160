"""Compaction off the reply path: the window's oldest part is summarised in the background after
a turn that filled it, swapped in at a turn boundary (the oldest messages leave, the summary is
appended as a note, so the server keeps the rest of the prompt it read), read ahead, and saved
with the window so a restart sends the same prompt. Real stores (LanceDB, the real
embedder); a scripted conversation model for control flow, then the real local model."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from assistant.agent import window_keeper
from assistant.agent.agent import Agent
from assistant.agent.compaction import (
    SUMMARY_SCHEMA,
    Compactor,
    cut_summary,
    json_summariser,
    opening_lines,
    summarise,
    summary_prompt,
)
from assistant.agent.context import ContextConfig, ContextWindow, is_summary_note, transcript
from assistant.agent.context_store import load_context, save_context
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.tools import MEMORIES_HEAD, Stores
from assistant.agent.turn import AgentConfig
from assistant.agent.wiring import CONTEXT_FILE, open_agent, open_stores
from assistant.llm.client import (
    LLMCancelled,
    LLMClient,
    LLMContextOverflow,
    LLMError,
    LLMReplyError,
)
from assistant.llm.messages import JsonSchema, Message
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.settings import Settings
from memory.embedder import OnnxSentenceEmbedder
from tests.agent_helpers import ScriptedStream, say
from tests.conftest import make_settings
from tests.test_llm import wait_until

LONG = "I spent the whole afternoon repotting the fern, the ivy and the two cactuses. " * 3


class HeldSummaries:
    """A background model whose summaries wait until released (each call is recorded)."""

    def __init__(self, summary: str = "Sid repotted plants all afternoon.") -> None:
        self.summary = summary
        self.release = threading.Event()
        self.asked: list[list[Message]] = []

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: JsonSchema,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        assert schema == SUMMARY_SCHEMA
        self.asked.append(list(messages))
        assert self.release.wait(30)
        return {"summary": self.summary}


def compacting_agent(
    llm: Any, stores: Stores, background: Any, path: Path | None = None, window: int = 3500
) -> Agent:
    context = ContextWindow(
        instructions(), stores.core, ContextConfig(window_tokens=window, reply_tokens=256)
    )
    return Agent(
        llm,
        stores,
        context,
        AgentConfig(retrieved_memories=0),
        compactor=Compactor(json_summariser(background)),
        context_path=path,
    )


def fill(agent: Agent) -> int:
    """Talk until a turn leaves the window past the compaction share (a compaction starts);
    returns how many turns that took."""
    assert agent.compactor is not None
    turns = 0
    while not agent.compactor.busy:
        agent.respond(UserText(f"{turns}: {LONG}"))
        turns += 1
        assert turns < 40
    # The shorter prompt is read ahead on a thread of its own: done before the test goes on.
    for thread in threading.enumerate():
        if thread.name == "read-ahead":
            thread.join(10)
    return turns


def test_a_full_window_is_summarised_in_the_background_and_swapped_in_at_a_turn(
    stores: Stores, tmp_path: Path
) -> None:
    model = ScriptedStream(say("Lovely."))
    background = HeldSummaries()
    agent = compacting_agent(model, stores, background, tmp_path / CONTEXT_FILE)
    agent.reads_ahead = True
    assert agent.compactor is not None
    assert fill(agent) > 1
    # The oldest messages left the prompt at once: no turn reads them while the summary is
    # written.
    handed = list(agent.context.pending)
    assert handed and handed[0]["content"].startswith("0: I spent")
    assert "0: I spent" not in json.dumps(agent.context.messages())
    assert agent.context.pressure() < agent.context.config.compact_share
    assert not agent.context.summary
    held = len(agent.context.fifo)

    # The summary is still being written: the next turn neither waits for it nor uses it.
    turn = agent.respond(UserText("How are the plants?"))
    assert turn.reply == "Lovely." and not turn.flushed
    assert not agent.context.summary and len(agent.context.fifo) > held
    assert len(background.asked) == 1, "one summary at a time"
    prompt = background.asked[0][1]["content"]
    assert prompt.startswith("Summary so far:\n(none)") and "0: I spent" in prompt
    placeholder = {"role": "user", "content": "…"}
    assert all(call[-1] == placeholder for call in model.summaries), (
        "the conversation's model only read the prompt ahead, it summarised nothing"
    )

    # Done while no turn runs: swapped in at once, its note at the end: the rest of the
    # prompt is as the server read it.
    kept_before = agent.context.messages()
    background.release.set()
    assert agent.compactor.wait(10)
    assert agent.context.summary == "Sid repotted plants all afternoon."
    assert not agent.context.pending
    now = agent.context.messages()
    assert now[-1] == {
        "role": "system",
        "content": "[summary of the earlier conversation]\nSid repotted plants all afternoon.",
    }
    assert now[:-1] == kept_before, "the rest kept as it was, in order"
    # And the note was read ahead at once, so the next turn does not read it.
    assert model.summaries[-1] == [*now, {"role": "user", "content": "…"}]

    # The window was saved with its summary: opened again, the prompt is the same.
    again = ContextWindow(instructions(), stores.core)
    assert load_context(tmp_path / CONTEXT_FILE, again)
    assert again.messages() == agent.context.messages()


def test_a_window_saved_past_the_compaction_share_is_summarised_before_any_turn(
    stores: Stores, tmp_path: Path
) -> None:
    background = HeldSummaries()
    agent = compacting_agent(ScriptedStream(say("Lovely.")), stores, background)
    assert agent.compactor is not None
    assert not agent.compact_if_due(), "an empty window has nothing to summarise"
    for n in range(12):
        agent.context.push({"role": "user", "content": f"{n}: {LONG}"})
    held = len(agent.context.fifo)
    assert agent.context.pressure() >= agent.context.config.compact_share
    assert agent.compact_if_due() and agent.compactor.busy
    assert not agent.compact_if_due(), "one summary at a time"
    background.release.set()
    assert agent.compactor.wait(10)
    assert wait_until(lambda: agent.window.compactions == 1, 10), "swapped in, no turn needed"
    assert agent.context.summary == "Sid repotted plants all afternoon."
    assert len(agent.context.fifo) < held and len(background.asked) == 1


def test_the_window_is_handed_over_again_while_a_summary_is_written(stores: Stores) -> None:
    """A summary slower than the conversation does not let the prompt grow: what fills the
    window meanwhile is handed over too, and summarised next, from the summary before."""
    background = HeldSummaries()
    agent = compacting_agent(ScriptedStream(say("Lovely.")), stores, background)
    assert agent.compactor is not None
    fill(agent)
    first = list(agent.context.pending)
    while agent.context.pending == first:
        agent.respond(UserText(f"More: {LONG}"))
    assert agent.context.pressure() < agent.context.config.compact_share
    assert len(background.asked) == 1, "one summary at a time"
    background.release.set()
    assert agent.compactor.wait(10)
    assert wait_until(lambda: agent.window.compactions == 1, 10)
    rest = list(agent.context.pending)
    assert rest and rest[0] not in first, "handed over after the first summary began"
    assert agent.compact_if_due(), "the rest is summarised next"
    assert agent.compactor.wait(10)
    assert wait_until(lambda: agent.window.compactions == 2, 10) and not agent.context.pending
    second = background.asked[1][1]["content"]
    assert second.startswith(f"Summary so far:\n{background.summary}")
    assert rest[0]["content"][:40] in second


def test_a_summary_finished_during_a_turn_waits_for_the_turn_boundary(
    stores: Stores,
) -> None:
    background = HeldSummaries()
    swapped_during_reply: list[bool] = []

    def reply(messages: Sequence[Message]) -> str:
        # The summary is done while this reply is written: it must not change the window.
        background.release.set()
        assert agent.compactor is not None
        agent.compactor.wait(10)
        swapped_during_reply.append(bool(agent.context.summary))
        return say("Sure.")

    model = ScriptedStream(say("Lovely."))
    agent = compacting_agent(model, stores, background)
    assert agent.compactor is not None
    fill(agent)
    model.replies = [reply]
    agent.respond(UserText("I will water the ivy tomorrow."))
    assert swapped_during_reply == [False]
    assert agent.context.summary == background.summary, "swapped in once the reply was out"
    assert agent.context.messages()[-1]["content"].endswith(background.summary)
    model.replies = [say("Fine.")]
    agent.respond(UserText("And the fern?"))
    sent = model.calls[-1]
    assert sent[-1] == {"role": "user", "content": "And the fern?"}, "the event comes last"
    assert sent[-2]["content"].endswith(background.summary)


def test_a_summary_finished_while_the_user_writes_waits_for_the_end_of_that_turn(
    stores: Stores,
) -> None:
    """The drafts were read ahead against the window as it was: swapping the summary in
    under them would make the turn read its whole new tail. It goes in after the reply."""
    background = HeldSummaries()
    model = ScriptedStream(say("Lovely."))
    agent = compacting_agent(model, stores, background)
    agent.reads_ahead = True
    assert agent.compactor is not None
    fill(agent)
    assert agent.prepare("And the fern")
    drafted = model.summaries[-1]
    background.release.set()
    assert agent.compactor.wait(10)
    assert not agent.context.summary, "not swapped in under the drafts"

    agent.respond(UserText("And the fern"))
    assert model.calls[-1] == drafted, "the turn sent the prompt its draft read ahead"
    assert agent.context.summary == background.summary, "swapped in after the reply"
    now = agent.context.messages()
    for _ in range(100):  # the note is read ahead on its own thread
        if model.summaries[-1] == [*now, {"role": "user", "content": "…"}]:
            break
        time.sleep(0.05)
    assert model.summaries[-1] == [*now, {"role": "user", "content": "…"}], "note read ahead"


def test_a_summary_swapped_in_at_the_end_of_a_turn_is_saved_with_the_window_once(
    stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    background = HeldSummaries()
    agent = compacting_agent(ScriptedStream(say("Lovely.")), stores, background, tmp_path / "w")
    assert agent.compactor is not None
    fill(agent)
    assert agent.prepare("And the fern")  # the user is writing: the summary waits
    background.release.set()
    assert agent.compactor.wait(10)
    saved: list[str] = []
    monkeypatch.setattr(window_keeper, "save_context", lambda path, context: saved.append(path))
    agent.respond(UserText("And the fern"))
    assert agent.context.summary == background.summary
    assert saved == [tmp_path / "w"], "one save a turn, the summary in it"


def test_an_overflow_while_a_summary_is_written_waits_for_it(stores: Stores) -> None:
    background = HeldSummaries()
    overflow = LLMContextOverflow("the prompt does not fit the context window")
    model = ScriptedStream(say("Lovely."), summary="Flushed summary.")
    agent = compacting_agent(model, stores, background)
    assert agent.compactor is not None
    fill(agent)
    model.replies = [overflow, say("Still here.")]
    model.calls.clear()
    # The background server is not paused while the turn waits on it (pausing.py): the
    # summary comes once the gate says the turn no longer holds the cores.
    holds: list[bool] = []
    agent.gate.listen(holds.append)
    agent.gate.listen(lambda held: None if held else background.release.set())
    turn = agent.respond(UserText("One more."))
    assert holds == [True, False, True, False]
    assert turn.flushed and turn.reply == "Still here."
    assert agent.context.summary == background.summary and not model.summaries
    retried = model.calls[-1]
    assert retried[-1] == {"role": "user", "content": "One more."}, "the event stays last"
    assert retried[-2]["content"].endswith(background.summary)


def test_a_summary_overtaken_by_a_flush_is_dropped(stores: Stores) -> None:
    background = HeldSummaries()
    agent = compacting_agent(ScriptedStream(say("Lovely.")), stores, background)
    assert agent.compactor is not None
    fill(agent)
    # A flush came first: it summarised the pending messages.
    agent.context.evict()
    agent.context.pending = []
    agent.context.add_summary("Flushed summary.")
    background.release.set()
    assert agent.compactor.wait(10)
    agent.respond(UserText("And now?"))
    assert agent.context.summary == "Flushed summary.", "the stale summary was not swapped in"
    assert [is_summary_note(m) for m in agent.context.fifo].count(True) == 1


class CancelledSummaries(HeldSummaries):
    """A background model whose summary request is cancelled (the service closing)."""

    def complete_json(self, messages: Sequence[Message], schema: JsonSchema, **_: Any) -> Any:
        self.asked.append(list(messages))
        assert self.release.wait(30)
        raise LLMCancelled("background work was cancelled or is closing")


def test_a_cancelled_summary_leaves_its_messages_waiting_for_the_next(
    stores: Stores, tmp_path: Path
) -> None:
    background = CancelledSummaries()
    path = tmp_path / CONTEXT_FILE
    agent = compacting_agent(ScriptedStream(say("Lovely.")), stores, background, path)
    assert agent.compactor is not None
    fill(agent)
    handed = list(agent.context.pending)
    background.release.set()
    assert agent.compactor.wait(10)
    assert not agent.compactor.busy, "nothing waits to be swapped in"
    agent.respond(UserText("And now?"))
    assert not agent.context.summary and agent.context.pending == handed
    # Saved so: opened again (the service restarted), the summary is asked for anew.
    asked_anew = HeldSummaries()
    again = compacting_agent(ScriptedStream(say("Lovely.")), stores, asked_anew, path)
    assert load_context(path, again.context)
    assert again.context.pending == handed and not again.context.summary
    assert again.compact_if_due()
    assert again.compactor is not None and again.compactor.busy
    asked_anew.release.set()  # no summary thread outlives the test
    assert again.compactor.wait(10)


def test_a_failed_summary_keeps_whole_opening_lines() -> None:
    evicted: list[Message] = [
        {"role": "user", "content": f"Line {n}: " + "the garden needs water " * 4}
        for n in range(60)
    ]

    def fails(prompt: list[Message]) -> str:
        raise LLMError("the server is down")

    summary = summarise(fails, "Earlier: a trip was planned.", evicted)
    assert summary == opening_lines("Earlier: a trip was planned.", evicted)
    lines = summary.splitlines()
    assert lines[-1].startswith("Line 59: "), "the newest messages are kept"
    assert all(line.startswith("Line ") for line in lines), "no line is cut at its start"
    assert len(summary) <= 1_500


def test_a_broken_saved_window_is_rebuilt_from_recall(
    stores: Stores, tmp_path: Path, embedder: OnnxSentenceEmbedder, caplog: Any
) -> None:
    settings = make_settings("fast", tmp_path / "data", tmp_path / "cache")
    agent = open_agent(settings, ScriptedStream(say("Hello, Sid.")), stores)
    agent.respond(UserText("Hi, I'm Sid."))
    saved = settings.data_dir / CONTEXT_FILE
    assert json.loads(saved.read_text())["fifo"][-1]["content"] == say("Hello, Sid.")
    reopened = open_agent(settings, ScriptedStream(say("Hi.")), stores)
    assert reopened.context.messages() == agent.context.messages()

    for broken in (b"{not json", b"\xff\xfe\x00", json.dumps({"format": 99}).encode()):
        saved.write_bytes(broken)
        rebuilt = open_agent(settings, ScriptedStream(say("Hi.")), stores)
        contents = [m["content"] for m in rebuilt.context.fifo]
        assert "Hi, I'm Sid." in contents, "the conversation came back from recall storage"
    assert "rebuilding it" in caplog.text


def test_the_saved_window_keeps_its_prefix_when_core_memory_changed_meanwhile(
    stores: Stores, tmp_path: Path
) -> None:
    context = ContextWindow(instructions(), stores.core)
    context.push({"role": "user", "content": "Hello"})
    save_context(tmp_path / "w.json", context)
    stores.core.append("human", "Name: Rita.")
    again = ContextWindow(instructions(), stores.core)
    assert load_context(tmp_path / "w.json", again)
    assert again.messages() == context.messages(), "byte for byte, for the server's cache"
    again.note_core_changes()
    assert again.fifo[-1]["content"] == "[core memory] added to human: Name: Rita."


@pytest.mark.slow
def test_compaction_with_the_real_model_never_holds_up_a_turn(
    fast_llm: LLMClient, tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """The real local model writes the summary through the background gate, and replies go
    on meanwhile; the summary is swapped in and saved."""
    settings = make_settings("fast", tmp_path / "data", tmp_path / "cache")
    stores = open_stores(settings.data_dir, embedder, rate=False, core_memory_chars=400)
    gate = ForegroundGate()
    try:
        context = ContextWindow(
            instructions(), stores.core, ContextConfig(window_tokens=2600, reply_tokens=256)
        )
        agent = Agent(
            fast_llm,
            stores,
            context,
            AgentConfig(retrieved_memories=0, max_steps=3, temperature=0.0),
            gate=gate,
            compactor=Compactor(json_summariser(BackgroundLLM(fast_llm, gate))),
            context_path=settings.data_dir / CONTEXT_FILE,
        )
        assert agent.compactor is not None
        for number in range(30):
            turn = agent.respond(UserText(f"Note {number}: {LONG}"))
            assert turn.error is None and not turn.flushed, turn.error
            if agent.context.summary:
                break
            if agent.compactor.busy:
                agent.compactor.wait(120)  # the user pauses: the summary is written
        assert agent.context.summary, "a summary was swapped in"
        assert "plant" in agent.context.summary.lower() or "repot" in agent.context.summary.lower()
        saved = json.loads((settings.data_dir / CONTEXT_FILE).read_text())
        assert saved["summary"] == agent.context.summary
    finally:
        # The next compaction may be under way: abandoned, so the shared server stops writing
        # it (it wrote on for a minute into the next tests, as the service's closing stops it).
        gate.close()
        assert agent.compactor is None or agent.compactor.wait(30)
        stores.stream.close()


def test_open_agent_gives_the_agent_a_background_compactor(
    stores: Stores, fast_settings: Settings
) -> None:
    plain = open_agent(fast_settings, ScriptedStream(say("Hi.")), stores)
    assert plain.compactor is None
    background = open_agent(
        fast_settings, ScriptedStream(say("Hi.")), stores, background=HeldSummaries()
    )
    assert background.compactor is not None


def test_a_compaction_takes_the_last_summary_note_with_the_oldest_messages(
    stores: Stores,
) -> None:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=8192))
    for n in range(6):
        context.push({"role": "user", "content": f"{n}: {LONG}"})
    context.add_summary("The first summary.")
    for n in range(6, 10):
        context.push({"role": "user", "content": f"{n}: {LONG}"})
    # Half the tokens would stop short of the note; it goes too, so only one summary (the
    # new one, which is written from it) is in view afterwards.
    count = context.eviction_count()
    assert count == 7 and is_summary_note(context.fifo[count - 1])
    assert "The first summary." not in transcript(context.fifo[:count])
    assert len(context.hand_over()) == count
    assert context.compact("The second summary.", context.pending)
    notes = [m["content"] for m in context.fifo if is_summary_note(m)]
    assert notes == ["[summary of the earlier conversation]\nThe second summary."]
    # A note among the newest messages stays: taking it would empty the window.
    context.add_summary("A third summary.")
    context.push({"role": "user", "content": "Latest."})
    assert not is_summary_note(context.fifo[context.eviction_count() - 1])


def test_a_summary_is_written_from_the_conversation_not_the_memories_shown_with_it(
    stores: Stores,
) -> None:
    """Another person's life read in a retrieved memory is not the user's: the summary
    prompt holds the messages, and the memory notes shown with them stay in the store."""
    stores.stream.add("Odile: my brother races pigeons in Lille every spring.")
    model = ScriptedStream(say("Good luck with the kiln."), say("Enjoy the glaze."))
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=8192))
    agent = Agent(
        model,
        stores,
        context,
        AgentConfig(retrieved_memories=3, least_similarity=0.0, more_similarity=0.0),
    )
    agent.respond(UserText("I fire my pottery kiln tomorrow; my brother helps."))
    agent.respond(UserText("The glaze I chose is a pale celadon."))
    assert any(m["content"].startswith(MEMORIES_HEAD) for m in context.fifo)
    prompt = summary_prompt("", context.fifo)[1]["content"]
    assert "kiln tomorrow" in prompt and "pale celadon" in prompt
    assert "pigeons" not in prompt and MEMORIES_HEAD not in prompt
    stores.stream.close()


def test_a_window_saved_with_the_summary_on_top_opens_with_it_as_a_note(
    stores: Stores, tmp_path: Path
) -> None:
    saved = {
        "format": 1,
        "instructions": instructions(),
        "summary": "Sid moved to Luton.",
        "core_snapshot": "",
        "core_seen": {},
        "fifo": [{"role": "user", "content": "Hello again."}],
        "shows": [[]],
    }
    (tmp_path / "w.json").write_text(json.dumps(saved))
    context = ContextWindow(instructions(), stores.core)
    assert load_context(tmp_path / "w.json", context)
    assert context.summary == "Sid moved to Luton."
    assert context.fifo == [
        {"role": "system", "content": "[summary of the earlier conversation]\nSid moved to Luton."},
        {"role": "user", "content": "Hello again."},
    ]


def test_a_summary_that_says_a_sentence_over_and_over_keeps_it_once() -> None:
    looping = "Tam fixed the gate. " + "The dog ran off twice, and Tam found him. " * 9
    asked: list[list[Message]] = []

    def ask(prompt: list[Message]) -> str:
        asked.append(prompt)
        return looping + "The dog"

    summary = summarise(ask, "", [{"role": "user", "content": "Our dog ran off again."}])
    assert summary == "Tam fixed the gate. The dog ran off twice, and Tam found him. The dog"
    lines = "Tam fixed the gate.\nHis dog ran off."
    assert summarise(lambda prompt: lines, "", []) == lines, "kept as written when none repeats"


def test_a_summary_cut_off_by_the_token_limit_keeps_its_whole_sentences() -> None:
    cut = '{"summary": "Sid moved to Luton. His sister \\"Bea\\" lives in Parma.\\nHe likes te'
    assert cut_summary(cut) == 'Sid moved to Luton. His sister "Bea" lives in Parma.'
    assert cut_summary('{"summary": "Sid moved to Lu') == "Sid moved to Lu"
    assert cut_summary('{"summary": "Ends on an escape\\') == "Ends on an escape"
    assert cut_summary("Not JSON at all.") == ""


def test_the_background_summariser_keeps_a_summary_cut_off_by_its_token_limit() -> None:
    class CutOff:
        def complete_json(self, *args: Any, **options: Any) -> dict[str, Any]:
            raise LLMReplyError("did not reply with valid JSON", reply='{"summary": "A. B')

    assert json_summariser(CutOff())([]) == "A."
