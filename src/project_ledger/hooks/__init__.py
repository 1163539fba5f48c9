"""What a hook process may load before the rest of the ledger: the clients' hook protocols (`clients/`), the event
they all give (`event`) and the hooks log (`log`).

Standard library only (tests/test_boundaries.py): the hook's short way (`cli/fast_path.py`) imports these before the
CLI, its settings or the services, and every import here is paid on every prompt.
"""
