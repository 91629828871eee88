"""Shared BERT: every layer shared by all tasks; only a head (and optionally a pooler) per task."""
