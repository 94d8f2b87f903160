"""Real recorded speech for tests and benchmarks: the LibriVox clips and the playing-card
commands of pocketsphinx 5.1.1.

The pocketsphinx source distribution ships five short LibriVox recordings and five spoken
playing cards ("ten of clubs", 1-3.5 s), all 16 kHz mono WAV, with their transcripts. It is
fetched once with pip into ``<root>/pocketsphinx`` and extracted there; ``root`` defaults to
the repository's git-ignored ``tests/.data``.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "tests" / ".data"
SDIST_REQUIREMENT = "pocketsphinx==5.1.1"
SDIST_NAME = "pocketsphinx-5.1.1"
LIBRIVOX_FOLDER = Path("test") / "data" / "librivox"
CARDS_FOLDER = Path("test") / "data" / "cards"
CARD_LINE = re.compile(r"<s>\s*(?P<text>.*?)\s*</s>\s*\((?P<name>\w+)\)")


class SpeechDataError(Exception):
    """The pocketsphinx source distribution could not be fetched or read."""


def librivox_clips(root: Path = DEFAULT_ROOT) -> list[tuple[Path, str]]:
    """Each LibriVox clip as (WAV path, reference transcript), in the order of its fileids."""
    folder = _librivox_folder(root)
    names = (folder / "fileids").read_text(encoding="utf-8").split()
    return [
        (folder / f"{name}.wav", (folder / f"{name}.txt").read_text(encoding="utf-8").strip())
        for name in names
    ]


def card_clips(root: Path = DEFAULT_ROOT) -> list[tuple[Path, str]]:
    """Each playing-card recording as (WAV path, reference transcript), in numbered order."""
    folder = _sdist_folder(root, CARDS_FOLDER)
    lines = (folder / "cards.transcription").read_text(encoding="utf-8").splitlines()
    found = [match for line in lines if (match := CARD_LINE.search(line))]
    return [(folder / f"{match['name']}.wav", match["text"]) for match in found]


def _librivox_folder(root: Path) -> Path:
    return _sdist_folder(root, LIBRIVOX_FOLDER)


def _sdist_folder(root: Path, inside: Path) -> Path:
    base = root / "pocketsphinx"
    folder = base / SDIST_NAME / inside
    if not folder.is_dir():
        archive = _download(base)
        _extract(archive, base)
        if not folder.is_dir():
            raise SpeechDataError(f"{archive} holds no {inside}")
    return folder


def _download(base: Path) -> Path:
    archive = base / f"{SDIST_NAME}.tar.gz"
    if archive.exists():
        return archive
    base.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary"]
    command += ["pocketsphinx", SDIST_REQUIREMENT, "-d", str(base)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not archive.exists():
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise SpeechDataError(f"could not download {SDIST_REQUIREMENT} with pip: {tail}")
    return archive


def _extract(archive: Path, base: Path) -> None:
    # Extract beside the target and rename, so a reader never sees a half-extracted tree.
    with tempfile.TemporaryDirectory(dir=base) as scratch:
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(scratch, filter="data")
        except (tarfile.TarError, OSError) as error:
            raise SpeechDataError(f"could not extract {archive}: {error}") from None
        with contextlib.suppress(OSError):  # another process extracted it first
            (Path(scratch) / SDIST_NAME).rename(base / SDIST_NAME)
