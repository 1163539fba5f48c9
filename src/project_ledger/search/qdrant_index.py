"""The server backend: one collection per project on a Qdrant server or cluster, through qdrant-client.

The same class runs against qdrant-client's local mode (`path=`), which speaks
the same API; that is how its tests run without a server. The journal revision
the collection reflects is kept beside the journal (`index/qdrant-<collection>.json`),
and catching up is serialised between local processes with a file lock, so two
processes never apply changes out of order.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from project_ledger.file_lock import FileLock
from project_ledger.search.index import DENSE, SPARSE, Candidates, Hit, Indexable, IndexState, Match, PayloadType
from project_ledger.search.sparse import SparseVec

# Index state formats a collection keeps: formats 3 (no write-ahead log) and 4 (float16 vectors) changed only the
# embedded shard, so a collection written under format 2 or 3 holds the same points and is not rebuilt from the journal.
SAME_ON_A_SERVER = (2, 3)

_SCHEMA_LOCK = threading.Lock()


def server_version_notes(client: Any) -> list[str]:
    """A note when the server and qdrant-client differ in major version or by more than one minor version, the
    range qdrant-client supports. A server that does not answer gets no note: the next call fails with its reason."""
    from importlib.metadata import version

    try:
        server = str(client.info().version)
    except Exception:  # noqa: BLE001 - whatever the reason, the next call reports it
        return []
    ours = version("qdrant-client")
    if not compatible_versions(ours, server):
        return [f"Qdrant server {server} may not work with qdrant-client {ours}: upgrade the one that is behind"]
    return []


def compatible_versions(client_version: str, server_version: str) -> bool:
    """Same major version, minor versions at most one apart; a version that does not parse is given the benefit."""
    try:
        client_major, client_minor = (int(part) for part in client_version.split(".")[:2])
        server_major, server_minor = (int(part) for part in server_version.lstrip("v").split(".")[:2])
    except ValueError:
        return True
    return client_major == server_major and abs(client_minor - server_minor) <= 1


class QdrantIndex:
    backend = "qdrant-server"

    def __init__(
        self,
        client: Any,
        collection: str,
        state_dir: Path,
        dim: int,
        embedder_identity: str,
        payload: dict[str, PayloadType],
        location: str,
        owns_client: bool = True,
        create_options: Mapping[str, int] | None = None,
    ) -> None:
        from qdrant_client import models

        self._models = models
        self._create_options = dict(create_options or {})  # shard_number, replication_factor, write_consistency_factor
        self._payload = payload
        self._owns_client = owns_client
        self._client = client
        self._collection = collection
        self._dim = dim
        self.location = f"{location} collection {collection}"
        self.events: list[str] = []
        state_dir.mkdir(parents=True, exist_ok=True)
        self._state = IndexState(
            state_dir / f"qdrant-{collection}.json", embedder_identity, also_reads=SAME_ON_A_SERVER
        )
        self._lock_path = state_dir / f"qdrant-{collection}.lock"
        if owns_client and not location.startswith("local "):
            self.events.extend(server_version_notes(client))
        with self.sync_lock():  # another process may be creating or rebuilding the collection right now
            exists = client.collection_exists(collection)
            if not exists or not self._state.load():
                if exists:
                    self.events.append(f"collection {collection} did not match this journal or model: rebuilt from the journal")
                self.reset(epoch=0)

    @staticmethod
    def client(url: str | None, api_key: str | None, path: Path | None) -> tuple[Any, str]:
        """A client and a description of where it points. Local mode (`path`) allows one client per folder,
        so the memory and code indexes share one."""
        from qdrant_client import QdrantClient

        if path is not None:
            return QdrantClient(path=str(path)), f"local {path}"
        # qdrant-client's own version check warns from a thread, onto stderr, in its words; `server_version_notes`
        # makes the same comparison where the ledger reports it
        return QdrantClient(url=url, api_key=api_key, check_compatibility=False), str(url)

    @contextmanager
    def sync_lock(self) -> Iterator[None]:
        """Catch-up runs one process at a time, re-reading the watermark another process may have moved."""
        lock = FileLock.acquire(self._lock_path)
        try:
            self._state.load()
            yield
        finally:
            lock.release()

    # -- SearchIndex ---------------------------------------------------------

    def watermark(self) -> int:
        return self._state.watermark

    def epoch(self) -> int:
        return self._state.epoch

    def set_watermark(self, rev: int) -> None:
        self._state.watermark = rev
        self._state.save()

    def upsert(self, docs: Sequence[Indexable]) -> None:
        m = self._models
        points = []
        for doc in docs:
            vector: dict[str, Any] = {SPARSE: m.SparseVector(indices=doc.sparse.indices, values=doc.sparse.values)}
            if doc.vector is not None:
                vector[DENSE] = doc.vector
            points.append(m.PointStruct(id=doc.seq, vector=vector, payload=doc.payload()))
        if points:
            self._client.upsert(self._collection, points=points, wait=True)

    def delete(self, seqs: Sequence[int]) -> None:
        if seqs:
            selector = self._models.PointIdsList(points=list(seqs))
            self._client.delete(self._collection, points_selector=selector, wait=True)

    def _filter(self, where: Sequence[Match]) -> Any:
        m = self._models
        must: list[Any] = []
        for match in where:
            if match.is_range:
                must.append(m.FieldCondition(key=match.field, range=m.Range(gte=match.at_least, lte=match.at_most)))
            elif len(match.any_of) == 1:
                must.append(m.FieldCondition(key=match.field, match=m.MatchValue(value=match.any_of[0])))
            else:
                must.append(m.FieldCondition(key=match.field, match=m.MatchAny(any=list(match.any_of))))
        return m.Filter(must=must) if must else None

    def candidates(self, dense: list[float] | None, sparse: SparseVec, where: Sequence[Match], limit: int) -> Candidates:
        m = self._models
        flt = self._filter(where)
        terms = m.SparseVector(indices=sparse.indices, values=sparse.values)
        requests = [m.QueryRequest(query=terms, using=SPARSE, filter=flt, limit=limit, with_payload=False)]
        if dense is not None:
            requests.append(m.QueryRequest(query=dense, using=DENSE, filter=flt, limit=limit, with_payload=False))
        answers = self._client.query_batch_points(self._collection, requests=requests)
        by_terms, *by_meaning = ([Hit(int(p.id), float(p.score)) for p in answer.points] for answer in answers)
        return Candidates(dense=by_meaning[0] if by_meaning else [], sparse=by_terms)

    def count(self) -> int:
        return int(self._client.count(self._collection, exact=True).count)

    def reset(self, epoch: int) -> None:
        m = self._models
        schema = {
            "keyword": m.PayloadSchemaType.KEYWORD,
            "integer": m.PayloadSchemaType.INTEGER,
            "float": m.PayloadSchemaType.FLOAT,
        }
        # Serialised in-process: the memory and code indexes share one client, and local mode rewrites
        # one meta.json per collection change (two at once lose a rename); catch_warnings is process-wide too.
        with _SCHEMA_LOCK, warnings.catch_warnings():  # local mode warns that it ignores payload indexes
            warnings.simplefilter("ignore")
            if self._client.collection_exists(self._collection):
                self._client.delete_collection(self._collection)
            self._client.create_collection(
                self._collection,
                vectors_config={DENSE: m.VectorParams(size=self._dim, distance=m.Distance.COSINE)},
                sparse_vectors_config={SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
                **self._create_options,
            )
            for name, kind in self._payload.items():
                self._client.create_payload_index(self._collection, field_name=name, field_schema=schema[kind])
        self._state.epoch, self._state.watermark = epoch, 0
        self._state.save()

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    @staticmethod
    def drop(client: Any, collection: str, state_dir: Path) -> bool:
        """Delete a collection and the watermark kept for it beside the journal; False if there was none."""
        (state_dir / f"qdrant-{collection}.json").unlink(missing_ok=True)
        if not client.collection_exists(collection):
            return False
        client.delete_collection(collection)
        return True

