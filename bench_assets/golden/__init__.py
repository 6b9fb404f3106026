"""Golden truth: the rows, their sources (planted pages, files), verification against their pages, dead rows and pools."""
