"""A send_message text read out of an action while the model writes it, chunk by chunk."""

from __future__ import annotations

from assistant.agent.streaming import MessageStream


def streamed(raw: str, chunk: int = 3) -> MessageStream:
    message = MessageStream()
    for start in range(0, len(raw), chunk):
        message.feed(raw[start : start + chunk])
    return message


def test_the_text_comes_out_of_each_form_of_a_message() -> None:
    forms = [
        '{"message": "Hi, Sid.\\nHow are you?"}',
        '{"known": true, "message": "Hi, Sid.\\nHow are you?"}',
        '{"tool": "send_message", "arguments": {"message": "Hi, Sid.\\nHow are you?"}}',
        '{"tool": "send_message", "request_heartbeat": false,\n  "arguments": '
        '{"request_heartbeat": false, "message": "Hi, Sid.\\nHow are you?"}}',
    ]
    for raw in forms:
        message = streamed(raw)
        assert message.text == "Hi, Sid.\nHow are you?" and message.complete, raw


def test_a_long_reply_with_no_message_near_its_start_is_not_searched_to_its_end() -> None:
    """Searched at every chunk through the whole reply, a 300,000-character one took minutes;
    a message's text starts within its first hundred or so characters."""
    rambling = '{"tool": "recall_search", "arguments": {"query": "' + "tea " * 75_000
    message = streamed(rambling + '", "message": "not a message"}}', chunk=64)
    assert message.text == "" and not message.complete
    assert len(message.raw) > 300_000, "everything is kept for the action's parse"
