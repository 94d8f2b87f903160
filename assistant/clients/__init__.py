"""The service's clients on the command line (``brain ask``, ``chat``, ``listen``, ``stop``,
``tasks``) and the connection every client, the terminal app included, attaches with."""
