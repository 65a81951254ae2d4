"""Generated protobuf and gRPC stubs for package ``voxarena.v1`` (``make proto``; do not edit)."""
