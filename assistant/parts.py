"""Each part of the profile, loaded the way the settings say: the one place that builds them."""

from __future__ import annotations

from assistant.model_paths import EmbedderPaths, SttPaths, TtsPaths
from assistant.settings import Settings
from memory.embedder import OnnxSentenceEmbedder
from voice.stt import WhisperSTT
from voice.tts import PiperTTS


def load_stt(settings: Settings, paths: SttPaths) -> WhisperSTT:
    options = settings.stt
    return WhisperSTT(
        paths.directory,
        threads=options.threads,
        beam_size=options.beam_size,
        language=options.language,
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
