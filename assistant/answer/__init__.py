"""Answering: generators, context building, citation checks, the ask/chat pipeline."""
