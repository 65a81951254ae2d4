"""The VoxArena contract: generated gRPC stubs (``voxarena.v1``) and the audio codec every party shares."""
