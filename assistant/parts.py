"""Each part of the profile, loaded the way the settings say: the one place that builds them."""

from __future__ import annotations

from assistant.model_paths import EmbedderPaths, SttPaths, TtsPaths
from assistant.settings import Settings
from memory.embedder import OnnxSentenceEmbedder
from voice.fitted_window import Tuning
from voice.stt import WhisperSTT
from voice.tts import PiperTTS

# The smallest encoder window each packaged Whisper hears as well in as in 30 s, and its beam
# there (benchmarks/stt_window.py, docs/BENCHMARKS.md): tiny.en greedy lost words below 20 s,
# with a beam of 3 it holds at 10 s; base holds greedy at 15 s.
FITTED_WINDOWS = {
    "whisper-tiny.en": Tuning(min_window_s=10.0, beam_size=3),
    "whisper-base": Tuning(min_window_s=15.0, beam_size=1),
}


def load_stt(settings: Settings, paths: SttPaths) -> WhisperSTT:
    options = settings.stt
    return WhisperSTT(
        paths.directory,
        threads=options.threads,
        beam_size=options.beam_size,
        language=options.language,
        window=options.window,
        tuning=FITTED_WINDOWS.get(paths.name, Tuning()),
    )


def load_tts(settings: Settings, paths: TtsPaths) -> PiperTTS:
    options = settings.tts
    return PiperTTS(
        paths.model,
        paths.config,
        threads=options.threads,
        speed=options.speed,
        volume=options.volume,
    )


def load_embedder(settings: Settings, paths: EmbedderPaths) -> OnnxSentenceEmbedder:
    return OnnxSentenceEmbedder(paths.model, paths.tokenizer, threads=settings.embedder.threads)


def configured_embedder() -> OnnxSentenceEmbedder:
    """The embedder of the configuration in force (file, environment), for scripts."""
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels

    settings = load_config().settings
    return load_embedder(settings, ProfileModels(settings).embedder())
