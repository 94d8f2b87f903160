"""The scenarios of benchmarks/proactive.py: a few user messages spread over a simulated week
(Monday 23 to Sunday 29 November 2026, Lisbon time), and heartbeats at set times, each with
what a careful person would expect of an assistant then: a word to the user about something
(``Act``: the message must name one of ``about``), or silence (``SILENT``).

About half the heartbeats call for a word (a follow-up on an event, a clash, an event coming
up, an intention come due, a finished task to report); the others for silence (small talk,
facts with no time in them, something already handled, said before, quiet hours, the user
away, "not now")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

ZONE = ZoneInfo("Europe/Lisbon")
MONDAY = datetime(2026, 11, 23, tzinfo=ZONE)
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def at(when: str) -> datetime:
    """ "Fri 15:00" in the simulated week."""
    day, clock = when.split()
    hours, minutes = (int(part) for part in clock.split(":"))
    return MONDAY + timedelta(days=DAYS.index(day), hours=hours, minutes=minutes)


@dataclass(frozen=True)
class Act:
    """A message is due: it names one of ``about`` (and one of ``also``, for a clash's two
    events), and ``asks`` something when it is a follow-up."""

    about: tuple[str, ...]
    also: tuple[str, ...] = ()
    asks: bool = False
    # The event is still ahead: asking how it went is wrong.
    ahead: bool = False

    def met_by(self, message: str, heard: Sequence[str] = ()) -> bool:
        """``heard``: what the user said in the scenario (a message that reads it back in
        their own person is careless)."""
        said = message.lower()
        named = any(word.lower() in said for word in self.about)
        both = not self.also or any(word.lower() in said for word in self.also)
        asked = not self.asks or "?" in message
        too_soon = self.ahead and any(p in said for p in ("how did", "how was", "how'd"))
        return (
            named
            and both
            and asked
            and not too_soon
            and not careless(message)
            and not reads_back(message, heard)
        )


# What no careful person says first: the prompt read back, the user spoken of as "the user",
# or not knowing what it came to say.
_CARELESS = (
    "the user",
    "what changed",
    "heartbeat",
    "item 1",
    "e.g.",
    "i don't know",
    "i do not know",
    "i don't remember",
    "i'm sorry, but",
    "(today at",
    "(tomorrow at",
    "(yesterday at",
)
_FIRST_PERSON = {"i", "i'm", "i'll", "i've", "my", "me", "we", "we're", "our"}
# Words in a row that make a quotation.
QUOTED_WORDS = 5


def careless(message: str) -> bool:
    said = message.lower().replace("\u2019", "'")
    return any(phrase in said for phrase in _CARELESS)


SILENT = None
Expect = Act | None


@dataclass(frozen=True)
class Intention:
    text: str
    due: str


@dataclass(frozen=True)
class FinishedTask:
    goal: str
    result: str
    status: str = "done"
    reported: bool = False


@dataclass(frozen=True)
class Step:
    when: str
    say: str | None = None
    # A heartbeat at this time, and what should come of it.
    tick: bool = False
    expect: Expect = SILENT
    # Kept before the step, as the agent or a task would have left it.
    intention: Intention | None = None
    task: FinishedTask | None = None


def tick(when: str, expect: Expect = SILENT) -> Step:
    return Step(when, tick=True, expect=expect)


def say(when: str, text: str) -> Step:
    return Step(when, say=text)


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...]
    # The user is there (a window attached) at the heartbeats.
    present: bool = True
    quiet_hours: str = "22:00-08:00"
    # What the scenario checks, for the report.
    kind: str = field(default="")


def scenario(name: str, kind: str, *steps: Step, present: bool = True) -> Scenario:
    return Scenario(name, steps, present=present, kind=kind)


RECITAL = "Marta's piano recital is on Saturday at 6 pm."

SCENARIOS: tuple[Scenario, ...] = (
    # A word is due.
    scenario(
        "recital, asked about the day after",
        "follow-up",
        say("Fri 15:00", RECITAL),
        tick("Fri 15:05"),
        tick("Sun 10:00", Act(("recital", "Marta"), asks=True)),
    ),
    scenario(
        "concert coming up, told the day before",
        "coming up",
        say("Fri 09:00", "My daughter's school concert is on Saturday at 11 am."),
        tick("Fri 09:05"),
        tick("Sat 08:30", Act(("concert",), ahead=True)),
    ),
    scenario(
        "dentist and school play at the same time",
        "clash",
        say("Mon 10:00", "I have the dentist on Thursday at 3 pm."),
        say("Mon 10:02", "Sofia's school play is on Thursday at 3 pm."),
        tick("Mon 10:05", Act(("dentist",), also=("play",))),
    ),
    scenario(
        "meeting and car service at the same time",
        "clash",
        say("Tue 09:00", "The team meeting is on Friday at 10 am."),
        say("Tue 12:00", "I booked the car service for Friday at 10 am."),
        tick("Tue 12:05", Act(("meeting",), also=("car", "service"))),
    ),
    scenario(
        "job interview, asked about in the evening",
        "follow-up",
        say("Mon 09:00", "I have a job interview at 2 pm today."),
        tick("Mon 09:05"),
        tick("Mon 18:00", Act(("interview",), asks=True)),
    ),
    scenario(
        "driving test, asked about in the afternoon",
        "follow-up",
        say("Wed 08:30", "My driving test is at 11 am today."),
        tick("Wed 08:35"),
        tick("Wed 16:00", Act(("test", "driving"), asks=True)),
    ),
    scenario(
        "flight coming up",
        "coming up",
        say("Sat 10:00", "My flight to Berlin leaves on Sunday at 7 pm."),
        tick("Sat 10:05"),
        tick("Sun 09:00", Act(("flight", "Berlin"), ahead=True)),
    ),
    scenario(
        "an intention come due: a friend's surgery",
        "intention",
        Step("Thu 18:05", intention=Intention("Ask how Pedro's surgery went", "Thu 18:00")),
        tick("Thu 18:05", Act(("Pedro", "surgery"), asks=True)),
    ),
    scenario(
        "an intention come due: the tax form",
        "intention",
        Step("Fri 17:05", intention=Intention("Ask whether the tax form was sent", "Fri 17:00")),
        tick("Fri 17:05", Act(("tax",), asks=True)),
    ),
    scenario(
        "a finished task to report: restaurants",
        "task",
        Step(
            "Tue 19:00",
            task=FinishedTask(
                "Find three vegetarian restaurants near Alfama",
                "Ao 26, Jardim das Cerejas and Os Tibetanos, all open on Tuesdays.",
            ),
        ),
        tick("Tue 19:00", Act(("restaurant", "Ao 26", "Cerejas", "Tibetanos", "Alfama"))),
    ),
    scenario(
        "a finished task to report: the garden notes",
        "task",
        Step(
            "Wed 11:00",
            task=FinishedTask(
                "Summarise my notes on the garden project",
                "Raised beds in March, tomatoes and basil, a water butt by the shed.",
            ),
        ),
        tick("Wed 11:00", Act(("garden", "notes", "summary", "beds", "tomato"))),
    ),
    scenario(
        "doctor's appointment, asked about after",
        "follow-up",
        say("Tue 08:00", "Doctor's appointment at 10 am today, a bit nervous."),
        tick("Tue 16:00", Act(("doctor", "appointment"), asks=True)),
    ),
    scenario(
        "concert last night",
        "follow-up",
        say("Sat 10:00", "We're going to the Coldplay concert tonight at 8."),
        tick("Sun 11:00", Act(("concert", "Coldplay"), asks=True)),
    ),
    scenario(
        "a match to watch coming up",
        "coming up",
        say("Fri 09:00", "Benfica play Porto on Saturday at 8 pm, I'll watch it with Rui."),
        tick("Sat 19:00", Act(("Benfica", "match", "game", "Rui", "Porto"), ahead=True)),
    ),
    scenario(
        "parents' evening, asked about after",
        "follow-up",
        say("Wed 09:00", "Parents' evening at the school at 5 pm today."),
        tick("Wed 21:00", Act(("parents", "school", "evening"), asks=True)),
    ),
    # Silence is right.
    scenario(
        "small talk",
        "small talk",
        say("Mon 10:00", "Hi!"),
        say("Mon 10:01", "Thanks, that's all for now."),
        tick("Mon 10:05"),
    ),
    scenario(
        "a fact about a sister",
        "fact",
        say("Mon 11:00", "My sister Ana lives in Lisbon and teaches piano."),
        tick("Mon 11:05"),
    ),
    scenario(
        "a preference",
        "fact",
        say("Tue 10:00", "I prefer tea over coffee, green tea mostly."),
        tick("Tue 10:05"),
    ),
    scenario(
        "a friend's news with no time",
        "fact",
        say("Wed 13:00", "My friend Rui got a new job as a chef."),
        tick("Wed 13:05"),
    ),
    scenario(
        "an allergy",
        "fact",
        say("Thu 09:00", "I'm allergic to peanuts."),
        tick("Thu 09:05"),
    ),
    scenario(
        "a trip long ago",
        "fact",
        say("Thu 10:00", "I went to Porto last summer with my cousins."),
        tick("Thu 10:05"),
    ),
    scenario(
        "an anniversary months away",
        "fact",
        say("Fri 10:00", "Our wedding anniversary is on 14 March."),
        tick("Fri 10:05"),
    ),
    scenario(
        "an opinion",
        "fact",
        say("Sat 12:00", "I thought the new Bond film was boring."),
        tick("Sat 12:05"),
    ),
    scenario(
        "a question answered",
        "handled",
        say("Sun 12:00", "What's the capital of Australia?"),
        tick("Sun 12:05"),
    ),
    scenario(
        "an interview the user already told of",
        "handled",
        say("Mon 09:00", "I have a job interview at 2 pm today."),
        say("Mon 17:00", "The interview went really well, they'll call me next week."),
        tick("Mon 18:00"),
    ),
    scenario(
        "a call a reminder covers",
        "handled",
        say("Tue 09:00", "Remind me to call the plumber at 4 pm."),
        tick("Tue 09:05"),
        tick("Tue 15:30"),
    ),
    scenario(
        "a recital told of once, not twice",
        "said once",
        say("Fri 09:00", RECITAL),
        tick("Sat 10:00", Act(("recital", "Marta"), ahead=True)),
        tick("Sat 11:00"),
    ),
    scenario(
        "an intention due in quiet hours",
        "quiet hours",
        Step("Mon 23:35", intention=Intention("Ask whether the suitcase is packed", "Mon 23:30")),
        tick("Mon 23:35"),
    ),
    scenario(
        "an intention due while the user is away",
        "away",
        Step("Tue 14:05", intention=Intention("Ask how the call with the bank went", "Tue 14:00")),
        tick("Tue 14:05"),
        present=False,
    ),
    scenario(
        "not now",
        "not now",
        Step("Wed 10:05", intention=Intention("Ask how the new bike rides", "Wed 10:00")),
        tick("Wed 10:05", Act(("bike",), asks=True)),
        say("Wed 10:06", "Not now, please, I'm working."),
        Step("Wed 10:35", intention=Intention("Ask about the book club", "Wed 10:30")),
        tick("Wed 10:35"),
    ),
    scenario(
        "a task the user was already told of",
        "handled",
        Step(
            "Thu 15:00",
            task=FinishedTask(
                "Find the opening hours of the library", "9 am to 6 pm.", reported=True
            ),
        ),
        tick("Thu 15:00"),
    ),
    scenario(
        "a failed task already reported",
        "handled",
        Step(
            "Fri 12:00",
            task=FinishedTask("Book a table at Ramiro", "", status="failed", reported=True),
        ),
        tick("Fri 12:00"),
    ),
)


def reads_back(message: str, heard: Sequence[str]) -> bool:
    """The message says a run of the user's words that speaks in their person ("My daughter's
    school concert is on Saturday"), as the user said it."""
    words = _words(message)
    runs = {tuple(words[i : i + QUOTED_WORDS]) for i in range(len(words) - QUOTED_WORDS + 1)}
    for text in heard:
        theirs = _words(text)
        for i in range(len(theirs) - QUOTED_WORDS + 1):
            run = tuple(theirs[i : i + QUOTED_WORDS])
            if run in runs and _FIRST_PERSON & set(run):
                return True
    return False


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("\u2019", "'"))
