"""The Docker backend: a private bridge network and N node containers per run, on the local engine."""
