"""Long-term memory. Imports nothing from ``assistant`` or ``ui``: collaborators are passed in."""
