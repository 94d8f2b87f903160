"""Whether the master agent speaks first when it should, and only then: scripted scenarios
(benchmarks/proactive_scenarios.py), each a few user messages over a simulated week with a
controlled clock, through the app's real session (agent, stores, watch, intentions, tasks)
and the profile's real local model. At each of a scenario's heartbeats the app's own look
runs (assistant/proactive/look.py: the digest of what changed, the gate, the agent's turn
held to the heartbeat's tools, what is said).

    python -m benchmarks.proactive [--profiles quality fast] [--only NAME ...] [--json]

A proactive action is a message said first, or a background task started, at a heartbeat.
``precision``: the share of actions taken where the scenario expected one and the message
names what it is about (both events of a clash; a follow-up asks); ``recall``: the share of
expected actions taken so; ``empty_tick_llm_calls``: the LLM requests made at heartbeats whose
digest was empty (the design makes none); ``tick_ms``: how long a heartbeat took (the look,
and the agent's turn when it was woken).
Background reflection, the day plan and the knowledge graph are off (each has its own
benchmark), so every request counted is the heartbeat's or the user's turn's.

``--json`` prints ``{"<profile>": {"precision", "recall", "empty_tick_llm_calls",
"scenarios", "tick_ms": {"p50", "p95", "max"}, "ticks", "expected_actions", "actions"}}``;
progress and every heartbeat's outcome go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.proactive_scenarios import SCENARIOS, Act, Scenario, Step, at
from benchmarks.stats import percentiles

GOALS = {"precision": 0.8, "recall": 0.6}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class SimulatedClock:
    def __init__(self) -> None:
        self.now = at("Mon 00:00")

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Outcome:
    scenario: str
    when: str
    expected: Act | None
    said: str = ""
    delegated: bool = False
    empty: bool = False
    llm_calls: int = 0
    ms: float = 0.0
    # What the user said in the scenario so far.
    heard: tuple[str, ...] = ()

    @property
    def acted(self) -> bool:
        return bool(self.said) or self.delegated

    @property
    def right(self) -> bool:
        """An action where one was expected, about what it should be about."""
        if not self.acted or self.expected is None:
            return False
        return self.expected.met_by(self.said, self.heard)


class CountingRequests:
    """Counts the chat requests a client sends (the benchmark's own instrument)."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        completions = client._client.chat.completions
        create = completions.create

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return create(*args, **kwargs)

        completions.create = counted


def run_scenario(
    scenario: Scenario,
    settings: Any,
    folder: Path,
    client: Any,
    counter: CountingRequests,
    embedder: Any,
) -> list[Outcome]:
    from assistant.agent.events import UserText
    from assistant.proactive.gate import GateRules, ProactiveGate
    from assistant.proactive.look import Look
    from benchmarks.judgement import Host

    clock = SimulatedClock()
    heartbeat = settings.heartbeat.model_copy(update={"quiet_hours": scenario.quiet_hours})
    settings = settings.model_copy(update={"heartbeat": heartbeat})
    outcomes = []
    with Host(settings, folder, client, embedder, clock=clock) as host:
        session = host.session
        gate = ProactiveGate(
            GateRules.of(heartbeat),
            lambda: scenario.present,
            lambda: False,
            folder / "proactive.json",
            clock,
        )
        look = Look(session.watch, gate)
        look.watch.look()  # the first look: what was there before is not news
        for step in scenario.steps:
            clock.now = at(step.when)
            _seed(session, step)
            if step.say is not None:
                look.heard(step.say)
                host.agent.respond(UserText(step.say))
            if step.tick:
                outcomes.append(_heartbeat(scenario, step, look, host, counter))
    return outcomes


def _seed(session: Any, step: Step) -> None:
    from assistant.tasks.records import TaskRecord

    if step.intention is not None:
        session.intentions.add(step.intention.text, at(step.intention.due))
    if step.task is not None:
        task = step.task
        record = TaskRecord(
            id=f"t-{abs(hash(task.goal)) % 10**6:06d}",
            goal=task.goal,
            status=task.status,  # type: ignore[arg-type]
            result=task.result or None,
            reason=None if task.status == "done" else "the site did not answer",
            started_at=at(step.when),
            ended_at=at(step.when),
            reported=task.reported,
        )
        session.tasks.store.save(record)


def _heartbeat(
    scenario: Scenario, step: Step, look: Any, host: Any, counter: CountingRequests
) -> Outcome:
    heard = tuple(s.say for s in scenario.steps if s.say is not None)
    outcome = Outcome(scenario.name, step.when, step.expect, heard=heard)
    before = counter.count
    started = time.perf_counter()
    woken = look.wake()
    if woken is None:
        outcome.empty = True
    else:
        turn = host.agent.respond(woken.event)
        settled = look.settle(woken, turn)
        outcome.said = settled.said or ""
        # A task the agent chose counts as an action even where the benchmark's session runs
        # no tasks (it fails to start); one the guard refused does not.
        outcome.delegated = any(
            s.tool == "start_background_task" and "cannot talk to the user" not in s.result
            for s in turn.steps
        )
        tools = [s.tool for s in turn.steps]
        log(f"      digest: {' / '.join(woken.event.digest)} | may speak: {woken.event.may_speak}")
        log(f"      tools: {tools} {('not said: ' + settled.not_said) if settled.not_said else ''}")
    outcome.ms = (time.perf_counter() - started) * 1000
    outcome.llm_calls = counter.count - before
    return outcome


def score(outcomes: Sequence[Outcome], scenarios: int) -> dict[str, Any]:
    actions = [o for o in outcomes if o.acted]
    expected = [o for o in outcomes if o.expected is not None]
    right = [o for o in outcomes if o.right]
    return {
        "precision": round(len(right) / len(actions), 3) if actions else None,
        "recall": round(len(right) / len(expected), 3) if expected else None,
        "empty_tick_llm_calls": sum(o.llm_calls for o in outcomes if o.empty),
        "scenarios": scenarios,
        "tick_ms": percentiles([o.ms for o in outcomes]),
        "ticks": len(outcomes),
        "expected_actions": len(expected),
        "actions": len(actions),
    }


def bench_profile(profile: str, scenarios: Sequence[Scenario]) -> dict[str, Any]:
    from assistant.config import load_config
    from assistant.llm.runtime import LLMRuntime
    from benchmarks.retrieval_scale import real_embedder

    embedder = real_embedder()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="proactive-", ignore_cleanup_errors=True) as scratch:
        folder = Path(scratch)
        flags = {
            "profile": profile,
            "data_dir": str(folder / "data"),
            "tasks.day_plan": "false",
            "agent.knowledge_graph": "false",
        }
        settings = load_config(flags=flags).settings
        with LLMRuntime(settings) as client:
            counter = CountingRequests(client)
            for number, scenario in enumerate(scenarios):
                log(f"[{profile}] {scenario.name} ({scenario.kind})")
                found = run_scenario(
                    scenario, settings, folder / f"s{number}", client, counter, embedder
                )
                for outcome in found:
                    mark = (
                        "  " if outcome.right or not (outcome.acted or outcome.expected) else "XX"
                    )
                    wanted = "act" if outcome.expected else "silent"
                    did = f"said {outcome.said!r}" if outcome.said else "silent"
                    if outcome.delegated:
                        did += " + task"
                    log(f"  {mark} {outcome.when} want {wanted}: {did} ({outcome.ms:,.0f} ms)")
                outcomes += found
    return score(outcomes, len(scenarios))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profiles", nargs="+", default=["quality"], choices=["quality", "fast"])
    parser.add_argument("--only", nargs="+", help="run only the scenarios whose name has this")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    scenarios = [s for s in SCENARIOS if not args.only or any(part in s.name for part in args.only)]
    report = {profile: bench_profile(profile, scenarios) for profile in args.profiles}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for profile, figures in report.items():
        tick = figures["tick_ms"]
        print(
            f"{profile}: precision {figures['precision']} (goal {GOALS['precision']}), recall "
            f"{figures['recall']} (goal {GOALS['recall']}), {figures['empty_tick_llm_calls']} "
            f"LLM calls on empty ticks; {figures['actions']} actions, "
            f"{figures['expected_actions']} expected, {figures['ticks']} heartbeats in "
            f"{figures['scenarios']} scenarios; a heartbeat p50 {tick['p50']:,.0f} ms, p95 "
            f"{tick['p95']:,.0f} ms, max {tick['max']:,.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
