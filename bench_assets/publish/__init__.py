"""Publication: the immutable site, its data files and charts, errata and replies, rendered from one record."""
