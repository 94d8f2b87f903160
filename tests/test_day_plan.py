"""The day plan (Generative Agents §4.3) on the real memory stream and embedder: made
top-down, broken down, re-planned around what the user set; the model is scripted here (the
real one is in test_tasks_real.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from assistant.tasks.day_plan import DayPlanner, PlanError
from memory.embedder import OnnxSentenceEmbedder
from memory.stream import MemoryStream
from tests.memory_helpers import Clock, open_stream
from tests.task_helpers import ScriptedSteps

MORNING = datetime(2026, 11, 23, 8, 30, tzinfo=UTC)


def chunks(*spans: tuple[str, str, str]) -> dict[str, Any]:
    return {"chunks": [{"start": s, "end": e, "what": w} for s, e, w in spans]}


DAY = chunks(
    ("07:00", "08:00", "Breakfast"),
    ("08:00", "12:00", "Write the quarterly report"),
    ("12:00", "13:00", "Lunch with Aya"),
    ("13:00", "17:00", "Dentist at 15:00, then email"),
    ("17:00", "19:00", "Gym"),
    ("19:00", "22:00", "Dinner and rest"),
)
HOURS = chunks(
    ("08:00", "09:00", "Gather the sales figures"),
    ("09:00", "10:30", "Draft the report"),
    ("10:30", "12:00", "Charts and review"),
)


@pytest.fixture
def clock() -> Clock:
    return Clock(MORNING)


@pytest.fixture
def stream(tmp_path: Path, embedder: OnnxSentenceEmbedder, clock: Clock) -> Iterator[MemoryStream]:
    memory = open_stream(tmp_path / "data", embedder, clock=clock)
    yield memory
    memory.close()


def planner_for(stream: MemoryStream, clock: Clock, llm: ScriptedSteps) -> DayPlanner:
    return DayPlanner(
        stream,
        llm,
        clock,
        about_user=lambda: "Name: Rik. Works from home; gym on Mondays.",
        context=lambda day: ["Reminder at 15:00: dentist"],
    )


def accessed(stream: MemoryStream, record_id: str) -> datetime:
    record = stream.get(record_id)
    assert record is not None
    return record.last_accessed_at


def texts(planner: DayPlanner) -> list[str]:
    return [p.record.text for p in planner.today()]


def test_the_day_is_planned_from_what_the_user_said_then_broken_into_hours(
    stream: MemoryStream, clock: Clock
) -> None:
    stream.add("User: I must finish the quarterly report by Tuesday.", source="user")
    llm = ScriptedSteps(DAY, HOURS)
    planner = planner_for(stream, clock, llm)
    assert planner.step() == "planned the day in 5 chunks"
    asked = llm.requests[0][1]["content"]
    assert "Works from home" in asked and "Reminder at 15:00: dentist" in asked
    assert "quarterly report by Tuesday" in asked and "Monday 23 November 2026, 08:30" in asked
    # Breakfast ended before now: not planned.
    assert texts(planner) == [
        "Plan for Mon 23 Nov, 08:00-12:00: Write the quarterly report",
        "Plan for Mon 23 Nov, 12:00-13:00: Lunch with Aya",
        "Plan for Mon 23 Nov, 13:00-17:00: Dentist at 15:00, then email",
        "Plan for Mon 23 Nov, 17:00-19:00: Gym",
        "Plan for Mon 23 Nov, 19:00-22:00: Dinner and rest",
    ]
    first = planner.today()[0]
    assert first.record.kind == "plan" and first.record.sources == ("assistant",)
    assert first.record.event_time == datetime(2026, 11, 23, 8, 0, tzinfo=UTC)

    # The next step breaks the chunk the day is in into hours, citing it.
    assert planner.step() == "broke 08:00-12:00 into 3 chunks"
    assert "about an hour each" in llm.requests[1][1]["content"]
    hours = [p for p in planner.today() if p.parent == first.record.id]
    assert [p.record.text.split(": ", 1)[1] for p in hours] == [
        "Gather the sales figures",
        "Draft the report",
        "Charts and review",
    ]
    tree = stream.evidence_tree(hours[0].record.id)
    assert [child.record.id for child in tree.children] == [first.record.id]
    # Nothing else is due: no LLM call.
    assert planner.step() is None and len(llm.requests) == 2


def test_nothing_is_planned_unasked_for_a_user_it_knows_nothing_about(
    stream: MemoryStream, clock: Clock
) -> None:
    """A new user, no reminder, no task: the heartbeat does not make a day up (asked, it
    plans anyway); once the user has said something about the day, it plans from that."""
    llm = ScriptedSteps(DAY)
    planner = DayPlanner(stream, llm, clock)
    greeting = stream.add("Brain OS: Hello! How can I help?", source="assistant")
    clock.advance(hours=2)
    assert planner.step() is None and llm.requests == []
    # Looked at and not used: not marked as accessed (recency is about use).
    assert accessed(stream, greeting.id) == greeting.last_accessed_at
    said = stream.add("User: I have to finish the quarterly report today.", source="user")
    clock.advance(hours=1)
    assert planner.step() == "planned the day in 5 chunks"
    assert "quarterly report today" in llm.requests[0][1]["content"]
    assert accessed(stream, said.id) == clock.now
    assert accessed(stream, greeting.id) == greeting.last_accessed_at


def test_facts_about_people_are_no_ground_for_a_plan(stream: MemoryStream, clock: Clock) -> None:
    """The heartbeat plans only from what the user said about their time: "My sister Aya
    teaches maths" became "Go to the library to study maths" in the judgement probes."""
    llm = ScriptedSteps(DAY)
    planner = DayPlanner(
        stream, llm, clock, about_user=lambda: "Name: Rik. Sister Aya teaches maths in Parma."
    )
    stream.add("User: My sister Aya teaches maths at a school in Parma.", source="user")
    stream.add("User: My friend Tor retired last year.", source="user")
    clock.advance(hours=1)
    assert planner.step() is None and llm.requests == [], "what they told of others is theirs"
    with pytest.raises(PlanError, match="nothing to plan from"):
        planner.plan_day()  # asked: one clear line, no day made up
    assert llm.requests == []
    stream.add("User: I want to learn Italian before my trip.", source="user")
    clock.advance(minutes=5)
    assert planner.step() == "planned the day in 5 chunks"
    asked = llm.requests[0][1]["content"]
    assert "learn Italian" in asked and "Sister Aya" in asked, "who they are, as context"
    assert "teaches maths at a school" not in asked and "retired" not in asked


def test_an_hour_is_broken_into_minutes_on_demand(stream: MemoryStream, clock: Clock) -> None:
    minutes = chunks(
        ("08:00", "08:15", "Open the sales sheet"),
        ("08:15", "08:45", "Copy the totals"),
        ("08:45", "09:00", "Check them"),
    )
    llm = ScriptedSteps(DAY, HOURS, minutes)
    planner = planner_for(stream, clock, llm)
    planner.step()
    planner.step()
    hour = next(p for p in planner.today() if "Gather the sales figures" in p.record.text)
    assert planner.break_down(hour.record.id) == "broke 08:00-09:00 into 3 chunks"
    assert "5 to 15 minutes each" in llm.requests[2][1]["content"]
    steps = [p for p in planner.today() if p.parent == hour.record.id]
    assert [p.record.text.split(": ", 1)[1] for p in steps] == [
        "Open the sales sheet",
        "Copy the totals",
        "Check them",
    ]


def test_a_stale_plan_is_rewritten_around_the_users_own_chunks(
    stream: MemoryStream, clock: Clock
) -> None:
    replanned = chunks(
        ("11:00", "12:00", "Email the finished report"),
        ("12:00", "13:00", "Lunch with Aya"),
        ("13:00", "18:00", "Dentist, then a walk"),
        ("18:00", "20:00", "Gym"),
        ("20:00", "22:00", "Dinner and rest"),
    )
    llm = ScriptedSteps(DAY, HOURS, replanned)
    planner = planner_for(stream, clock, llm)
    planner.step()
    planner.step()
    lunch = next(p for p in planner.today() if "Lunch" in p.record.text)
    stream.edit(lunch.record.id, text="Plan for Mon 23 Nov, 12:00-13:30: Lunch with Aya and Joana")
    clock.advance(hours=2, minutes=30)  # 11:00: the first hour chunks are over
    planner.changed("task t-1 done: the report is finished")
    assert planner.step() == (
        "re-planned the rest of the day in 5 chunks (task t-1 done: the report is finished)"
    )
    asked = llm.requests[2][1]["content"]
    assert "the report is finished" in asked
    assert "12:00-13:30 Lunch with Aya and Joana" in asked.split("Fixed (keep as they are):")[1]
    assert "13:00-17:00 Dentist at 15:00, then email" in asked.split("Current plan")[1]
    now = texts(planner)
    # Over before 11:00: kept; the user's edit: kept; the planner's other chunks: replaced.
    assert "Plan for Mon 23 Nov, 08:00-09:00: Gather the sales figures" in now
    assert "Plan for Mon 23 Nov, 12:00-13:30: Lunch with Aya and Joana" in now
    assert "Plan for Mon 23 Nov, 13:00-18:00: Dentist, then a walk" in now
    assert not any("Dentist at 15:00" in t for t in now)
    assert not any("Write the quarterly report" in t for t in now)
    assert now.count("Plan for Mon 23 Nov, 12:00-13:00: Lunch with Aya") == 1


def test_a_malformed_plan_stores_nothing_and_says_why(stream: MemoryStream, clock: Clock) -> None:
    llm = ScriptedSteps({"chunks": [{"start": "9", "end": "10", "what": "x"}]})
    planner = planner_for(stream, clock, llm)
    with pytest.raises(PlanError, match="no usable plan"):
        planner.step()
    assert planner.today() == []
    with pytest.raises(PlanError, match="not a plan chunk"):
        planner.break_down(stream.add("User: hello", source="user").id)


def test_overlapping_and_repeated_chunks_are_dropped(stream: MemoryStream, clock: Clock) -> None:
    llm = ScriptedSteps(
        chunks(
            ("09:00", "12:00", "Work"),
            ("11:00", "13:00", "Overlaps the work"),
            ("13:00", "14:00", "Lunch"),
            ("13:00", "14:00", "Lunch again"),
            ("15:00", "14:00", "Ends before it starts"),
        )
    )
    planner_for(stream, clock, llm).plan_day()
    assert [t.split(": ", 1)[1] for t in texts(planner_for(stream, clock, llm))] == [
        "Work",
        "Lunch",
    ]


def test_the_schema_holds_the_model_to_five_to_eight_chunks(
    stream: MemoryStream, clock: Clock
) -> None:
    llm = ScriptedSteps(DAY)
    planner_for(stream, clock, llm).plan_day()
    schema = json.dumps(llm.schemas[0])
    assert '"minItems": 5' in schema and '"maxItems": 8' in schema


def test_a_break_down_that_strays_is_cut_to_its_chunk_or_not_tried_again(
    stream: MemoryStream, clock: Clock
) -> None:
    straying = chunks(
        ("07:00", "09:00", "Starts before the chunk"),
        ("09:00", "10:00", "Inside"),
        ("11:30", "14:00", "Ends after it"),
    )
    outside = chunks(("20:00", "21:00", "Nowhere near"), ("21:00", "22:00", "Nor this"))
    llm = ScriptedSteps(DAY, straying, outside)
    planner = planner_for(stream, clock, llm)
    planner.step()
    assert planner.step() == "broke 08:00-12:00 into 3 chunks"
    hours = [t.split(", ", 1)[1] for t in texts(planner) if "Write the quarterly" not in t]
    assert hours[:3] == [
        "08:00-09:00: Starts before the chunk",
        "09:00-10:00: Inside",
        "11:30-12:00: Ends after it",
    ]
    lunch = next(p for p in planner.today() if "Lunch with Aya" in p.record.text)
    clock.advance(hours=4)  # 12:30: lunch is the current chunk; the model misses it
    with pytest.raises(PlanError, match="fell outside"):
        planner.step()
    assert planner.step() is None and len(llm.requests) == 3
    assert not any(p.parent == lunch.record.id for p in planner.today())
