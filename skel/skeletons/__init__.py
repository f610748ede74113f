"""The skeleton catalog: one module per technique under ``catalog/``, fixtures beside it."""
