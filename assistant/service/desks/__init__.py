"""The service's desks, one per domain of the protocol: each turns its domain's requests into
calls on the parts that carry them out, and their records into wire rows, and adds its
handlers to the service's request registry (requests.py)."""
