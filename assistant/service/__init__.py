"""The assistant service (`brain serve`) and its clients, over a Unix socket."""
