"""The files each part of the profile runs on: the user's own weights or the packaged ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assistant.settings import Settings
from models import ModelError, ModelStore, ProgressCallback, load_manifest


@dataclass(frozen=True)
class SttPaths:
    name: str
    directory: Path


@dataclass(frozen=True)
class LlmPaths:
    name: str
    gguf: Path


@dataclass(frozen=True)
class TtsPaths:
    name: str
    model: Path
    config: Path


@dataclass(frozen=True)
class EmbedderPaths:
    name: str
    model: Path
    tokenizer: Path


def _existing(path: Path, key: str) -> Path:
    path = path.expanduser()
    if not path.exists():
        raise ModelError(f"{key} points at {path}, which does not exist")
    return path


class ProfileModels:
    """Resolves each part lazily, so a client of a remote LLM never assembles the local GGUF."""

    def __init__(self, settings: Settings, progress: ProgressCallback | None = None) -> None:
        self.settings = settings
        self.progress = progress
        self.store = ModelStore(settings.models_cache_dir)
        self.manifest = load_manifest()

    def stt(self) -> SttPaths:
        own = self.settings.stt.model_path
        if own is not None:
            return SttPaths(own.name, _existing(own, "stt.model_path"))
        weight = self.manifest.weight_for(self.settings.profile, "stt")
        resolved = self.store.resolve(weight, self.progress)
        assert resolved.directory is not None
        return SttPaths(weight.id, resolved.directory)

    def llm(self) -> LlmPaths:
        own = self.settings.llm.model_path
        if own is not None:
            return LlmPaths(own.stem, _existing(own, "llm.model_path"))
        weight = self.manifest.weight_for(self.settings.profile, "llm")
        return LlmPaths(weight.id, self.store.resolve(weight, self.progress).role("model"))

    def describe_llm(self) -> str:
        """Which model and endpoint, before anything has been started."""
        llm = self.settings.llm
        if llm.base_url:
            return f"{llm.model or '(endpoint default)'} at {llm.base_url}"
        name = (
            llm.model_path.stem
            if llm.model_path
            else self.manifest.weight_for(self.settings.profile, "llm").id
        )
        return f"{name} on a local llama.cpp server"

    def tts(self) -> TtsPaths:
        own = self.settings.tts.voice_path
        if own is not None:
            model = _existing(own, "tts.voice_path")
            config = _existing(model.with_name(model.name + ".json"), "tts.voice_path (.json)")
            return TtsPaths(model.stem, model, config)
        weight = self.manifest.weight_for(self.settings.profile, "tts")
        resolved = self.store.resolve(weight, self.progress)
        return TtsPaths(weight.id, resolved.role("model"), resolved.role("config"))

    def embedder(self) -> EmbedderPaths:
        own_model = self.settings.embedder.model_path
        own_tokenizer = self.settings.embedder.tokenizer_path
        weight = self.manifest.weight_for(self.settings.profile, "embedder")
        if own_model is None and own_tokenizer is None:
            resolved = self.store.resolve(weight, self.progress)
            return EmbedderPaths(weight.id, resolved.role("model"), resolved.role("tokenizer"))
        if own_model is None or own_tokenizer is None:
            raise ModelError("set both embedder.model_path and embedder.tokenizer_path, or neither")
        model = _existing(own_model, "embedder.model_path")
        return EmbedderPaths(model.stem, model, _existing(own_tokenizer, "embedder.tokenizer_path"))

    def turn(self) -> Path:
        """The turn-completion model (packaged only: it is not a part users swap)."""
        weight = self.manifest.weight_for(self.settings.profile, "turn")
        return self.store.resolve(weight, self.progress).role("model")
