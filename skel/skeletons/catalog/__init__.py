"""One module per skeleton; the registry discovers them. Module name = id with underscores."""
