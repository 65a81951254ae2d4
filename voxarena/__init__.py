"""The VoxArena contract: generated gRPC stubs (``voxarena.v1``) and the audio codec every party shares."""

# A service started as a local process binds port 0 and prints this prefix and its port on stdout;
# the orchestrator reads it (no free-port race).
PORT_ANNOUNCEMENT = "VOXARENA_PORT="
