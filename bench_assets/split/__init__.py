"""The public/holdout split and the holdout's custody: the keyed split, decoys, commitments and the leak guard."""
