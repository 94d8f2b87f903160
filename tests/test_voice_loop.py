"""The speech loop end to end on a simulated duplex device, with the real models: Silero VAD,
Whisper tiny.en and Piper. Replies are spoken through the device, their echo comes back into
the microphone, and a real recording of a person cuts in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from numpy.typing import NDArray

from voice.audio import SAMPLE_RATE, Frame
from voice.device import EchoPath, SimulatedDevice, load_wav
from voice.loop import (
    BargedIn,
    FirstAudio,
    Heard,
    HeardSoFar,
    LevelChanged,
    NotHeard,
    StateChanged,
    VoiceConfig,
    VoiceEvent,
    VoiceLoop,
)
from voice.speech_out import ChunkConfig, ReplySpeech, SentenceChunker, speakable
from voice.stt import SpeechToText, Transcript, WhisperSTT, not_heard
from voice.timing import Timings
from voice.tts import PiperTTS
from voice.turn_end import SmartTurn, TurnJudge
from voice.vad import SileroVAD
from voice.wer import word_error_rate

REPLY = (
    "Tomorrow in Lisbon it will be sunny, with a high of twenty four degrees. A light breeze "
    "comes from the west in the afternoon, and the evening stays warm and clear."
)
GO_FORWARD = Path(__file__).parent.parent / "voice" / "data" / "goforward.wav"


# Cutting a streamed reply into speakable chunks (no models)


def chunks_of(text: str, step: int = 3, config: ChunkConfig | None = None) -> list[str]:
    chunker = SentenceChunker(config or ChunkConfig())
    out: list[str] = []
    for start in range(0, len(text), step):
        out += chunker.feed(text[start : start + step])
    return out + chunker.flush()


def test_the_first_chunk_is_a_clause_and_the_rest_are_sentences() -> None:
    chunks = chunks_of("Sure, I can do that, Mr. Stolz. It is 3.5 km away! Bye.")
    assert chunks == [
        "Sure, I can do that,",
        "Mr. Stolz.",
        "It is 3.5 km away!",
        "Bye.",
    ]


def test_a_finished_sentence_goes_out_before_the_next_text_arrives() -> None:
    chunker = SentenceChunker()
    assert chunker.feed("Sure thing, it is done.") == ["Sure thing, it is done."]
    assert chunker.feed(" It costs 3.") == []  # "3." may go on as "3.5"
    assert chunker.feed("5 euros.") == ["It costs 3.5 euros."]


def test_chunking_loses_and_repeats_nothing() -> None:
    text = "One, two, three four. " * 30 + "No punctuation at the end"
    for step in (1, 2, 7, 50):
        chunks = chunks_of(text, step)
        assert " ".join(chunks).split() == text.split()


def test_a_first_chunk_without_punctuation_is_cut_after_enough_words() -> None:
    chunker = SentenceChunker(ChunkConfig(first_max_words=6))
    assert chunker.feed("one two three four five") == []  # "five" may still be growing
    assert chunker.feed(" six ") == ["one two three four five six"]


def test_a_first_chunk_is_cut_as_the_model_streams_its_tokens() -> None:
    # The model's tokens carry the space before a word, never after it.
    chunker = SentenceChunker(ChunkConfig(first_max_words=5))
    pieces = ["Rem", "ind", " me", " to", " water", " the", " plants", " tonight", "."]
    out = [chunk for piece in pieces for chunk in chunker.feed(piece)]
    assert out == ["Remind me to water the", "plants tonight."]


def test_an_overlong_sentence_is_cut_at_a_clause() -> None:
    text = "Fine. " + "word " * 30 + "and then, " + "more " * 40 + "end."
    chunks = chunks_of(text, 5, ChunkConfig(max_chars=120))
    assert all(len(chunk) <= 400 for chunk in chunks) and len(chunks) >= 3
    assert " ".join(chunks).split() == text.split()


def test_markdown_is_read_as_words() -> None:
    assert speakable("**Bold** and `code` with [a link](https://x.y) or https://a.b/c") == (
        "Bold and code with a link or a link"
    )
    assert speakable("# Title\n- first\n- second\n```python\nx = 1\n```") == (
        "Title first second (code is on screen)"
    )


def test_noise_phrases_are_dropped_only_when_whisper_was_unsure() -> None:
    def heard(text: str, logprob: float, no_speech: float) -> str | None:
        return not_heard(Transcript(text, "en", 1.0, logprob, no_speech))

    assert heard("Thank you.", -0.5, 0.05) is None  # said and heard clearly
    assert heard("Thank you.", -0.9, 0.4) is not None
    assert heard("You.", -0.87, 0.3) is not None
    assert heard("[Music]", -0.2, 0.1) is not None
    assert heard("", -1.0, 0.9) is not None
    assert heard("Thank you for the reminder.", -0.9, 0.4) is None


# Whisper and Piper, for real


@pytest.mark.slow
def test_whisper_drops_silence_and_noise_and_keeps_a_spoken_thanks(
    fast_stt: WhisperSTT, fast_tts: PiperTTS
) -> None:
    rng = np.random.default_rng(3)
    silence = np.zeros(2 * SAMPLE_RATE, dtype=np.float32)
    noise = rng.normal(0, 0.05, 2 * SAMPLE_RATE).astype(np.float32)
    for audio in (silence, noise):
        assert not_heard(fast_stt.transcribe(audio)) is not None
    thanks = fast_stt.transcribe(fast_tts.speak("Thank you.").as_float(SAMPLE_RATE))
    assert not_heard(thanks) is None and "thank" in thanks.text.lower()


@pytest.mark.slow
def test_a_names_prompt_steers_the_spelling(fast_stt: WhisperSTT, fast_tts: PiperTTS) -> None:
    # Unprimed, tiny.en hears "Jonah" here; primed, "Joana" on one CPU and "Joanna" on another
    # (int8 kernels differ): the prompt's work is to make it a name, spelt close to the user's.
    audio = fast_tts.speak("Remind me to call Joana.").as_float(SAMPLE_RATE)
    primed = fast_stt.transcribe(audio, prompt="Names: Joana.")
    assert "Joan" in primed.text, primed.text
    assert "Jonah" not in primed.text


@pytest.mark.slow
def test_a_reply_plays_while_later_sentences_are_synthesised(fast_tts: PiperTTS) -> None:
    device = SimulatedDevice(realtime=True, until_closed=True)
    speech = ReplySpeech(fast_tts, device.play)
    frames = device.frames()
    speech.feed(REPLY)
    speech.finish()
    # The first chunk is queued long before the whole reply is synthesised.
    while device.queued == 0:
        time.sleep(0.005)
    queued_first = device.queued
    assert queued_first < len(fast_tts.speak(REPLY).as_float(SAMPLE_RATE)) * 0.6
    while not speech.done:
        speech.played(next(frames).speech_played)
    device.close()
    assert speech.spoken_text().split() == speakable(REPLY).split()


@pytest.mark.slow
def test_the_first_content_sound_comes_after_an_acknowledgement(fast_tts: PiperTTS) -> None:
    """A reply that opens with a fixed acknowledgement ("Okay.") before its words are ready:
    its first sound is the acknowledgement, its first content sound the words after it; told
    once, when the content is heard. A reply of the acknowledgement alone is told when it has
    played out."""
    for fed, content in ((["Okay.", " The kettle is on."], True), (["Okay."], False)):
        device = SimulatedDevice(realtime=True, until_closed=True)
        timings = Timings(end_of_speech=time.monotonic())
        told: list[Timings] = []
        speech = ReplySpeech(
            fast_tts, device.play, timings=timings, on_first_audio=told.append, filler="Okay."
        )
        for piece in fed:
            speech.feed(piece)
        speech.finish()
        assert speech.wait_synthesised(30)
        frames = device.frames()
        while not speech.done:
            speech.played(next(frames).speech_played)
        device.close()
        assert len(told) == 1
        assert timings.first_audio_out is not None
        if content:
            assert timings.first_content_audio_out is not None
            acknowledgement = len(fast_tts.speak("Okay.").as_float(SAMPLE_RATE)) / SAMPLE_RATE
            assert timings.first_content_audio_out - timings.first_audio_out >= (
                0.8 * acknowledgement
            )
        else:
            assert timings.first_content_audio_out is None


@pytest.mark.slow
def test_what_was_heard_is_what_was_played(fast_tts: PiperTTS) -> None:
    device = SimulatedDevice(realtime=False, until_closed=True)
    speech = ReplySpeech(fast_tts, device.play)
    speech.feed(REPLY)
    speech.finish()
    assert speech.wait_synthesised(30)
    frames = device.frames()
    total = device.queued
    while device.queued > total // 2:
        speech.played(next(frames).speech_played)
    speech.cancel()
    device.stop_playback()
    heard = speech.spoken_text().split()
    words = speakable(REPLY).split()
    assert heard == words[: len(heard)] and 0.3 < len(heard) / len(words) < 0.7
    assert speech.done
    device.close()


# The loop


E = TypeVar("E", bound=VoiceEvent)


class CountingSTT:
    """The real recogniser, noting how long each audio it was given was."""

    def __init__(self, stt: WhisperSTT) -> None:
        self.stt = stt
        self.lengths: list[int] = []

    def transcribe(self, audio: NDArray[np.float32], prompt: str | None = None) -> Transcript:
        self.lengths.append(len(audio))
        return self.stt.transcribe(audio, prompt)

    def transcribe_file(self, path: Path) -> Transcript:
        return self.stt.transcribe_file(path)


class Recorder:
    """The loop's events, with a way to wait for one."""

    def __init__(self) -> None:
        self.events: list[tuple[float, VoiceEvent]] = []
        self._changed = threading.Condition()

    def __call__(self, event: VoiceEvent) -> None:
        with self._changed:
            self.events.append((time.monotonic(), event))
            self._changed.notify_all()

    def of(self, kind: type[E]) -> list[E]:
        return [e for _, e in self.events if isinstance(e, kind)]

    def wait(self, test: Callable[[], object], timeout: float = 30) -> None:
        with self._changed:
            assert self._changed.wait_for(test, timeout), [
                (round(at - self.events[0][0], 2), e)
                for at, e in self.events
                if not isinstance(e, LevelChanged)
            ][-12:]


@pytest.fixture
def run_loop(
    fast_stt: WhisperSTT, fast_tts: PiperTTS
) -> Iterator[Callable[..., tuple[VoiceLoop, SimulatedDevice, Recorder]]]:
    started: list[VoiceLoop] = []

    def start(
        config: VoiceConfig | None = None,
        judge: TurnJudge | None = None,
        stt: SpeechToText | None = None,
        **device: object,
    ) -> tuple[VoiceLoop, SimulatedDevice, Recorder]:
        simulated = SimulatedDevice(realtime=True, until_closed=True, **device)  # type: ignore[arg-type]
        recorder = Recorder()
        loop = VoiceLoop(
            simulated,
            stt or fast_stt,
            fast_tts,
            SileroVAD(),
            recorder,
            config or VoiceConfig(),
            lambda: "Names: Joana, Lisbon.",
            judge,
        )
        loop.start()
        started.append(loop)
        return loop, simulated, recorder

    yield start
    for loop in started:
        loop.close()


def spoken(tts: PiperTTS, text: str) -> Frame:
    return tts.speak(text).as_float(SAMPLE_RATE)


@pytest.mark.slow
def test_a_question_is_heard_answered_and_cut_off_by_the_user(
    run_loop: Callable[..., tuple[VoiceLoop, SimulatedDevice, Recorder]], fast_tts: PiperTTS
) -> None:
    question = "What is the weather like in Lisbon tomorrow?"
    loop, device, events = run_loop(echo=EchoPath(gain_db=-10, delay_ms=40), noise_dbfs=-55)
    device.speak(
        np.concatenate([np.zeros(SAMPLE_RATE // 2, np.float32), spoken(fast_tts, question)])
    )
    events.wait(lambda: events.of(Heard))
    heard = events.of(Heard)[0]
    assert isinstance(heard, Heard) and word_error_rate(question, heard.transcript.text) <= 0.05
    assert heard.transcript.confidence > 0.5 and heard.timings.stt_done is not None

    reply = loop.speak(heard.timings)
    for word in REPLY.split(" "):
        reply.feed(word + " ")
    reply.finish()
    events.wait(lambda: events.of(FirstAudio))
    stages = heard.timings.since_end_of_speech_ms()
    assert list(stages) == [
        "turn_decided",
        "stt_done",
        "first_token",
        "first_word",
        "first_audio_synthesized",
        "first_audio_out",
        "first_content_audio_out",
    ]
    assert list(stages.values()) == sorted(stages.values())
    assert stages["first_content_audio_out"] == stages["first_audio_out"], "no acknowledgement"

    # The reply plays (counted in audio the loop has taken in, not in wall-clock time, which a
    # loaded machine stretches); its echo must not count as the user.
    events.wait(lambda: len(reply.spoken_text().split()) >= 6)
    assert events.of(BargedIn) == [] and len(events.of(Heard)) == 1
    device.speak(load_wav(GO_FORWARD))  # a real person: "go forward ten meters"
    events.wait(lambda: events.of(BargedIn))
    cut = events.of(BargedIn)[0]
    assert isinstance(cut, BargedIn) and cut.stop_ms < 150
    assert 0 < len(cut.heard.split()) < len(REPLY.split())
    assert REPLY.startswith(" ".join(cut.heard.split()[:-1]))
    assert device.queued == 0  # playback stopped
    # The interruption itself is heard as the next turn.
    events.wait(lambda: len(events.of(Heard)) == 2)
    second = events.of(Heard)[1]
    assert isinstance(second, Heard)
    # Heard over what is left of the echo, by tiny.en: "Go for more 10 meters." happens.
    assert word_error_rate("go forward ten meters", second.transcript.text) <= 0.5
    states = [e.state for e in events.of(StateChanged)]
    assert {"listening", "hearing", "speaking"} <= set(states)
    assert events.of(LevelChanged)


@pytest.mark.slow
def test_muted_hears_nothing_and_push_to_talk_hears_while_the_key_is_down(
    run_loop: Callable[..., tuple[VoiceLoop, SimulatedDevice, Recorder]], fast_tts: PiperTTS
) -> None:
    loop, device, events = run_loop(VoiceConfig(mode="muted"))
    device.speak(spoken(fast_tts, "Can you hear me?"))
    events.wait(lambda: events.of(StateChanged))
    time.sleep(2.5)
    assert events.of(Heard) == [] and events.of(NotHeard) == []

    loop.set_mode("push_to_talk")
    loop.talk(down=True)
    device.speak(spoken(fast_tts, "Remind me to call Joana."))
    time.sleep(2.2)
    loop.talk(down=False)
    events.wait(lambda: events.of(Heard))
    heard = events.of(Heard)[0]
    assert isinstance(heard, Heard) and "joana" in heard.transcript.text.lower()
    states = [e.state for e in events.of(StateChanged)]
    assert states[0] == "muted" and "hearing" in states and states[-1] == "push_to_talk"


@pytest.mark.slow
def test_a_finished_question_is_taken_at_a_short_pause_when_a_judge_hears_it_end(
    run_loop: Callable[..., tuple[VoiceLoop, SimulatedDevice, Recorder]],
    fast_tts: PiperTTS,
    turn_judge: SmartTurn,
) -> None:
    question = "Can you remind me to call my sister tomorrow?"
    _, device, events = run_loop(judge=turn_judge, noise_dbfs=-70)
    device.speak(
        np.concatenate([np.zeros(SAMPLE_RATE // 2, np.float32), spoken(fast_tts, question)])
    )
    events.wait(lambda: events.of(Heard))
    heard = events.of(Heard)[0]
    assert isinstance(heard, Heard) and word_error_rate(question, heard.transcript.text) <= 0.1
    decided = heard.timings.since_end_of_speech_ms()["turn_decided"]
    # 200 ms of pause and the judge's ~0.1 s, not the 600 ms of silence.
    assert decided < VoiceConfig().endpoint.end_silence_ms - 100, decided


@pytest.mark.slow
def test_what_was_said_so_far_is_transcribed_at_each_pause_and_the_last_is_the_turns(
    run_loop: Callable[..., tuple[VoiceLoop, SimulatedDevice, Recorder]],
    fast_stt: WhisperSTT,
    fast_tts: PiperTTS,
) -> None:
    """Every second of speech and each pause inside the sentence give a partial transcript
    the owner may read ahead (a speculation the rest of the sentence then overtakes); the
    pause at its end gives the transcript the turn uses, so once the silence ends the turn
    nothing is left to transcribe."""
    sentence = "When I get home tonight, after the gym, remind me to water the plants."
    stt = CountingSTT(fast_stt)
    _, device, events = run_loop(stt=stt, noise_dbfs=-70)
    device.speak(
        np.concatenate([np.zeros(SAMPLE_RATE // 2, np.float32), spoken(fast_tts, sentence)])
    )
    events.wait(lambda: events.of(Heard))
    heard = events.of(Heard)[0]
    assert isinstance(heard, Heard) and word_error_rate(sentence, heard.transcript.text) <= 0.15
    partial = [e for e in events.of(HeardSoFar) if isinstance(e, HeardSoFar)]
    assert any(not e.paused for e in partial), "heard while the user was still speaking"
    paused = [e.text for e in partial if e.paused]
    assert len(paused) >= 2, paused
    assert len(paused[0].split()) < len(heard.transcript.text.split()), "a partial first"
    assert paused[-1] == heard.transcript.text, "the last pause's transcript is the turn's"
    assert len(set(stt.lengths)) == len(stt.lengths), "no audio was transcribed twice"
