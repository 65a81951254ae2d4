"""A run: config, frozen manifest, plan, shards, the stages that fan out over the fleet, merge, status."""
