"""Re-deriving every published figure from the archive (`bench rescore`)."""
