"""Typed view of ``models/manifest.toml``: profiles, weights, files and the package parts."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Literal

Part = Literal["stt", "llm", "tts", "embedder", "turn"]
PARTS: tuple[Part, ...] = ("stt", "llm", "tts", "embedder", "turn")
Layout = Literal["file", "files", "folder"]


@dataclass(frozen=True)
class PackagePart:
    """One piece of a weight file, shipped inside an installed package."""

    package: str
    version: str
    module: str
    path: str
    size: int
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class WeightFile:
    name: str
    size: int
    sha256: str
    parts: tuple[PackagePart, ...]
    role: str | None = None

    @property
    def is_split(self) -> bool:
        return len(self.parts) > 1


@dataclass(frozen=True)
class Weight:
    id: str
    kind: Part
    layout: Layout
    description: str
    license: str
    files: tuple[WeightFile, ...]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def packages(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for weight_file in self.files:
            for part in weight_file.parts:
                seen.setdefault(part.requirement)
        return tuple(seen)


@dataclass(frozen=True)
class Manifest:
    profiles: dict[str, dict[Part, str]]
    weights: dict[str, Weight]

    def weight_for(self, profile: str, part: Part) -> Weight:
        return self.weights[self.profiles[profile][part]]


@cache
def load_manifest() -> Manifest:
    text = files("models").joinpath("manifest.toml").read_text(encoding="utf-8")
    document = tomllib.loads(text)
    weights = {
        weight_id: Weight(
            id=weight_id,
            kind=table["kind"],
            layout=table["layout"],
            description=table["description"],
            license=table["license"],
            files=tuple(
                WeightFile(
                    name=entry["name"],
                    size=entry["size"],
                    sha256=entry["sha256"],
                    role=entry.get("role"),
                    parts=tuple(PackagePart(**part) for part in entry["parts"]),
                )
                for entry in table["files"]
            ),
        )
        for weight_id, table in document["weights"].items()
    }
    profiles = {name: dict(table) for name, table in document["profiles"].items()}
    for name, table in profiles.items():
        for part, weight_id in table.items():
            if weight_id not in weights:
                raise ValueError(f"profile {name}: {part} names unknown weight {weight_id!r}")
    return Manifest(profiles=profiles, weights=weights)
