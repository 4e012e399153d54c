"""The documentation's own tests: it builds (`test_docs_build`) and every block in it runs (`test_docs_blocks`)."""
