"""The code-search adapter: two linear maps on the bundled model's vectors, trained here for questions about code.

A question and a symbol text are embedded by the bundled all-MiniLM-L6-v2 as before; the question's vector is
then multiplied by one 384 x 384 matrix and the symbol's by another, each made unit length again. The matrices
were trained on (docstring summary, symbol text) pairs from public PyPI and npm packages (`training/`), never on
the trees that measure code search. They ship as `trained/code_adapter.npz` (float16) and are checked against
ADAPTER_SHA256 before use: a changed file fails the load, as a changed model does.
"""

from __future__ import annotations

import hashlib
import io
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy stays off the import path of `serve` (tests/test_start_imports.py)
    import numpy as np

ADAPTER_FILE = "code_adapter.npz"
ADAPTER_SHA256 = "242dd294a604e121422a7ae665da29f07ada00d24da35e3ba5f2e407ff74689d"


class CodeAdapter:
    """The maps, as float32: `query` for a question's vector, `documents` for symbols' vectors."""

    def __init__(self, query: np.ndarray, document: np.ndarray) -> None:
        import numpy as np

        self._query = np.ascontiguousarray(query.T, dtype=np.float32)
        self._document = np.ascontiguousarray(document.T, dtype=np.float32)

    def query(self, vector: np.ndarray) -> np.ndarray:
        return _unit(vector.astype(self._query.dtype) @ self._query)

    def documents(self, vectors: list[np.ndarray]) -> list[np.ndarray]:
        import numpy as np

        if not vectors:
            return []
        return list(_unit(np.stack(vectors).astype(np.float32) @ self._document))


def _unit(x: np.ndarray) -> np.ndarray:
    import numpy as np

    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def load_adapter(content: bytes | None = None) -> CodeAdapter:
    """The shipped adapter (or one given as `content`, the bytes of such a file), after its hash check."""
    if content is None:
        content = resources.files(__package__).joinpath("trained", ADAPTER_FILE).read_bytes()
        actual = hashlib.sha256(content).hexdigest()
        if actual != ADAPTER_SHA256:
            raise RuntimeError(f"the code adapter has sha256 {actual}, expected {ADAPTER_SHA256}; reinstall project-ledger")
    import numpy as np

    with np.load(io.BytesIO(content)) as arrays:
        return CodeAdapter(arrays["q"], arrays["d"])
