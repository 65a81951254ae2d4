"""The arms race: rounds of attack and retraining, and their report."""
