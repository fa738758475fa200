"""The index: embedders, chunking, the Chroma store and crash-safe ingest."""
