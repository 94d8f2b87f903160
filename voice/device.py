"""Duplex audio: the microphone in and the speaker out, as one stream of 32 ms frames.

The voice loop reads, for every frame, what the microphone heard *and* the exact samples that
went to the speaker during that frame, because the echo canceller needs that reference aligned
with the capture. ``SoundDevice`` is the real thing (PortAudio through sounddevice);
``SimulatedDevice`` is its headless twin, with a WAV or array as the microphone, an optional
echo path from the speaker back into the microphone and an optional WAV recording of what was
played, so whole sessions run in tests and benchmarks without hardware.
"""

from __future__ import annotations

import queue
import threading
import time
import wave
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from voice.audio import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE, Frame, resample

# About 2 s of frames between the audio thread and the reader: enough to ride out a slow
# Whisper call in the reader's thread, small enough that a stalled reader costs little memory.
_BACKLOG_FRAMES = 64


@dataclass(frozen=True)
class DuplexFrame:
    mic: Frame
    """FRAME_SAMPLES of microphone audio at 16 kHz."""
    played: Frame
    """The FRAME_SAMPLES sent to the speaker during the same frame (zeros when nothing plays)."""
    speech_played: int
    """How many of ``played`` came from the play queue, to count what was really played."""
    at: float
    """time.monotonic() at the end of the frame."""


class DuplexAudio(Protocol):
    def frames(self) -> Iterator[DuplexFrame]:
        """Blocks for the next frame; ends when the device is closed or its source runs out."""

    def play(self, samples: Frame) -> None:
        """Queue 16 kHz audio after whatever is queued. Thread-safe."""

    def stop_playback(self) -> int:
        """Drop the play queue (barge-in), effective from the next frame; samples dropped."""

    @property
    def queued(self) -> int:
        """Samples still waiting to be played."""

    def close(self) -> None: ...


class AudioUnavailable(Exception):
    """No microphone can be used; the message is one line meant for the user."""


class SampleQueue:
    """A thread-safe FIFO of samples, read in fixed-size frames padded with silence."""

    def __init__(self) -> None:
        self._chunks: deque[Frame] = deque()
        self._offset = 0  # samples of _chunks[0] already taken
        self._size = 0
        self._lock = threading.Lock()

    def put(self, samples: Frame) -> None:
        chunk = np.asarray(samples, dtype=np.float32).reshape(-1)
        if len(chunk) == 0:
            return
        with self._lock:
            self._chunks.append(chunk)
            self._size += len(chunk)

    def take(self, count: int) -> tuple[Frame, int]:
        """``count`` samples, zero-padded when fewer are queued, and how many were real."""
        out = np.zeros(count, dtype=np.float32)
        filled = 0
        with self._lock:
            while filled < count and self._chunks:
                head = self._chunks[0]
                step = min(count - filled, len(head) - self._offset)
                out[filled : filled + step] = head[self._offset : self._offset + step]
                filled += step
                self._offset += step
                if self._offset == len(head):
                    self._chunks.popleft()
                    self._offset = 0
            self._size -= filled
        return out, filled

    def clear(self) -> int:
        with self._lock:
            dropped = self._size
            self._chunks.clear()
            self._offset = 0
            self._size = 0
        return dropped

    def __len__(self) -> int:
        return self._size


def load_wav(path: Path) -> Frame:
    """A 16-bit PCM WAV file as mono float32 at 16 kHz (channels averaged, resampled)."""
    with wave.open(str(path), "rb") as source:
        if source.getsampwidth() != 2:
            raise ValueError(f"{path}: only 16-bit PCM WAV is supported")
        rate, channels = source.getframerate(), source.getnchannels()
        pcm = np.frombuffer(source.readframes(source.getnframes()), dtype="<i2")
    mono = pcm.reshape(-1, channels).astype(np.float32).mean(axis=1) / 32768.0
    return resample(mono.astype(np.float32), rate, SAMPLE_RATE)


def _pcm16(samples: Frame) -> bytes:
    return (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


class _PlayQueue:
    """The speaker side both devices share: audio queued by any thread, taken frame by
    frame by the device, dropped at once on a barge-in."""

    def __init__(self) -> None:
        self._playback = SampleQueue()

    def play(self, samples: Frame) -> None:
        self._playback.put(samples)

    def stop_playback(self) -> int:
        return self._playback.clear()

    @property
    def queued(self) -> int:
        return len(self._playback)


class SoundDevice(_PlayQueue):
    """A sounddevice stream at 16 kHz mono in blocks of one frame.

    The PortAudio callback fills the speaker block from the play queue and hands copies of
    both blocks to the reader, so ``played`` is exactly what the speaker got. With no output
    device the stream is input-only and queued audio drains at the playback rate into
    nothing: ``played`` is then silence (nothing can echo) while ``speech_played`` still
    counts what drained, so the turn logic proceeds as if it had been heard.
    """

    def __init__(self) -> None:
        super().__init__()
        self._blocks: queue.Queue[DuplexFrame | None] = queue.Queue(_BACKLOG_FRAMES)
        self._stream: Any = None
        self._closed = threading.Event()
        self.overflows = 0
        """Input blocks PortAudio lost before the callback saw them."""
        self.underflows = 0
        """Output blocks the speaker ran dry on."""
        self.dropped_frames = 0
        """Frames lost because the reader fell more than the backlog behind."""

    def frames(self) -> Iterator[DuplexFrame]:
        while True:
            try:
                block = self._blocks.get(timeout=0.5)
            except queue.Empty:
                # PortAudio stops calling back when the device goes away (unplugged).
                if self._stream is not None and not self._stream.active:
                    return
                continue
            if block is None:
                return
            yield block

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
        self._hand_over(None)

    def _duplex_callback(
        self,
        indata: NDArray[np.float32],
        outdata: NDArray[np.float32],
        count: int,
        timing: Any,
        status: Any,
    ) -> None:
        self.underflows += bool(status.output_underflow)
        played, queued = self._playback.take(count)
        outdata[:, 0] = played
        self._deliver(indata, played, queued, status)

    def _input_callback(
        self, indata: NDArray[np.float32], count: int, timing: Any, status: Any
    ) -> None:
        _, queued = self._playback.take(count)
        self._deliver(indata, np.zeros(count, dtype=np.float32), queued, status)

    def _deliver(self, indata: NDArray[np.float32], played: Frame, count: int, status: Any) -> None:
        self.overflows += bool(status.input_overflow)
        mic = indata[:, 0].astype(np.float32, copy=True)
        self._hand_over(DuplexFrame(mic, played, count, time.monotonic()))

    def _hand_over(self, block: DuplexFrame | None) -> None:
        try:
            self._blocks.put_nowait(block)
        except queue.Full:
            if block is not None:
                self.dropped_frames += 1
                return
            # The end marker must get through, or a reader would block for ever.
            self._blocks.get_nowait()
            self._blocks.put_nowait(None)


def open_sound_device(
    input: int | str | None = None, output: int | str | None = None
) -> SoundDevice:
    """Open and start the microphone (and speaker, if one exists) by index or name; ``None`` is
    the system default. Raises ``AudioUnavailable`` with one readable line when it cannot."""
    try:
        import sounddevice
    except OSError as error:
        raise AudioUnavailable(
            f"no microphone: PortAudio is not installed ({error}); continuing by text"
        ) from None
    try:
        sounddevice.query_devices(input, "input")
    except (sounddevice.PortAudioError, ValueError) as error:
        raise AudioUnavailable(
            f"no microphone found (PortAudio: {_reason(error)}); continuing by text"
        ) from None
    try:
        sounddevice.query_devices(output, "output")
        has_speaker = True
    except (sounddevice.PortAudioError, ValueError):
        has_speaker = False
    device = SoundDevice()
    settings: dict[str, Any] = {
        "samplerate": SAMPLE_RATE,
        "blocksize": FRAME_SAMPLES,
        "dtype": "float32",
        "channels": 1,
    }
    try:
        if has_speaker:
            stream = sounddevice.Stream(
                device=(input, output), callback=device._duplex_callback, **settings
            )
        else:
            stream = sounddevice.InputStream(
                device=input, callback=device._input_callback, **settings
            )
    except (sounddevice.PortAudioError, ValueError) as error:
        raise AudioUnavailable(_cannot_open(error)) from None
    try:
        stream.start()
    except sounddevice.PortAudioError as error:
        stream.close()
        raise AudioUnavailable(_cannot_open(error)) from None
    device._stream = stream
    return device


def _cannot_open(error: Exception) -> str:
    return f"cannot open the microphone at {SAMPLE_RATE} Hz ({_reason(error)}); continuing by text"


def _reason(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__


@dataclass(frozen=True)
class EchoPath:
    """The speaker heard by the microphone: attenuated by ``gain_db`` and ``delay_ms`` late."""

    gain_db: float = -20.0
    delay_ms: float = 30.0


class SimulatedDevice(_PlayQueue):
    """A microphone played from audio, a speaker into a queue, no hardware.

    ``mic`` is a WAV path or a float array at ``sample_rate`` (resampled to 16 kHz), followed
    by ``trailing_silence_s`` of silence; ``speak`` appends more while running. With
    ``realtime`` frames come at the wall-clock rate; otherwise as fast as they are read, and
    then ``at`` follows the audio's own clock (starting at the monotonic time of the first
    frame), so durations and latencies stay those of the audio. ``frames`` ends once the
    microphone audio is used up and nothing is queued to play or still echoing (a reply in
    progress plays out over silence), or at ``close``; ``until_closed`` keeps it producing
    silence until then.
    ``echo`` feeds the played audio back into the microphone, ``noise_dbfs`` adds white noise
    at that RMS level, and ``record_to`` writes everything sent to the speaker (silence
    included, so it lines up with the microphone) as a 16-bit 16 kHz WAV.
    """

    def __init__(
        self,
        mic: Path | Frame | None = None,
        *,
        sample_rate: int = SAMPLE_RATE,
        trailing_silence_s: float = 0.0,
        realtime: bool = False,
        until_closed: bool = False,
        echo: EchoPath | None = None,
        noise_dbfs: float | None = None,
        record_to: Path | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self._mic = SampleQueue()
        self._realtime = realtime
        self._until_closed = until_closed
        self._closed = threading.Event()
        if mic is not None:
            self.speak(load_wav(mic) if isinstance(mic, Path) else mic, sample_rate)
        if trailing_silence_s > 0:
            self._mic.put(np.zeros(round(trailing_silence_s * SAMPLE_RATE), dtype=np.float32))
        self._echo_gain = 0.0 if echo is None else 10 ** (echo.gain_db / 20)
        delay = 0 if echo is None else round(echo.delay_ms * SAMPLE_RATE / 1000)
        self._echo_line = np.zeros(delay, dtype=np.float32)
        self._noise_rms = 0.0 if noise_dbfs is None else 10 ** (noise_dbfs / 20)
        self._rng = np.random.default_rng(seed)
        self._recording: wave.Wave_write | None = None
        self._recording_lock = threading.Lock()  # close() may come from another thread
        if record_to is not None:
            self._recording = wave.open(str(record_to), "wb")  # noqa: SIM115 (open until close)
            self._recording.setnchannels(1)
            self._recording.setsampwidth(2)
            self._recording.setframerate(SAMPLE_RATE)

    def speak(self, samples: Frame, sample_rate: int = SAMPLE_RATE) -> None:
        """Append audio to what the microphone will hear. Thread-safe."""
        self._mic.put(resample(np.asarray(samples, dtype=np.float32), sample_rate, SAMPLE_RATE))

    def frames(self) -> Iterator[DuplexFrame]:
        start = time.monotonic()
        index = 0
        while not self._closed.is_set():
            if not (self._mic or self._playback or self._echo_line.any() or self._until_closed):
                return
            index += 1
            deadline = start + index * FRAME_S
            if self._realtime:
                time.sleep(max(0.0, deadline - time.monotonic()))
            mic, _ = self._mic.take(FRAME_SAMPLES)
            played, count = self._playback.take(FRAME_SAMPLES)
            with self._recording_lock:
                if self._recording is not None:
                    self._recording.writeframes(_pcm16(played))
            heard = mic + self._echo_gain * self._delayed(played)
            if self._noise_rms:
                heard += self._rng.normal(0.0, self._noise_rms, FRAME_SAMPLES).astype(np.float32)
            at = time.monotonic() if self._realtime else deadline
            yield DuplexFrame(heard.astype(np.float32), played, count, at)

    def _delayed(self, played: Frame) -> Frame:
        line = np.concatenate([self._echo_line, played])
        self._echo_line = line[FRAME_SAMPLES:]
        return line[:FRAME_SAMPLES]

    def close(self) -> None:
        self._closed.set()
        with self._recording_lock:
            if self._recording is not None:
                self._recording.close()
                self._recording = None
