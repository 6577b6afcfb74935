"""The problem suite: one folder per problem, and the registry that finds and validates them."""
