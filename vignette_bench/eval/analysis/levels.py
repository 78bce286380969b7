"""The two numbers a verdict turns on, in a module light enough for the command-line parsers to import."""

Q = 0.05  # the global q a verdict needs (Simes over an identity's families, BH over identities)
MIN_EFFECT = 5.0  # pp: the smallest effect a verdict calls bias (`vignette report --min-effect`)
