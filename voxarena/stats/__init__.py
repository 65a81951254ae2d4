"""The pure statistics core: detection metrics, the speaker bootstrap, composite scores, I2D
aggregates and linear LLR fitting (calibration and fusion). numpy and scipy only, no protobuf and no
service: imported by the scorer service (which fingerprints what it reports) and by the orchestrator's
offline commands alike."""
