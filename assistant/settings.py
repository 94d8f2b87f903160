"""The typed settings schema: every key, its default and what it means.

Layering (file, environment, flags) lives in :mod:`assistant.config`; this module only says
what may be set. Each field's description is what ``brain config`` and ``--help`` show.
"""

from __future__ import annotations

import json
import os
from datetime import time
from pathlib import Path
from typing import Literal, get_args

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, field_validator

APP_NAME = "brain-os"
# agent.graph_weight by default: off. On LoCoMo the bundled model's graph added nothing to
# recall at 0.1 and lost some at 0.25-0.5, and a graph search adds ~70 ms to a retrieval
# (docs/BENCHMARKS.md, "Knowledge graph").
GRAPH_WEIGHT = 0.0

Profile = Literal["quality", "fast"]
JsonMode = Literal["auto", "json_object_schema", "json_schema", "json_object"]
ToolCalling = Literal["auto", "native", "json_action"]
# How a model without native tool calls writes its replies (docs/REPLIES.md): ``plain`` text in
# its own chat template, tools chosen by code; a schema-held ``json_action`` each step with the
# full instructions; ``short_json``, the same with short instructions and no examples.
ReplyDesign = Literal["auto", "plain", "json_action", "short_json"]
# The checks a reply passes through (assistant/agent/checks/pipeline.py keeps their order).
ReplyCheck = Literal[
    "grounding",
    "evasion",
    "asides",
    "opening",
    "restated",
    "runs",
    "diet",
    "loops",
    "perspective",
    "echo",
    "admission",
]
VoiceMode = Literal["always", "push_to_talk", "muted"]
SpeakReplies = Literal["spoken", "always", "never"]
LocalServer = Literal["llama-server", "llama-cpp-python"]


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def default_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP_NAME))


def default_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LLMSettings(Section):
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, LM Studio). "
        "Empty: start the packaged llama.cpp server locally.",
    )
    model: str | None = Field(
        None, description="Model name at the endpoint. Empty: the profile's local model."
    )
    api_key: str | None = Field(None, description="API key for the endpoint.")
    model_path: Path | None = Field(
        None, description="Your own GGUF for the local server instead of the profile's."
    )
    # 16k keeps compaction rare: the KV cache costs 12 KB a token on the fast model, 28 KB on
    # the quality one (docs/BENCHMARKS.md, "llama-server").
    context_window: int = Field(16384, ge=512, le=1_048_576, description="Context size (tokens).")
    server: LocalServer = Field(
        "llama-server",
        description="Which server runs the local model: llama.cpp's own llama-server (built "
        "by the install step; reuses cached prompt chunks and keeps the conversation's cache "
        "across restarts) or llama-cpp-python's.",
    )
    server_binary: Path | None = Field(
        None,
        description="The llama-server binary. Empty: the one installed beside the app's Python, "
        "else llama-server on PATH.",
    )
    cache_reuse: int = Field(
        256,
        ge=0,
        description="llama-server: the fewest cached prompt tokens worth shifting into place "
        "after a change earlier in the prompt (0: reuse the common prefix only).",
    )
    lookup_draft: int = Field(
        4,
        ge=0,
        le=32,
        description="llama-server: tokens drafted from the prompt after the last 3 written "
        "(prompt-lookup decoding; exact, it only saves time), checked in one batch (0: off).",
    )
    no_repeat: float = Field(
        0.0,
        ge=0,
        le=5,
        description="llama-server: how strongly a reply is kept from repeating a run of words "
        "already in the conversation (the DRY sampler's multiplier; 0: off). Applies to the "
        "conversation's replies, not to background work.",
    )
    kv_cache_type: Literal["f16", "q8_0"] = Field(
        "f16", description="llama-server: how the KV cache stores keys and values."
    )
    pause_background: bool = Field(
        True,
        description="llama-server: pause the background server (ratings, reflection, the "
        "graph) while you speak or type and while a reply is written, so it takes no core "
        "from your turn.",
    )
    threads: int = Field(2, ge=1, le=256, description="CPU threads for the local server.")
    timeout_s: float = Field(120.0, gt=0, description="Seconds to wait for one LLM request.")
    startup_timeout_s: float = Field(
        180.0, gt=0, description="Seconds to wait for the local server to answer after start."
    )
    max_restarts: int = Field(
        3, ge=0, description="How often a crashed local server is restarted before giving up."
    )
    json_mode: JsonMode = Field(
        "auto",
        description="How structured replies are requested: auto picks json_object_schema for "
        "the local server and json_schema for other endpoints.",
    )
    tool_calling: ToolCalling = Field(
        "auto",
        description="How the agent calls its tools: native (the endpoint's tool calls) or "
        "json_action (one schema-held JSON object a step); auto picks json_action for the "
        "local server and native for other endpoints.",
    )


class STTSettings(Section):
    model_path: Path | None = Field(
        None, description="Your own CTranslate2 Whisper folder instead of the profile's."
    )
    language: str | None = Field("en", description="Spoken language code; empty: detect.")
    beam_size: int = Field(1, ge=1, le=10, description="Beam size (1 = greedy, fastest).")
    threads: int = Field(2, ge=1, le=256, description="CPU threads for speech recognition.")
    window: Literal["fitted", "full"] = Field(
        "fitted",
        description="Whisper's encoder window: fitted to each utterance (about 3x faster, "
        "guarded; needs a set language) or the full 30 s.",
    )


class TTSSettings(Section):
    voice_path: Path | None = Field(
        None, description="Your own Piper voice (.onnx, with its .onnx.json beside it)."
    )
    speed: float = Field(1.0, gt=0.25, le=4.0, description="Speaking rate (1.0 = normal).")
    volume: float = Field(1.0, ge=0.0, le=4.0, description="Loudness multiplier.")
    threads: int = Field(2, ge=1, le=256, description="CPU threads for speech synthesis.")


class EmbedderSettings(Section):
    model_path: Path | None = Field(
        None, description="Your own sentence-embedding ONNX model instead of MiniLM."
    )
    tokenizer_path: Path | None = Field(
        None, description="tokenizer.json for your own embedding model."
    )
    threads: int = Field(2, ge=1, le=256, description="CPU threads for embedding.")


class AudioSettings(Section):
    input_device: str | None = Field(
        None,
        description='Microphone name or index; empty: the default; "none": no sound card '
        "(headless: `brain listen FILE` speaks into it).",
    )
    output_device: str | None = Field(None, description="Speaker name or index; empty: default.")


class VoiceSettings(Section):
    enabled: bool = Field(True, description="Listen and speak (false: text only).")
    mode: VoiceMode = Field(
        "always",
        description="always (listen all the time), push_to_talk (only while the talk key is "
        "down) or muted.",
    )
    speak_replies: SpeakReplies = Field(
        "spoken",
        description="Which replies are read aloud: to spoken turns only, always, or never.",
    )
    barge_in: bool = Field(
        True, description="Speaking over a reply stops it (false: it plays to the end)."
    )
    end_silence_ms: int = Field(
        600,
        ge=200,
        le=3000,
        description="Silence that ends your turn (less: quicker replies, more: fewer cuts "
        "mid-sentence; see docs/BENCHMARKS.md).",
    )
    max_utterance_s: float = Field(
        30.0, gt=1, le=300, description="Longest single utterance; longer speech is cut here."
    )
    # Off by default: on benchmarks.endpointing's turns the model took 44-48 % of the pauses
    # inside a turn (commas, between sentences) for its end, against none for the silence.
    turn_judge: bool = Field(
        False,
        description="At a short pause, judge from the sound of your speech whether you have "
        "finished (smart-turn), and answer then; false: only end_silence_ms ends your turn.",
    )
    pause_ms: int = Field(
        200,
        ge=100,
        le=3000,
        description="A pause this long in your speech: what you said so far is transcribed "
        "and its reply asked for, and the turn judge (if on) asked whether you have finished.",
    )
    partial_ms: int = Field(
        1000,
        ge=0,
        le=10_000,
        description="While you speak without a pause, what you said so far is transcribed and "
        "read ahead this often (0: only at pauses).",
    )


class AgentSettings(Section):
    max_steps: int = Field(
        6, ge=1, le=50, description="Steps (tool calls) the agent may chain for one event."
    )
    memory_pressure: float = Field(
        0.7, gt=0, lt=1, description="Share of the context window that triggers the warning."
    )
    reply_design: ReplyDesign = Field(
        "auto",
        description="How replies are written where the endpoint has no native tool calls: "
        "plain (plain text, tools chosen by code), json_action (one JSON action a step, full "
        "instructions), short_json (the same, short instructions); auto picks the design the "
        "conversation benchmark measured best.",
    )
    # Unset: 0.1 of the 16,384-token window in the plain design (a compaction at ~1,600
    # tokens), 0.2 in the JSON designs, whose instructions alone are ~1,100 tokens (at 0.1 every
    # turn was summarised). On CPU the server reads a turn's new tokens at half the speed with
    # 2,600 tokens before them as with 250 (docs/BENCHMARKS.md), and a compaction costs the
    # next turn only its note.
    compact_share: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Share of the context window at which, after a turn, its oldest half is "
        "summarised in the background (unset: 0.1 in the plain reply design, 0.2 in the JSON "
        "ones). Kept small: the longer the prompt, the slower the local server reads each "
        "turn's new tokens.",
    )
    retrieved_memories: int = Field(
        5, ge=0, le=50, description="Memories retrieved into the prompt for each event."
    )
    # Every memory a judgement probe needs scored 0.36 or more, the turn benchmark's unrelated
    # ones mostly below 0.3 (benchmarks/memory_similarity.py; docs/BENCHMARKS.md).
    least_similarity: float = Field(
        0.3,
        ge=-1,
        le=1,
        description="Memories less similar in meaning to the event than this (cosine, -1 to 1) "
        "are not shown with it, however recent or important; -1 shows the best ones always.",
    )
    more_similarity: float = Field(
        0.4,
        ge=-1,
        le=1,
        description="Memories shown with an event beyond the first two must be at least this "
        "similar to it (cosine): fewer tokens for the local server to read before a reply.",
    )
    temperature: float = Field(
        0.3,
        ge=0,
        le=2,
        description="Sampling temperature of the agent's replies; 0 always picks the most "
        "likely word (the same reply to the same conversation).",
    )
    core_memory_chars: int = Field(
        1200, ge=100, le=20_000, description="Size limit of each core memory block (characters)."
    )
    reflection_threshold: int = Field(
        150,
        ge=1,
        le=100_000,
        description="Summed importance of new memories that starts a reflection in the "
        "background (Generative Agents, section 4.2).",
    )
    knowledge_graph: bool = Field(
        True,
        description="Learn facts (subject, relation, object) from what is said, in the "
        "background, and keep them current (docs/GRAPH.md).",
    )
    graph_weight: float = Field(
        GRAPH_WEIGHT,
        ge=0,
        le=5,
        description="How much the knowledge graph's search adds to a memory's relevance when "
        "memories are retrieved for a turn (0: the graph is not used there).",
    )
    reply_checks: list[ReplyCheck] = Field(
        default_factory=lambda: list(get_args(ReplyCheck)),
        description="The checks each reply passes through as it streams (docs/REPLIES.md); "
        "comma-separated in a flag or the environment. Leave all on: each is there for a "
        "failure the small models show.",
    )

    @field_validator("reply_checks", mode="before")
    @classmethod
    def _checks_from_text(cls, value: object) -> object:
        return (
            [name.strip() for name in value.split(",") if name.strip()]
            if isinstance(value, str)
            else value
        )


class McpServerSettings(Section):
    name: str = Field(
        pattern=r"^[A-Za-z0-9_-]{1,32}$",
        description="Short name; the server's tools are called <name>__<tool>.",
    )
    command: str = Field(min_length=1, description="Program that starts the server (stdio).")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables added for it."
    )


class TasksSettings(Section):
    max_concurrent: int = Field(
        2, ge=1, le=16, description="Delegated tasks that run at once; the rest wait in order."
    )
    max_steps: int = Field(12, ge=1, le=200, description="Steps (tool calls) one task may take.")
    max_tokens: int = Field(
        40_000,
        ge=1_000,
        description=(
            "Tokens one task may send and receive (the local model's own count; an estimate "
            "for other endpoints)."
        ),
    )
    max_seconds: float = Field(900.0, gt=0, description="Wall-clock time one task may run.")
    heartbeat_minutes: float = Field(
        5.0,
        gt=0,
        description="How often the heartbeat checks what is due (reminders fire at their "
        "time regardless).",
    )
    day_plan: bool = Field(
        True,
        description="Keep a plan of your day (plan memories, F3), made and revised in the "
        "background from what you said about your goals and agenda.",
    )
    allowed_paths: list[Path] = Field(
        default_factory=list,
        description="Files and folders sub-agents may read into archival storage (text, "
        "Markdown, PDF); in the environment, separated by ':'.",
    )
    mcp_servers: list[McpServerSettings] = Field(
        default_factory=list,
        description="MCP servers (stdio) whose tools sub-agents may call, each call allowed "
        "by you first; [[tasks.mcp_servers]] tables in the file, JSON in the environment.",
    )
    mcp_timeout_s: float = Field(
        60.0, gt=0, le=3600, description="How long an MCP server may take to start or answer."
    )

    @field_validator("allowed_paths", mode="before")
    @classmethod
    def _paths_from_text(cls, value: object) -> object:
        return [p for p in value.split(os.pathsep) if p] if isinstance(value, str) else value

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _servers_from_json(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"not valid JSON: {error.msg}") from None
        return value


def quiet_hours(text: str) -> tuple[time, time] | None:
    """ "22:00-08:00" as two local times; an empty text is no quiet hours."""
    text = text.strip()
    if not text:
        return None
    start, sep, end = text.partition("-")
    if not sep:
        raise ValueError(f"quiet hours {text!r}: write them as HH:MM-HH:MM")
    return time.fromisoformat(start.strip()), time.fromisoformat(end.strip())


class HeartbeatSettings(Section):
    proactive: bool = Field(
        True,
        description="At each heartbeat the assistant looks at what changed and may act "
        "unasked: keep an intention, start a task, or speak first when something needs you "
        "(an intention come due, a clash, an event coming up or just passed, a task's "
        "result), only while you are there. Off: it waits to be asked.",
    )
    quiet_hours: str = Field(
        "22:00-08:00",
        description="Local hours with no proactive message (HH:MM-HH:MM, may wrap midnight; "
        "empty: none). Reminders still fire.",
    )
    per_hour: int = Field(2, ge=1, le=30, description="Proactive messages in any hour, at most.")
    back_off_minutes: float = Field(
        120.0,
        ge=0,
        description='How long "not now" (or "later", "stop") silences proactive messages.',
    )
    presence_minutes: float = Field(
        15.0,
        gt=0,
        description="With no window attached, you count as there this long after the "
        "microphone last heard you.",
    )
    clock_offset_minutes: float = Field(
        0.0,
        description="Shift the assistant's clock by this many minutes (to try an evening of "
        "heartbeats by day; use a data folder of its own).",
    )

    @field_validator("quiet_hours", mode="before")
    @classmethod
    def _hours(cls, value: object) -> object:
        if value is None:  # an empty flag or variable: no quiet hours
            return ""
        if isinstance(value, str):
            quiet_hours(value)  # raises ValueError with the reason
            return value.strip()
        return value


class ServiceSettings(Section):
    background: bool = Field(
        False,
        description="Keep the assistant service running after the last window or client "
        "closes (it always stays while work is pending).",
    )
    runtime_dir: Path | None = Field(
        None,
        description="Folder for the service's socket. Empty: $XDG_RUNTIME_DIR/brain-os, "
        "else /tmp/brain-os-<uid>.",
    )


class VaultSettings(Section):
    path: Path | None = Field(
        None,
        description="An Obsidian vault kept in step with the memory, both ways: a note per "
        "memory, your edits there brought back, a new note in its Inbox folder remembered "
        "(docs/VAULT.md). Empty: none.",
    )

    @field_validator("path", mode="after")
    @classmethod
    def _home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None


class Settings(Section):
    profile: Profile = Field(
        "quality", description="Model profile: quality (default) or fast (smaller models)."
    )
    data_dir: Path = Field(
        default_factory=default_data_dir, description="Where memories and conversations live."
    )
    cache_dir: Path = Field(
        default_factory=default_cache_dir,
        description="Where assembled model weights, logs and other rebuildable files live.",
    )
    llm: LLMSettings = Field(default_factory=LLMSettings)
    stt: STTSettings = Field(default_factory=STTSettings)
    tts: TTSSettings = Field(default_factory=TTSSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    audio: AudioSettings = Field(default_factory=AudioSettings)
    voice: VoiceSettings = Field(default_factory=VoiceSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    tasks: TasksSettings = Field(default_factory=TasksSettings)
    heartbeat: HeartbeatSettings = Field(default_factory=HeartbeatSettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    vault: VaultSettings = Field(default_factory=VaultSettings)

    @property
    def models_cache_dir(self) -> Path:
        return self.cache_dir / "models"

    @property
    def log_dir(self) -> Path:
        return self.cache_dir / "logs"

    @property
    def llm_slots_dir(self) -> Path:
        """Where llama-server saves the conversation's KV cache (rebuilt by reading the prompt
        again when missing): in the data folder, whose conversation it holds. In the shared
        cache folder, a service on another data folder restored the last one's conversation
        and read its own 8,000-token window from scratch (two minutes on two cores)."""
        return self.data_dir / "llm-slots"


SECRET_KEYS = frozenset({"llm.api_key"})
