"""pytest plugin: broker fixtures and markers (being written)."""
