"""The Textual app: screens, widgets and their styles."""
