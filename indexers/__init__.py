"""What turns raw material into index entries: memory points, embeddings, and the index backends."""
