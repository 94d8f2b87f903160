"""Settings: defaults < file < environment < flag, sources shown, bad input named clearly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.config import ConfigError, load_config, setting_infos
from assistant.settings import default_cache_dir, default_data_dir

BRAIN = [sys.executable, "-m", "assistant.cli"]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_use_platform_folders(tmp_path: Path) -> None:
    loaded = load_config(environ={}, config_file=write(tmp_path / "c.toml", ""))
    assert loaded.settings.profile == "quality"
    assert loaded.settings.data_dir == default_data_dir()
    assert loaded.settings.cache_dir == default_cache_dir()
    assert loaded.settings.llm.base_url is None
    assert all(source == "default" for _, _, source in loaded.items())


def test_precedence_file_then_env_then_flag(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        'profile = "fast"\n[llm]\ncontext_window = 2048\nthreads = 3\ntimeout_s = 5\n',
    )
    environ = {"BRAIN_LLM_CONTEXT_WINDOW": "3072", "BRAIN_LLM_THREADS": "4"}
    loaded = load_config(flags={"llm.threads": "1"}, environ=environ, config_file=config)
    llm = loaded.settings.llm
    assert loaded.settings.profile == "fast"
    assert (llm.timeout_s, llm.context_window, llm.threads) == (5.0, 3072, 1)
    assert loaded.sources["profile"] == f"file {config}"
    assert loaded.sources["llm.context_window"] == "env BRAIN_LLM_CONTEXT_WINDOW"
    assert loaded.sources["llm.threads"] == "flag --llm-threads"


def test_openai_variables_name_the_endpoint_below_brain_ones(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "")
    environ = {"OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
    loaded = load_config(environ=environ, config_file=config)
    assert loaded.settings.llm.base_url == "http://a/v1"
    assert (loaded.settings.llm.api_key, loaded.settings.llm.model) == ("k", "m")
    loaded = load_config(
        environ={**environ, "BRAIN_LLM_BASE_URL": "http://b/v1"}, config_file=config
    )
    assert loaded.settings.llm.base_url == "http://b/v1"


@pytest.mark.parametrize(
    ("text", "environ", "flags", "expected"),
    [
        (
            "[llm]\nbse_url = 'x'\n",
            {},
            {},
            "unknown key 'llm.bse_url' (did you mean 'llm.base_url'?)",
        ),
        ("[lm]\nbase_url = 'x'\n", {}, {}, "unknown section [lm]"),
        ("profile = 'huge'\n", {}, {}, "bad value for profile = 'huge'"),
        ("", {"BRAIN_LLM_CONTEXT_WINDOW": "lots"}, {}, "llm.context_window = 'lots' (from env"),
        ("", {"BRAIN_LLM_THREDS": "2"}, {}, "BRAIN_LLM_THREDS (did you mean BRAIN_LLM_THREADS?)"),
        ("", {}, {"stt.beam_size": "0"}, "stt.beam_size = '0' (from flag --stt-beam-size)"),
        ("profile = [", {}, {}, "is not valid TOML"),
    ],
)
def test_bad_settings_name_the_key_and_source(
    tmp_path: Path, text: str, environ: dict[str, str], flags: dict[str, str], expected: str
) -> None:
    config = write(tmp_path / "c.toml", text)
    with pytest.raises(ConfigError) as raised:
        load_config(flags=flags, environ=environ, config_file=config)
    assert expected in str(raised.value)


def test_secrets_are_masked(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "[llm]\napi_key = 'sk-secret'\n")
    result = subprocess.run(
        [*BRAIN, "config", "--config", str(config)], capture_output=True, text=True, check=True
    )
    assert "sk-secret" not in result.stdout
    assert "********" in result.stdout


def test_brain_config_shows_each_source(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "[stt]\nbeam_size = 2\n[tts]\nspeed = 1.5\n")
    environ = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BRAIN_CONFIG": str(config),
        "BRAIN_TTS_SPEED": "1.2",
    }
    result = subprocess.run(
        [*BRAIN, "config", "--json", "--profile", "fast"],
        capture_output=True,
        text=True,
        check=True,
        env=environ,
    )
    shown = json.loads(result.stdout)["settings"]
    assert shown["profile"] == {"value": "fast", "source": "flag --profile"}
    assert shown["stt.beam_size"] == {"value": "2", "source": f"file {config}"}
    assert shown["tts.speed"] == {"value": "1.2", "source": "env BRAIN_TTS_SPEED"}
    assert shown["llm.threads"]["source"] == "default"


def test_cli_bad_config_is_one_clear_line(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "[llm]\ncontext_window = 'big'\n")
    result = subprocess.run(
        [*BRAIN, "config", "--config", str(config)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "llm.context_window" in result.stderr and "Traceback" not in result.stderr


def test_flag_before_subcommand_survives(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "")
    result = subprocess.run(
        [*BRAIN, "--profile", "fast", "config", "--json", "--config", str(config)],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert json.loads(result.stdout)["settings"]["profile"]["value"] == "fast"


def test_every_setting_is_documented() -> None:
    documented = (Path(__file__).parent.parent / "docs" / "CONFIG.md").read_text(encoding="utf-8")
    missing = [info.key for info in setting_infos() if f"| `{info.key}` |" not in documented]
    assert missing == [], f"docs/CONFIG.md lacks {missing}"
