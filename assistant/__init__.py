"""The master agent and everything around it: settings, LLM access, the command line."""
