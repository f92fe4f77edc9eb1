"""Report scripts: the drivers' JSON lines into tables and figures (see bench/harness/__init__.py)."""
