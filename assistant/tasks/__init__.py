"""Background work: delegated tasks run by sub-agents, reminders, and the heartbeat."""
