"""The ground-truth harness for reading (``run.py``; the method in README.md)."""
