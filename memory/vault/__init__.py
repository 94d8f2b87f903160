"""The memory as an Obsidian vault: one note per memory (and per entity of the knowledge
graph), written as the memory changes and read back as the user edits the notes.

``notes`` renders a note (the one-shot export in memory/export.py renders with it too),
``parse`` reads one back, ``decide`` holds the sync decisions, ``state`` what was last
written, ``files`` the vault's files and ``sync`` puts them together; the service watches the
folder and calls it (assistant/service/vault_relay.py). docs/VAULT.md has the details.
"""
