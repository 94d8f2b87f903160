"""Effective settings from defaults, the TOML file, the environment and command-line flags.

Precedence, lowest to highest: default < config file < environment < flag. Every key
``section.name`` is also the environment variable ``BRAIN_SECTION_NAME`` and the flag
``--section-name``; ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` are honoured
for the LLM endpoint (below the ``BRAIN_`` names). Where each value came from is kept, so
``brain config`` can show it.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from assistant.settings import SECRET_KEYS, Settings, default_config_file

ENV_PREFIX = "BRAIN_"
CONFIG_FILE_ENV = "BRAIN_CONFIG"
ENV_ALIASES: Mapping[str, str] = {
    "OPENAI_BASE_URL": "llm.base_url",
    "OPENAI_API_KEY": "llm.api_key",
    "OPENAI_MODEL": "llm.model",
}
FLAG_ALIASES: Mapping[str, str] = {"--llm-url": "llm.base_url"}


class ConfigError(Exception):
    """A setting is unknown or has a bad value; the message names the key and its source."""


@dataclass(frozen=True)
class SettingInfo:
    key: str
    description: str
    annotation: str


@dataclass(frozen=True)
class LoadedConfig:
    settings: Settings
    sources: Mapping[str, str]
    config_file: Path

    def items(self) -> Iterator[tuple[str, Any, str]]:
        """Every key with its effective value and where it came from."""
        for info in setting_infos():
            yield (
                info.key,
                get_dotted(self.settings, info.key),
                self.sources.get(info.key, "default"),
            )


def setting_infos() -> list[SettingInfo]:
    infos: list[SettingInfo] = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                walk(annotation, f"{prefix}{name}.")
            else:
                infos.append(
                    SettingInfo(f"{prefix}{name}", field.description or "", _type_name(annotation))
                )

    walk(Settings, "")
    return infos


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("pathlib.", "")


def env_name(key: str) -> str:
    return ENV_PREFIX + key.replace(".", "_").upper()


def flag_name(key: str) -> str:
    return "--" + key.replace(".", "-").replace("_", "-")


def get_dotted(settings: BaseModel, key: str) -> Any:
    value: Any = settings
    for part in key.split("."):
        value = getattr(value, part)
    return value


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """Add one ``--section-name`` flag per setting (and the aliases) to ``parser``."""
    group = parser.add_argument_group("settings (each also BRAIN_<KEY> and the config file)")
    group.add_argument(
        "--config",
        dest="config_file",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="config file to read",
    )
    aliases_by_key: dict[str, list[str]] = {}
    for alias, key in FLAG_ALIASES.items():
        aliases_by_key.setdefault(key, []).append(alias)
    for info in setting_infos():
        flags = [flag_name(info.key), *aliases_by_key.get(info.key, [])]
        group.add_argument(
            *flags,
            dest=_flag_dest(info.key),
            metavar="VALUE",
            # SUPPRESS: a flag given before the sub-command must survive the sub-parser.
            default=argparse.SUPPRESS,
            help=info.description,
        )


def _flag_dest(key: str) -> str:
    return "setting__" + key.replace(".", "__")


def flags_from_namespace(namespace: argparse.Namespace) -> dict[str, str]:
    """The settings given on the command line, by dotted key."""
    given: dict[str, str] = {}
    for info in setting_infos():
        value = getattr(namespace, _flag_dest(info.key), None)
        if value is not None:
            given[info.key] = value
    return given


def load_config(
    flags: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> LoadedConfig:
    """Build the effective settings; raise :class:`ConfigError` naming any bad key."""
    environ = os.environ if environ is None else environ
    flags = flags or {}
    known = {info.key for info in setting_infos()}

    file_source = "flag --config"
    if config_file is None and environ.get(CONFIG_FILE_ENV):
        config_file = Path(environ[CONFIG_FILE_ENV])
        file_source = f"env {CONFIG_FILE_ENV}"
    explicit_file = config_file is not None
    path = (config_file or default_config_file()).expanduser()

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    if path.exists():
        for key, value in _read_toml(path, known).items():
            values[key] = value
            sources[key] = f"file {path}"
    elif explicit_file:
        raise ConfigError(f"config file {path} (from {file_source}) does not exist")

    for alias, key in ENV_ALIASES.items():
        if alias in environ:
            values[key] = _from_text(environ[alias])
            sources[key] = f"env {alias}"
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name == CONFIG_FILE_ENV:
            continue
        key = _key_for_env(name, known)
        values[key] = _from_text(raw)
        sources[key] = f"env {name}"

    for key, raw in flags.items():
        if key not in known:
            raise ConfigError(f"unknown setting {key!r}{_suggestion(key, known)}")
        values[key] = _from_text(raw)
        sources[key] = f"flag {flag_name(key)}"

    try:
        settings = Settings.model_validate(_nest(values))
    except ValidationError as error:
        raise ConfigError(_describe(error, values, sources)) from None
    return LoadedConfig(settings=settings, sources=sources, config_file=path)


def _read_toml(path: Path, known: set[str]) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"config file {path} cannot be read: {error.strerror}") from None
    flat: dict[str, Any] = {}

    def walk(table: Mapping[str, Any], prefix: str) -> None:
        for name, value in table.items():
            key = f"{prefix}{name}"
            if isinstance(value, dict):
                if not any(k.startswith(key + ".") for k in known):
                    raise ConfigError(
                        f"config file {path}: unknown section [{key}]{_suggestion(key, known)}"
                    )
                walk(value, key + ".")
            elif key not in known:
                raise ConfigError(
                    f"config file {path}: unknown key {key!r}{_suggestion(key, known)}"
                )
            else:
                flat[key] = value

    walk(document, "")
    return flat


def _key_for_env(name: str, known: set[str]) -> str:
    by_env = {env_name(key): key for key in known}
    if name in by_env:
        return by_env[name]
    close = difflib.get_close_matches(name, list(by_env), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(f"unknown setting in environment variable {name}{hint}")


def _suggestion(key: str, known: set[str]) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _from_text(raw: str) -> Any:
    """Environment and flag values are text; an empty one means 'not set'."""
    return None if raw.strip() == "" else raw


def _nest(values: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in values.items():
        *sections, name = key.split(".")
        target = nested
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    return nested


def _describe(error: ValidationError, values: Mapping[str, Any], sources: Mapping[str, str]) -> str:
    problems = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"])
        source = sources.get(key, "default")
        shown = "<hidden>" if key in SECRET_KEYS else repr(values.get(key))
        problems.append(f"bad value for {key} = {shown} (from {source}): {item['msg']}")
    return "; ".join(problems)


def _shown(key: str, value: Any) -> str:
    if value is None:
        return ""
    return "********" if key in SECRET_KEYS else str(value)


def render(loaded: LoadedConfig) -> list[tuple[str, str, str]]:
    """Rows of (key, shown value, source) with secrets masked."""
    rows = []
    for key, value, source in loaded.items():
        rows.append((key, _shown(key, value), source))
    return rows


def settings_seen(settings: Settings) -> dict[str, str]:
    """Every setting as text, for comparing a command's settings with a running service's;
    a secret is a digest, so it can be compared but never read back."""
    seen = {}
    for info in setting_infos():
        value = get_dotted(settings, info.key)
        text = "" if value is None else str(value)
        if info.key in SECRET_KEYS and text:
            text = "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
        seen[info.key] = text
    return seen


def other_settings(loaded: LoadedConfig, running: Mapping[str, str]) -> str | None:
    """One line when the running service does not use settings this command was given (a
    command attaches to the service of its data folder, whatever its flags say), else None."""
    mine = settings_seen(loaded.settings)
    differing = [
        key
        for key, source in loaded.sources.items()
        if source != "default" and key in running and running[key] != mine.get(key)
    ]
    if not differing:
        return None
    shown = ", ".join(
        f"{key} ({'another key' if key in SECRET_KEYS else _as_running(running[key])} there)"
        for key in sorted(differing)
    )
    return (
        f"the running service uses other settings: {shown}; `brain stop` and run again to "
        "apply yours, or give --data-dir another folder for a service of its own"
    )


def _as_running(text: str) -> str:
    return text if text else "not set"
