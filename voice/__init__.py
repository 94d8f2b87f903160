"""Sound in and out: devices, speech to text, text to speech. Knows nothing of agents."""
