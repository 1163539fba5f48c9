"""Which packages of `packages.txt` training holds back: their pairs choose each model's checkpoint, and
`held_back_search.py` asks `search_code` about their code. Needs nothing but the standard library."""

from __future__ import annotations

import hashlib


def held_back(package: str) -> bool:
    """Every tenth package, by hash: the same split on every machine."""
    return int(hashlib.sha256(package.encode()).hexdigest(), 16) % 10 == 0
