"""The model manifest and the store that turns packaged weights into files on disk."""

from models.manifest import PARTS, Manifest, PackagePart, Part, Weight, WeightFile, load_manifest
from models.store import ModelError, ModelStore, Progress, ProgressCallback, ResolvedWeight

__all__ = [
    "PARTS",
    "Manifest",
    "ModelError",
    "ModelStore",
    "PackagePart",
    "Part",
    "Progress",
    "ProgressCallback",
    "ResolvedWeight",
    "Weight",
    "WeightFile",
    "load_manifest",
]
