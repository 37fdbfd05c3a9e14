"""Tools around the engine: anomaly detection, gradient checks, checkpointing, save/load."""
