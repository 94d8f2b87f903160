"""A reply spoken while it is still being written: the text stream is cut into chunks (a clause
first, so speech starts early, then whole sentences), each chunk is synthesised on a worker
thread and queued on the speaker, so the next chunk is synthesised while this one plays.

What was actually heard is counted from the samples the device played, so an interrupted
reply can report the words the user heard and no more.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from voice.audio import SAMPLE_RATE, Frame
from voice.timing import Timings
from voice.tts import TextToSpeech

log = logging.getLogger(__name__)

# Abbreviations whose full stop does not end a sentence.
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "a.m", "p.m"}
)
# A sentence ends at its punctuation followed by a space, or by nothing yet: the last sentence
# of a reply must not wait for the turn to end (a digit before a "." waits: "3.5").
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*(?=\s)|(?<![0-9])[.!?…]+[\"')\]]*$|\n+")
_CLAUSE_END = re.compile("[,;:\u2014\u2013]+(?=\\s)")  # also em and en dashes
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkConfig:
    # The first chunk may end at a clause (", ; : —") once it has this many words: shorter
    # pieces sound clipped, longer ones delay the first audio.
    first_clause_words: int = 3
    # A first chunk with no punctuation at all is cut at a word boundary after this many words:
    # each word more is ~1.3 tokens, ~55 ms of the fast model's writing on two cores before
    # anything is heard (docs/BENCHMARKS.md); the model writes ~8 words a second and speech
    # says ~2.5, so the next chunk is ready before this one has played.
    first_max_words: int = 5
    # Later chunks are whole sentences; one longer than this is cut at a clause.
    max_chars: int = 240


class SentenceChunker:
    """Text deltas in, speakable chunks out, in order; nothing is dropped or repeated."""

    def __init__(self, config: ChunkConfig = ChunkConfig()) -> None:
        self.config = config
        self._buffer = ""
        self._first = True

    def feed(self, delta: str) -> list[str]:
        self._buffer += delta
        chunks: list[str] = []
        while (cut := self._next_cut()) is not None:
            chunk, self._buffer = self._buffer[:cut], self._buffer[cut:]
            self._first = False
            if spoken := speakable(chunk):
                chunks.append(spoken)
        return chunks

    def flush(self) -> list[str]:
        rest, self._buffer = self._buffer, ""
        spoken = speakable(rest)
        return [spoken] if spoken else []

    def _next_cut(self) -> int | None:
        text = self._buffer
        sentence = next(
            (m.end() for m in _SENTENCE_END.finditer(text) if not _abbreviation_before(text, m)),
            None,
        )
        if self._first:
            clause = next(
                (
                    m.end()
                    for m in _CLAUSE_END.finditer(text, 0, sentence or len(text))
                    if len(text[: m.start()].split()) >= self.config.first_clause_words
                ),
                None,
            )
            if clause is not None or sentence is not None:
                return clause or sentence
            return self._after_enough_words(text)
        if sentence is not None or len(text) <= self.config.max_chars:
            return sentence
        clauses = [m.end() for m in _CLAUSE_END.finditer(text)]
        if clauses:
            return clauses[-1]
        space = text.rfind(" ", 0, self.config.max_chars)
        return space if space > 0 else None

    def _after_enough_words(self, text: str) -> int | None:
        """Where to cut a first chunk that has no punctuation yet: after its first
        ``first_max_words`` words once each is known complete (a word is complete when white
        space follows it; the model's tokens bring that space at the start of the next word,
        so the last word seen may still be growing)."""
        enough = self.config.first_max_words
        words = list(_WORD.finditer(text))
        if len(words) > enough or (len(words) == enough and text[-1:].isspace()):
            return words[enough - 1].end()
        return None


def _abbreviation_before(text: str, match: re.Match[str]) -> bool:
    end = match.start()
    if text[end : end + 1] != ".":
        return False
    word = text[:end].rsplit(maxsplit=1)[-1].lower() if text[:end].strip() else ""
    # A single letter is an initial ("J. R. R. Tolkien").
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


_CODE_BLOCK = re.compile(r"```.*?(```|$)", re.DOTALL)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)", re.MULTILINE)
_EMPHASIS = re.compile(r"[*_`~]+")


def speakable(text: str) -> str:
    """Markdown as it should be read aloud: no code, no URLs, no markup symbols."""
    text = _CODE_BLOCK.sub(" (code is on screen) ", text)
    text = _LINK.sub(r"\1", text)
    text = _URL.sub("a link", text)
    text = _LINE_MARK.sub("", text)
    text = _EMPHASIS.sub("", text)
    return " ".join(text.split())


@dataclass
class _Queued:
    text: str
    samples: int


@dataclass
class ReplySpeech:
    """One reply on its way to the speaker.

    ``feed`` and ``finish`` come from whoever streams the reply; ``played`` comes from the
    audio loop for every frame; ``cancel`` from a barge-in. All are thread-safe.
    """

    tts: TextToSpeech
    play: Callable[[Frame], None]
    chunking: ChunkConfig = field(default_factory=ChunkConfig)
    # Filled in as the reply's text, first audio and first sound come (a typed turn has none).
    timings: Timings | None = None
    # Told once the first sound of the reply's content is out (after a ``filler``), or the
    # reply has played out with none.
    on_first_audio: Callable[[Timings], None] | None = None
    # A fixed phrase the reply may open with, said before its words are ready (an
    # acknowledgement): its sound is not the reply's content.
    filler: str = ""

    def __post_init__(self) -> None:
        self._chunker = SentenceChunker(self.chunking)
        self._pending: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued: list[_Queued] = []
        self._played = 0
        self._content_out = False
        self._cancelled = threading.Event()
        self._synthesised = threading.Event()
        self._worker = threading.Thread(target=self._synthesise, name="tts", daemon=True)
        self._worker.start()

    def feed(self, delta: str) -> None:
        if self.timings is not None:
            self.timings.mark("first_token")
            if any(character.isalnum() for character in delta):
                self.timings.mark("first_word")
        for chunk in self._chunker.feed(delta):
            self._pending.put(chunk)

    def finish(self) -> None:
        for chunk in self._chunker.flush():
            self._pending.put(chunk)
        self._pending.put(None)

    def cancel(self) -> None:
        self._cancelled.set()
        self._pending.put(None)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def played(self, samples: int) -> None:
        """The device played ``samples`` more of this reply's audio."""
        if samples <= 0:
            return
        with self._lock:
            first = self._played == 0
            self._played += samples
            lead = self._filler_samples()
            content = not self._content_out and lead is not None and self._played > lead
            played_out = self._synthesised.is_set() and self._played >= self._queued_samples()
            told = content or (played_out and not self._content_out)
            self._content_out = self._content_out or told
        if self.timings is None:
            return
        # One instant for both: the same block, when nothing opened the reply before it.
        now = time.monotonic()
        if first:
            self.timings.mark("first_audio_out", now)
        if content:
            self.timings.mark("first_content_audio_out", now)
        if told and self.on_first_audio is not None:
            self.on_first_audio(self.timings)

    def _filler_samples(self) -> int | None:
        """The samples of the fillers the reply opened with, once something else is queued
        after them (None before: its content has not been synthesised yet)."""
        lead = 0
        for item in self._queued:
            if not self.filler or item.text.strip() != self.filler:
                return lead
            lead += item.samples
        return None

    def _queued_samples(self) -> int:
        return sum(item.samples for item in self._queued)

    @property
    def started(self) -> bool:
        """Some of its audio has been queued on the speaker."""
        with self._lock:
            return bool(self._queued)

    @property
    def done(self) -> bool:
        """Everything was synthesised and has been played (or the reply was cancelled)."""
        if self._cancelled.is_set():
            return True
        with self._lock:
            return self._synthesised.is_set() and self._played >= self._queued_samples()

    def wait_synthesised(self, timeout: float | None = None) -> bool:
        return self._synthesised.wait(timeout)

    def spoken_text(self) -> str:
        """The words the speaker has played so far; a chunk cut midway counts the share of
        its words whose audio went out."""
        with self._lock:
            left = self._played
            words: list[str] = []
            for item in self._queued:
                chunk_words = item.text.split()
                if left >= item.samples:
                    words += chunk_words
                    left -= item.samples
                    continue
                if item.samples:
                    words += chunk_words[: int(len(chunk_words) * left / item.samples)]
                break
        return " ".join(words)

    def _synthesise(self) -> None:
        try:
            while (chunk := self._pending.get()) is not None:
                if self._cancelled.is_set():
                    break
                item = _Queued(chunk, 0)
                for speech in self.tts.stream(chunk):
                    if self._cancelled.is_set():
                        return
                    audio = speech.as_float(SAMPLE_RATE)
                    if self.timings is not None:
                        self.timings.mark("first_audio_synthesized")
                    with self._lock:
                        # Piper may voice one chunk as several pieces: they count as one.
                        if not item.samples:
                            self._queued.append(item)
                        item.samples += len(audio)
                    self.play(audio)
        except Exception:  # a broken voice must not take the reply's text with it
            log.exception("speech synthesis failed")
        finally:
            self._synthesised.set()
