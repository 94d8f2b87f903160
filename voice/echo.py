"""The assistant's own voice coming back into the microphone must not count as the user.

Two parts, one per frame of FRAME_SAMPLES:

* ``EchoCanceller``: a partitioned-block frequency-domain adaptive filter (the MDF / PBFDAF
  family of Speex's mdf.c and WebRTC's AEC) that learns the path from the samples sent to the
  speaker to the microphone and subtracts its estimate of the echo. Block = one frame (512),
  FFT of twice that, as many partitions as the configured tail needs, NLMS steps normalised per
  frequency bin. It keeps two filters, as mdf.c does: a background one that adapts on every
  block and a foreground one that produces the output and only takes the background's weights
  once they cancel better, so double talk that pulls the background off course never reaches
  the output.
* ``EchoSuppressor``: decides whether the user speaks. Silero VAD reads the canceller's
  residual, and while something is played the residual must also be louder than the echo could
  leave behind: the microphone's energy over the noise floor divided by the canceller's tracked
  echo return loss enhancement (ERLE, learnt from frames of echo), less a margin, plus the noise
  floor. A barge-in is declared after ``barge_in_ms`` of such speech over playback. With nothing
  played within the tail the residual is the microphone itself and the decision is plain VAD.

The canceller is linear: it removes what a linear, time-invariant path explains (delay, speaker
and room colouring, reverberation shorter than the tail). Loudspeaker distortion and echo
arriving later than the tail stay in the residual; the tracked ERLE is what keeps them from
being taken for the user, since they lower what the canceller is seen to remove.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voice.audio import FRAME_S, FRAME_SAMPLES, Frame, level_dbfs
from voice.vad import SileroVAD, SpeechDetector

_FFT = 2 * FRAME_SAMPLES
_BINS = FRAME_SAMPLES + 1
# Reference power below which a bin is treated as silent when normalising the step
# (per bin of an unnormalised 1024-point FFT, i.e. a reference near -70 dBFS).
_REGULARISATION = _FFT * 10 ** (-70 / 10)
_TINY = 1e-12
# Speech lasts until the VAD probability falls this far below the threshold (Silero's rule).
_VAD_HYSTERESIS = 0.15
# The echo estimate must stand this far (power ratio, 15 dB) above the noise floor before a
# frame tells how much echo the canceller removes; below, the noise caps what it can remove.
_ECHO_OVER_NOISE = 30.0
# Per-frame steps of the removal (ERLE) tracker, as fractions of the difference (dB): rises
# follow a converging canceller within about a second.
_ERLE_RISE = 0.05
_ERLE_FALL = 0.1
_ERLE_CLIP_DB = 3.0
# Share of the fall on frames taken for the user.
_ERLE_USER_SHARE = 0.1
# Share of the mean bin power added to every bin's: bins where the reply has little energy
# would otherwise take large steps driven by the microphone's noise, and misadjust the filter.
_FLOOR_SHARE = 0.3
# Likewise, every bin's reference power is taken to be at least 20 dB over the microphone's
# noise floor: a bin the reply barely excites only adapts in proportion to what it can teach.
_NOISE_SHARE = 100.0
# Partitions whose weights are brought back to causal filters on each block.
_CONSTRAINED = 2


@dataclass(frozen=True)
class EchoConfig:
    """Tuning of the canceller and of the user-speech decision.

    tail_ms: longest echo path the canceller models: device latency plus the room's
        reverberation. 250 ms covers the usual duplex device and a furnished room.
    step: NLMS step of the background filter, normalised per frequency bin by the reference
        power over the tail (0 < step < 2; larger converges faster but misadjusts more).
    double_talk_step: factor on ``step`` while the user is judged to speak, so their voice does
        not drag the filter away from the echo path; not zero, so a wrong judgement (the echo
        path really changed) still lets the filter catch up.
    vad_threshold: Silero VAD probability from which residual frames count as speech; they
        go on counting until it falls 0.15 below (Silero's own end-of-speech rule).
    margin_db: while something is played, a frame can only be the user if the canceller
        removed at least this much less of it (over the noise floor) than it usually removes
        from echo (its tracked echo return loss enhancement): the residual is then louder than
        the echo could leave behind.
    barge_in_ms: how long the user must speak over playback before a barge-in is declared.
    """

    tail_ms: float = 250.0
    step: float = 1.0
    double_talk_step: float = 0.1
    vad_threshold: float = 0.5
    margin_db: float = 5.0
    barge_in_ms: float = 150.0


@dataclass(frozen=True)
class FrameVerdict:
    """What one frame holds.

    residual: the microphone minus the estimated echo (the microphone itself with nothing
        played within the tail): the audio to endpoint and transcribe.
    speech_probability: Silero VAD on the residual.
    user_speech: the residual is speech and louder than echo and noise explain.
    echo_db: level (dBFS) of the echo the canceller removed from this frame.
    barge_in: since something was played after the last ``reset_barge_in``, the user has
        spoken for at least ``barge_in_ms`` (over the echo while it is played, by plain VAD in
        the reply's pauses); stays set until ``reset_barge_in``.
    barge_in_began: this frame is the one that set ``barge_in``.
    """

    residual: Frame
    speech_probability: float
    user_speech: bool
    echo_db: float
    barge_in: bool
    barge_in_began: bool = False


class EchoCanceller:
    """Two-path partitioned-block frequency-domain NLMS echo canceller (overlap-save).

    The room doesn't change between replies, so the filters persist for the life of the object.
    """

    def __init__(self, config: EchoConfig = EchoConfig()) -> None:
        self.config = config
        self.partitions = max(1, math.ceil(config.tail_ms / 1000 / FRAME_S))
        # Spectra of the last `partitions` reference blocks, newest first, each over the two
        # latest frames (overlap-save input).
        self._spectra = np.zeros((self.partitions, _BINS), dtype=np.complex128)
        self._powers = np.zeros((self.partitions, _BINS), dtype=np.float64)
        self._previous = np.zeros(FRAME_SAMPLES, dtype=np.float64)
        # [background, foreground], filtered together in one pass.
        self._weights = np.zeros((2, self.partitions, _BINS), dtype=np.complex128)
        self._errors = np.zeros(2, dtype=np.float64)
        self._constrain_next = 0
        # Frames since the last non-zero reference sample; beyond the tail no echo is possible.
        self._quiet_frames = self.partitions
        self._noise_floor: float | None = None

    @property
    def playing(self) -> bool:
        """Something was played within the tail, so the microphone may hold echo."""
        return self._quiet_frames < self.partitions

    @property
    def noise_floor(self) -> float:
        """Mean square of the residual's background noise (0 before the first frame)."""
        return self._noise_floor or 0.0

    def cancel(
        self, mic: Frame, played: Frame, *, double_talk: bool = False
    ) -> tuple[Frame, Frame]:
        """(residual, echo estimate) for one frame; ``double_talk`` slows adaptation."""
        if len(mic) != FRAME_SAMPLES or len(played) != FRAME_SAMPLES:
            raise ValueError(f"frames must hold {FRAME_SAMPLES} samples")
        reference = played.astype(np.float64)
        self._quiet_frames = 0 if np.any(reference) else self._quiet_frames + 1
        if not self.playing:
            # Nothing in the filter's reach: skip the work, and keep the history consistent so
            # the next reply starts from silence.
            self._previous = reference
            self._track_noise(_energy(mic))
            return mic.astype(np.float32, copy=True), np.zeros(FRAME_SAMPLES, dtype=np.float32)

        self._spectra[1:] = self._spectra[:-1]
        self._powers[1:] = self._powers[:-1]
        self._spectra[0] = np.fft.rfft(np.concatenate((self._previous, reference)))
        self._powers[0] = self._spectra[0].real ** 2 + self._spectra[0].imag ** 2
        self._previous = reference

        echoes = np.fft.irfft(np.einsum("pkf,kf->pf", self._weights, self._spectra), _FFT, axis=1)
        echoes = echoes[:, FRAME_SAMPLES:]
        target = mic.astype(np.float64)
        residuals = target - echoes
        # Energies over a few blocks: one block of speech is too noisy a comparison.
        self._errors = 0.5 * self._errors + 0.5 * np.einsum("pn,pn->p", residuals, residuals)
        background, foreground = self._errors
        if background < 0.8 * foreground:
            self._weights[1] = self._weights[0]
            self._errors[1] = background
            output = 0
        else:
            output = 1
            if background > 4.0 * foreground:
                # The background has been pulled away (double talk it took for echo): restart
                # it from the weights that still cancel.
                self._weights[0] = self._weights[1]
                self._errors[0] = foreground

        residual, echo = residuals[output], echoes[output]
        if np.dot(residual, residual) > np.dot(target, target):
            # The filter adds more than it removes (it has not converged yet, or the path just
            # changed): pass the microphone through rather than inject a wrong echo.
            residual, echo = target, np.zeros(FRAME_SAMPLES)
        self._track_noise(_energy(residual))
        step = self.config.step * (self.config.double_talk_step if double_talk else 1.0)
        self._adapt(residuals[0], step)
        return residual.astype(np.float32), echo.astype(np.float32)

    def _track_noise(self, energy: float) -> None:
        # Minimum tracking: follow the floor down at once, up slowly (about 1 dB a second) so
        # speech does not lift it.
        floor = self._noise_floor
        if floor is None or energy < floor:
            floor = energy
        else:
            floor = min(energy, floor * 10 ** (FRAME_S / 10))
        self._noise_floor = max(floor, _TINY)

    def _adapt(self, residual: NDArray[np.float64], step: float) -> None:
        error = np.fft.rfft(np.concatenate((np.zeros(FRAME_SAMPLES), residual)))
        # Per-bin normalisation by the reference power over the whole tail: the NLMS step in
        # each bin is independent of how loud and how coloured the reply is.
        power = self._powers.sum(axis=0)
        noise = _NOISE_SHARE * _FFT * self.partitions * self.noise_floor
        gain = step / (power + _REGULARISATION + _FLOOR_SHARE * float(power.mean()) + noise)
        self._weights[0] += np.conj(self._spectra) * (error * gain)
        # Gradient constraint: each partition must stay a causal FRAME_SAMPLES-tap filter, or
        # the FFT's circular wrap-around leaks into the weights. As in mdf.c, a few partitions
        # per block in turn are enough, and it is most of the cost.
        chosen = (self._constrain_next + np.arange(_CONSTRAINED)) % self.partitions
        self._constrain_next = int(chosen[-1] + 1) % self.partitions
        taps = np.fft.irfft(self._weights[0, chosen], _FFT, axis=1)
        taps[:, FRAME_SAMPLES:] = 0.0
        self._weights[0, chosen] = np.fft.rfft(taps, axis=1)


class EchoSuppressor:
    """Per frame: cancel the echo, then judge whether what is left is the user speaking."""

    def __init__(
        self, config: EchoConfig = EchoConfig(), vad: SpeechDetector | None = None
    ) -> None:
        self.config = config
        self.canceller = EchoCanceller(config)
        self._vad: SpeechDetector = vad if vad is not None else SileroVAD()
        # The VAD follows this suppressor's residual stream from its start.
        self._vad.reset()
        self._frames_needed = max(1, math.ceil(config.barge_in_ms / 1000 / FRAME_S - 1e-9))
        # A fresh canceller has removed nothing yet: until it shows what it removes, no residual
        # can be louder than the echo explains, so the first reply cannot barge in on itself.
        self._erle_db = 0.0
        self._in_speech = False
        self._user_speaking = False
        self._evidence = 0
        self._barge_in = False
        # Something was played since the last reset_barge_in: a reply is under way.
        self._replying = False

    def process(self, mic: Frame, played: Frame) -> FrameVerdict:
        was_playing = self.canceller.playing
        residual, echo = self.canceller.cancel(mic, played, double_talk=self._user_speaking)
        if self.canceller.playing and not was_playing and not self._in_speech:
            # Playback starts (a reply, or its next sentence after a pause) while nobody speaks:
            # the VAD starts afresh. Its recurrent state, carried over from the previous reply
            # and the user's turn, made Silero several frames slower to hear the user interrupt
            # (fewer barge-ins within 300 ms in benchmarks.echo_suppression).
            self._vad.reset()
        probability = self._vad.probability(residual)
        # Silero's own hysteresis: speech starts at the threshold and lasts until the
        # probability falls _VAD_HYSTERESIS below it, so a syllable's dip does not end it.
        if probability >= self.config.vad_threshold:
            self._in_speech = True
        elif probability < self.config.vad_threshold - _VAD_HYSTERESIS:
            self._in_speech = False
        speech_like = self._in_speech
        if self.canceller.playing:
            self._replying = True
            user_speech = self._beyond_echo(mic, residual, echo, speech_like)
        else:
            user_speech = speech_like
        already = self._barge_in
        if self._replying:
            # Counted in the pauses of a reply too (no echo can be heard there, the VAD
            # decides): the user who starts as a sentence ends is still talking over the reply.
            self._count_barge_in(speech_like, user_speech)
        self._user_speaking = user_speech
        return FrameVerdict(
            residual=residual,
            speech_probability=probability,
            user_speech=user_speech,
            echo_db=level_dbfs(echo),
            barge_in=self._barge_in,
            barge_in_began=self._barge_in and not already,
        )

    def reset_barge_in(self) -> None:
        """Clear the barge-in and the speech counted towards one: call it when a reply starts
        and whenever none is being spoken (it is cheap enough for every frame). The echo path,
        ERLE and noise floor are kept."""
        self._barge_in = False
        self._evidence = 0
        self._replying = False

    def _beyond_echo(self, mic: Frame, residual: Frame, echo: Frame, speech_like: bool) -> bool:
        """The residual is speech, and louder than the echo could leave behind plus the noise.

        What the echo leaves behind is the microphone's energy over the noise floor divided by
        the tracked ERLE (how much the canceller removes from echo), less ``margin_db``; the
        residual's own energy is also taken over the noise floor and must exceed the floor
        itself, so echo that has sunk into the noise is never taken for a voice.
        """
        noise = self.canceller.noise_floor
        mic_excess = max(_energy(mic) - noise, 0.0)
        residual_excess = max(_energy(residual) - noise, _TINY)
        left_behind = mic_excess * 10 ** ((self.config.margin_db - self._erle_db) / 10)
        user = speech_like and residual_excess > left_behind + noise
        if _energy(echo) >= _ECHO_OVER_NOISE * noise:
            self._learn_erle(10 * math.log10(max(mic_excess, _TINY) / residual_excess), user)
        return user

    def _learn_erle(self, removed_db: float, user: bool) -> None:
        # A tracker of how much the canceller removes from frames of echo, below the median (it
        # falls faster than it rises) and so on the safe side. Falls are clipped, and slower on
        # frames taken for the user, which the canceller cannot remove: a stretch of the user's
        # speech barely moves it, while a canceller that really got worse (the echo path
        # changed) still drags it down within a few seconds.
        change = removed_db - self._erle_db
        if change > 0:
            self._erle_db += _ERLE_RISE * change
        else:
            fall = _ERLE_FALL * (_ERLE_USER_SHARE if user else 1.0)
            self._erle_db += fall * max(change, -_ERLE_CLIP_DB)

    def _count_barge_in(self, speech_like: bool, user_speech: bool) -> None:
        # Over one stretch of speech, frames beyond the echo count for the user and frames the
        # echo explains count against: the user's quieter syllables do not restart the count,
        # and speech-like residual echo that pokes out now and then does not add up.
        if not speech_like:
            self._evidence = 0
        else:
            self._evidence = self._evidence + 1 if user_speech else max(self._evidence - 1, 0)
        if self._evidence >= self._frames_needed:
            self._barge_in = True


def _energy(frame: NDArray[np.floating[Any]]) -> float:
    return float(np.mean(np.square(frame, dtype=np.float64)))
