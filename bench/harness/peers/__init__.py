"""Runners of the peer engines and of Calico's Python API (see bench/harness/__init__.py)."""
