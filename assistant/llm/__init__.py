"""Reaching a language model: the local llama.cpp server and the openai client."""
