"""From a decoded request to a user function: registries, contexts, typed binding."""
