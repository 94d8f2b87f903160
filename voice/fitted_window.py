"""Whisper on an encoder window fitted to the utterance, with the guards that make it safe.

Whisper pads every input to 30 s, and its encoder's cost follows the window, not the speech:
a 2 s question pays for 30 s (benchmarks/stt_encoder.py). CTranslate2's Whisper takes a
shorter log-mel, as whisper.cpp's ``audio_ctx`` does, so a short utterance is encoded in a
window of its own length, or of the floor below which the model hears worse: 3x less time at
the same word error rate on the real recordings (benchmarks/stt_window.py,
docs/BENCHMARKS.md).

The model never saw short windows in training and sometimes repeats the utterance until the
token cap ("Set a timer for 10 minutes. Set a timer for 10 minutes."), or says something on
silence. So each decode is checked: a no-speech check as faster-whisper makes it, a token cap
from the length of the audio, a speaking-rate bound, and a cut where a run of words starts to
repeat itself to the end of the decode. What no guard can vouch for goes back to the full
30 s window (``None``), so the fitted path is never worse than the path it replaces; only
slower when it has to fall back.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

SAMPLE_RATE = 16_000
HOP = 160  # samples per log-mel frame (10 ms)
TAIL_S = 0.5  # silence after the speech inside the window, as the full window always has
# Longer utterances go to the full path, whose 30 s windows slide over any length.
LONGEST_S = 25.0
# English speech is 2-4 words a second, about 1.3 tokens a word; numbers and names cost more.
TOKENS_PER_S = 8.0
TOKENS_ALWAYS = 8
MAX_WORDS_PER_S = 5.0
WORDS_ALWAYS = 2
# "Five, five" is said; a repeated turn this long is more often a loop than speech.
LOOP_WORDS = 3
# faster-whisper's own thresholds: silent when both hold, unsure below the log-probability.
NO_SPEECH_AT = 0.6
UNSURE_BELOW = -1.0


@dataclass(frozen=True)
class Tuning:
    """How small a window a model takes without hearing worse, and the beam it needs there:
    chosen per model on benchmarks/stt_window.py (docs/BENCHMARKS.md). Unmeasured models get
    the default, the most cautious setting measured."""

    min_window_s: float = 15.0
    beam_size: int = 1


CAUTIOUS = Tuning()


@dataclass(frozen=True)
class Decoded:
    text: str
    avg_logprob: float
    no_speech_prob: float
    hit_cap: bool
    window_s: float


@dataclass(frozen=True)
class Accepted:
    """A fitted decode the guards let through: its text, perhaps cut where a loop began."""

    text: str
    avg_logprob: float
    no_speech_prob: float
    window_s: float


class FittedWindow:
    """Greedy decoding of one utterance in a window fitted to it, on a loaded faster-whisper
    model (same weights, same tokenizer, same suppressed tokens as its ``transcribe``)."""

    def __init__(self, model: WhisperModel, language: str, tuning: Tuning) -> None:
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        self._model = model
        self.language = language
        self.tuning = tuning
        self._tokenizer = Tokenizer(
            model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language
        )
        self._suppressed = get_suppressed_tokens(self._tokenizer, (-1,))

    def transcribe(self, audio: NDArray[np.float32], prompt: str | None) -> Accepted | None:
        """The utterance's transcript, or None when it must take the full window."""
        duration = len(audio) / SAMPLE_RATE
        if duration > LONGEST_S:
            return None
        return accept(self.decode(audio, prompt), duration)

    def decode(self, audio: NDArray[np.float32], prompt: str | None) -> Decoded:
        import ctranslate2

        window = window_frames(len(audio), self.tuning.min_window_s)
        padded = np.zeros(window * HOP, np.float32)
        padded[: len(audio)] = audio[: len(padded)]
        features = self._model.feature_extractor(padded)[:, :window]
        tokenizer = self._tokenizer
        previous = tokenizer.encode(" " + prompt.strip()) if prompt and prompt.strip() else []
        start = self._model.get_prompt(tokenizer, previous, without_timestamps=True)
        cap = token_cap(len(audio) / SAMPLE_RATE)
        result = self._model.model.generate(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])),
            [start],
            beam_size=self.tuning.beam_size,
            max_length=len(start) + cap,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=True,
            suppress_tokens=self._suppressed,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < tokenizer.eot]
        # CTranslate2 scores a sequence by its summed log-probability over its length; faster-
        # whisper counts the end token too.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        return Decoded(
            text=tokenizer.decode(tokens).strip(),
            avg_logprob=avg_logprob,
            no_speech_prob=result.no_speech_prob,
            hit_cap=len(result.sequences_ids[0]) >= cap,
            window_s=window * HOP / SAMPLE_RATE,
        )


def window_frames(samples: int, min_window_s: float) -> int:
    """Log-mel frames of the window: the speech and a tail, at least ``min_window_s``, in whole
    seconds (so windows repeat and CTranslate2's buffers are reused), at most 30 s."""
    frames = max(math.ceil(samples / HOP + TAIL_S * 100), int(min_window_s * 100))
    return min(3000, frames + (-frames) % 100)


def token_cap(duration_s: float) -> int:
    return int(TOKENS_ALWAYS + TOKENS_PER_S * duration_s)


def accept(decoded: Decoded, duration_s: float) -> Accepted | None:
    """The guards: silence is empty; a loop that ran into the cap or past any speaking rate
    is cut back to its first turn; a whole sentence repeated within both, or a decode too
    long, too fast or unsure for its audio, is handed to the full window (None)."""
    if decoded.no_speech_prob > NO_SPEECH_AT and decoded.avg_logprob < UNSURE_BELOW:
        return Accepted("", decoded.avg_logprob, decoded.no_speech_prob, decoded.window_s)
    text = decoded.text
    cut = loop_cut(text)
    if decoded.hit_cap or too_fast(text, duration_s):
        if cut is None or too_fast(cut, duration_s):
            return None
        text = cut
    elif cut is not None and len(_WORD.findall(cut)) >= LOOP_WORDS:
        return None  # a sentence said twice, or a loop that ended on time: the full window knows
    if decoded.avg_logprob < UNSURE_BELOW:
        return None
    return Accepted(text, decoded.avg_logprob, decoded.no_speech_prob, decoded.window_s)


def too_fast(text: str, duration_s: float) -> bool:
    return len(_WORD.findall(text)) > WORDS_ALWAYS + MAX_WORDS_PER_S * duration_s


_WORD = re.compile(r"[\w']+")


def loop_cut(text: str) -> str | None:
    """The text's first turn when all of it is that turn said again and again, or None.

    A short window's loop starts the utterance over until the token cap ends it: "Turn the
    lights off. Turn the lights off. Turn the". The repeat must be three words long at least
    (or the whole turn, when shorter), and the first turn is kept with its punctuation. A
    decode that repeats only its end, or drifts, is not vouched for (the full window takes
    it).
    """
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    words = [text[a:b].lower() for a, b in spans]
    count = len(words)
    for period in range(1, count):
        if count - period < min(period, 3):
            break
        if all(words[i] == words[i - period] for i in range(period, count)):
            end = spans[period - 1][1]
            while end < len(text) and not text[end].isspace() and not text[end].isalnum():
                end += 1  # the first turn's closing punctuation
            return text[:end].strip()
    return None
