"""Types of the compiled pass (``_edn_scan.pyx``, built by scripts/build-native)."""

GRAMMAR: int

def jepsen_lines_to_json(block: bytes) -> tuple[bytes, int, int] | None: ...
