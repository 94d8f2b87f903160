"""Core memory (MemGPT section 2.1): small, named blocks shown in every prompt, which the agent
edits with tools. Kept in a JSON file in the data folder, written atomically (temp file, fsync,
rename), readable by the user only.

The rendering is byte-stable: the same blocks give the same text, so the prompt prefix (system
instructions + core memory) does not change between turns unless a block does, and the
llama.cpp server can reuse its cached prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memory.files import atomic_file

DEFAULT_LIMIT = 1_200
DEFAULT_BLOCKS: dict[str, tuple[str, str]] = {
    # In the second person, as the instructions are: written as "I am ...", it was a reply
    # ready to copy, and the 0.5B model answered an introduction with it, the user's name in
    # place of its own, and went on saying it.
    "persona": (
        "Who you are and how you behave.",
        "You are Brain OS, the user's personal assistant on their computer: warm, brief and "
        "precise, keeping what matters to the user.",
    ),
    "human": ("What you know about the user: name, people, preferences, plans.", ""),
}


class CoreMemoryError(ValueError):
    """An edit the agent asked for that cannot be made; the message is for the model."""


@dataclass
class Block:
    label: str
    description: str
    value: str
    limit: int = DEFAULT_LIMIT


class CoreMemory:
    def __init__(self, path: Path, limit: int = DEFAULT_LIMIT) -> None:
        self.path = path
        self.blocks: dict[str, Block] = {
            label: Block(label, description, value, limit)
            for label, (description, value) in DEFAULT_BLOCKS.items()
        }
        if path.exists():
            self._load()

    def _load(self) -> None:
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            values = {str(k): str(v) for k, v in stored["blocks"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CoreMemoryError(
                f"core memory file {self.path} cannot be read ({error}); it was left untouched"
            ) from None
        for label, value in values.items():
            if label in self.blocks:
                self.blocks[label].value = value

    def render(self) -> str:
        parts = []
        for block in self.blocks.values():
            parts.append(
                f'<{block.label} chars="{len(block.value)}/{block.limit}">\n'
                f"{block.value}\n</{block.label}>"
            )
        return "\n".join(parts)

    def append(self, label: str, content: str) -> str:
        block = self._block(label)
        content = content.strip()
        if not content:
            raise CoreMemoryError("nothing to append: content is empty")
        value = f"{block.value}\n{content}" if block.value else content
        return self._set(block, value)

    def replace(self, label: str, old: str, new: str) -> str:
        block = self._block(label)
        if not old:
            raise CoreMemoryError("old_content is empty: quote the exact text to replace")
        if old not in block.value:
            raise CoreMemoryError(
                f"old_content not found in {label}; quote it exactly as it appears in the block"
            )
        return self._set(block, block.value.replace(old, new.strip(), 1).strip())

    def keep(self, label: str, value: str) -> bool:
        """Set a block's whole text if it changed (code keeping what the user said about
        themselves); False when it did not, or would not fit."""
        block = self._block(label)
        if value == block.value:
            return False
        try:
            self._set(block, value)
        except CoreMemoryError:
            return False
        return True

    def set(self, label: str, value: str) -> str:
        """Replace a block's whole text (the user editing it on screen)."""
        return self._set(self._block(label), value.strip())

    def _block(self, label: str) -> Block:
        block = self.blocks.get(label)
        if block is None:
            raise CoreMemoryError(
                f"no core memory block {label!r}; blocks: {', '.join(self.blocks)}"
            )
        return block

    def _set(self, block: Block, value: str) -> str:
        if len(value) > block.limit:
            raise CoreMemoryError(
                f"{block.label} would hold {len(value)} characters, over its limit of "
                f"{block.limit}: replace or shorten something first"
            )
        block.value = value
        self._save()
        return f"{block.label} now holds {len(value)}/{block.limit} characters"

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(
            {"version": 1, "blocks": {b.label: b.value for b in self.blocks.values()}},
            ensure_ascii=False,
            indent=2,
        )
        with atomic_file(self.path, mode=0o600) as file:
            file.write(data)
