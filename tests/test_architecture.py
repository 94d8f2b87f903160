"""The house rules of docs/DEVELOPING.md, checked on the source: who may import whom, and how big
a room may grow."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

PRODUCT = ("assistant", "memory", "voice", "ui", "models")
# Past this a class holds more than one concern (issue 26 split the three that had grown to
# 840-1,011 lines); "about 400" leaves a docstring's worth of slack.
CLASS_LINES = 420


def sources(package: str) -> Iterator[Path]:
    yield from sorted((REPO / package).rglob("*.py"))


def imported(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def crossings(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(REPO)} imports {name}"
        for path in sources(package)
        for name in imported(path)
        if name.split(".")[0] in forbidden or name.startswith(tuple(f"{f}." for f in forbidden))
    ]


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("memory", ("assistant", "ui", "voice")),
        ("voice", ("assistant", "ui")),
        ("models", ("assistant", "ui", "voice", "memory")),
    ],
)
def test_lower_floors_never_import_the_upper_ones(package: str, forbidden: tuple[str, ...]) -> None:
    assert crossings(package, forbidden) == []


def test_the_ui_reaches_the_service_only_through_the_protocol_and_its_client() -> None:
    # Settings, the model files a profile names and the garbage collector's tuning are read by
    # the window itself; everything the service does is asked for through the protocol.
    allowed = (
        "assistant.protocol",
        "assistant.clients",
        "assistant.config",
        "assistant.model_paths",
        "assistant.garbage",
        "ui",
    )
    reached = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in sources("ui")
        for name in imported(path)
        if name.split(".")[0] in ("assistant", "memory", "voice") and not name.startswith(allowed)
    ]
    assert reached == []


def test_no_class_in_the_product_is_a_house_of_its_own() -> None:
    big = []
    for package in PRODUCT:
        for path in sources(package):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                    lines = node.end_lineno - node.lineno + 1
                    if lines > CLASS_LINES:
                        big.append(f"{path.relative_to(REPO)}:{node.name} {lines} lines")
    assert big == []
