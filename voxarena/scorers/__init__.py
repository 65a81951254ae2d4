"""The scorer: a metric registry and the gRPC service that computes every metric VoxArena reports."""
