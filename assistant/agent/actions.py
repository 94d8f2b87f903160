"""Reading the model's action object. Whatever comes back (broken JSON, an unknown tool, wrong
or missing arguments, an empty reply, a huge string) becomes an ``ActionError`` whose message
tells the model what to fix; nothing here raises anything else."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from assistant.agent.tools import Arguments, Tool

QUOTE_CHARS = 120


class ActionError(ValueError):
    """The reply was not a usable action; the message is for the model."""


@dataclass(frozen=True)
class Action:
    tool: str
    arguments: Arguments
    request_heartbeat: bool
    # The text the model wrote the action as (JSON action mode): the history keeps it byte for
    # byte, so the server's cache of what it generated matches the next prompt.
    written: str | None = None

    def as_json(self) -> str:
        """The action as the model should have written it (a message in its short form)."""
        if self.tool == "send_message":
            return json.dumps(
                {"message": self.arguments.model_dump()["message"]}, ensure_ascii=False
            )
        return json.dumps(
            {
                "tool": self.tool,
                "arguments": self.arguments.model_dump(),
                "request_heartbeat": self.request_heartbeat,
            },
            ensure_ascii=False,
        )

    def as_history(self) -> str:
        """What the history keeps of the action: the model's own text where there is one."""
        return self.written if self.written is not None else self.as_json()


def parse_action(text: str, tools: Mapping[str, Tool]) -> Action:
    if not text or not text.strip():
        raise ActionError("the reply was empty: reply with one JSON action object")
    try:
        value = _json(text)
    except json.JSONDecodeError as error:
        raise ActionError(
            f"the reply is not valid JSON ({error.msg} at character {error.pos}): {_quote(text)}"
        ) from None
    except RecursionError:
        raise ActionError("the reply is nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ActionError(f"the reply must be a JSON object, not {type(value).__name__}")
    return read_action(value, tools)


def parse_call(name: str, arguments: str, tools: Mapping[str, Tool]) -> Action:
    """A native tool call: the tool's name and its JSON arguments, ``request_heartbeat``
    among them; problems become the same errors as in an action object."""
    _tool(name, tools)
    text = arguments.strip() or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ActionError(
            f"the arguments of {name} are not valid JSON ({error.msg} at character "
            f"{error.pos}): {_quote(text)}"
        ) from None
    except RecursionError:
        raise ActionError(f"the arguments of {name} are nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ActionError(f"the arguments of {name} must be a JSON object")
    heartbeat = value.pop("request_heartbeat", False)
    return read_action({"tool": name, "arguments": value, "request_heartbeat": heartbeat}, tools)


def _json(text: str) -> Any:
    """The reply's JSON; an object wrapped in prose or a Markdown code fence (endpoints that
    are not held to a grammar do that) is read from its first "{" to its last "}"."""
    try:
        # Not strict: a message held to a pattern (tools.py) may break its lines in place.
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        inner = text[start : end + 1] if 0 <= start < end else ""
        if not inner or inner == text.strip():
            raise
        try:
            return json.loads(inner, strict=False)
        except json.JSONDecodeError:
            pass
        raise


def _tool(name: object, tools: Mapping[str, Tool]) -> Tool:
    if not isinstance(name, str) or not name:
        raise ActionError(f'"tool" must name one of: {", ".join(tools)}')
    tool = tools.get(name)
    if tool is None:
        raise ActionError(f"unknown tool {_quote(name)}; tools: {', '.join(tools)}")
    return tool


def read_action(value: dict[str, Any], tools: Mapping[str, Tool]) -> Action:
    """An action from its parsed JSON object (``request_heartbeat`` may be left out); a
    message's short form ``{"message": ...}`` is a send_message."""
    if "tool" not in value and "message" in value and "send_message" in tools:
        value = {"tool": "send_message", "arguments": {"message": value["message"]}}
    name = value.get("tool")
    tool = _tool(name, tools)
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ActionError(f'"arguments" of {name} must be a JSON object')
    try:
        parsed = tool.arguments.model_validate(arguments)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in problem['loc']) or 'arguments'}: {problem['msg']}"
            for problem in error.errors()[:5]
        )
        raise ActionError(f"wrong arguments for {name}: {problems}") from None
    heartbeat = value.get("request_heartbeat", False)
    if not isinstance(heartbeat, bool):
        raise ActionError('"request_heartbeat" must be true or false')
    return Action(tool.name, parsed, heartbeat)


def _quote(text: str) -> str:
    text = text.encode("utf-8", "replace").decode("utf-8")
    return repr(text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…")
