"""mcpsync mounted inside real web frameworks (the Flask and Django examples)."""
