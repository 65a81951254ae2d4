"""The service fleet: gRPC clients, local processes, containers, endpoints and their wait loops."""
