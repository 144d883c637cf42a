"""The staging location: durable, immutable, numbered chunk files, the single source of every batch.

Layout under ``stagingLocation``::

    chunks/0000000000000042.arrow   one staged chunk (Arrow IPC file), immutable once visible
    tmp/                            files being written; anything here after a crash is garbage
    committed.json                  {"seq": N}: Spark committed every batch up to chunk N
    read.json                       a batch read (spark.read): {"read": n, "first": a, "last": b,
                                    "open": true} until commit_read(), then "open": false
    .lock                           held (flock) by the one driver that owns this location

A chunk becomes visible atomically: it is written under ``tmp/``, fsynced, hard-linked to its final
name (``link`` fails if the name exists, so two writers can never overwrite each other's chunk), and the
directory is fsynced. Executors read chunks by name, so a batch replayed after a crash reads exactly the
same bytes. Pure file code (pyarrow for the format): no Spark, no broker.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

_SEQ_DIGITS = 16


class StagingError(RuntimeError):
    """The staging location is unusable or inconsistent; the message says what to do."""


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class StagingStore:
    """One staging location (see the module docstring)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.chunks = os.path.join(self.root, "chunks")
        self.tmp = os.path.join(self.root, "tmp")
        self._lock_fd: int | None = None

    def prepare(self) -> None:
        for path in (self.root, self.chunks, self.tmp):
            os.makedirs(path, exist_ok=True)

    # -- ownership ------------------------------------------------------------------------------------

    def acquire(self, timeout_s: float) -> None:
        """Take the location's lock, waiting up to ``timeout_s`` for a previous driver (still dying
        after a crash, or another query) to let go. Held until :meth:`release` or process exit."""
        if self._lock_fd is not None:
            return
        self.prepare()
        fd = os.open(os.path.join(self.root, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StagingError(
                        f"the staging location {self.root} is in use by another driver (its lock is held); "
                        "each streaming query needs its own stagingLocation, or stop the other query first"
                    ) from exc
                time.sleep(0.2)
        self._lock_fd = fd
        for name in os.listdir(self.tmp):  # leftovers of a crashed writer: never visible, never acked
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.tmp, name))

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- chunks ---------------------------------------------------------------------------------------

    def chunk_path(self, seq: int) -> str:
        return os.path.join(self.chunks, f"{seq:0{_SEQ_DIGITS}d}.arrow")

    def list_chunks(self) -> list[int]:
        try:
            names = os.listdir(self.chunks)
        except FileNotFoundError:
            return []
        return sorted(int(n[:-6]) for n in names if n.endswith(".arrow") and n[:-6].isdigit())

    def write_chunk(self, seq: int, table: Any) -> bool:
        """Make chunk ``seq`` visible with ``table``'s rows, durably. False if ``seq`` already exists."""
        import pyarrow as pa

        tmp = os.path.join(self.tmp, f"{seq}.{uuid.uuid4().hex}.arrow")
        with open(tmp, "wb") as raw:
            with pa.ipc.new_file(raw, table.schema) as writer:
                writer.write_table(table)
            raw.flush()
            os.fsync(raw.fileno())
        try:
            os.link(tmp, self.chunk_path(seq))
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        _fsync_dir(self.chunks)
        return True

    def read_keys(self, seq: int, column: str) -> list[str]:
        import pyarrow as pa

        with pa.memory_map(self.chunk_path(seq)) as source:
            table = pa.ipc.open_file(source).read_all()
            return [str(k) for k in table.column(column).to_pylist()]

    def read_batches(self, seq: int, columns: list[str]) -> Iterator[Any]:
        """The record batches of chunk ``seq`` restricted to ``columns`` (what Spark reads)."""
        import pyarrow as pa

        path = self.chunk_path(seq)
        if not os.path.exists(path):
            raise StagingError(
                f"staged chunk {path} is missing: the staging location was changed or cleaned while the "
                "query's checkpoint still needs it; restore it, or start a new query with a new checkpoint "
                "and a new stagingLocation"
            )
        with pa.memory_map(path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i).select(columns)

    def delete_chunk(self, seq: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.chunk_path(seq))

    # -- commit marker --------------------------------------------------------------------------------

    def committed(self) -> int:
        try:
            with open(os.path.join(self.root, "committed.json"), encoding="utf-8") as handle:
                return int(json.load(handle)["seq"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError) as exc:
            raise StagingError(f"{self.root}/committed.json is unreadable: {exc}") from exc

    def set_committed(self, seq: int) -> None:
        self._replace_json("committed.json", {"seq": seq})

    # -- the batch read record ------------------------------------------------------------------------

    def read_record(self) -> dict[str, Any] | None:
        """The last batch read's record (``read``, ``first``, ``last``, ``open``), None before the first."""
        try:
            with open(os.path.join(self.root, "read.json"), encoding="utf-8") as handle:
                record = json.load(handle)
            return {
                "read": int(record["read"]),
                "first": int(record["first"]),
                "last": int(record["last"]),
                "open": bool(record["open"]),
            }
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise StagingError(f"{self.root}/read.json is unreadable: {exc}") from exc

    def set_read_record(self, read: int, first: int, last: int, *, open_: bool) -> None:
        self._replace_json("read.json", {"read": read, "first": first, "last": last, "open": open_})

    def _replace_json(self, name: str, content: dict[str, Any]) -> None:
        """Replace ``name`` atomically and durably (write under tmp/, fsync, rename, fsync the directory)."""
        tmp = os.path.join(self.tmp, f"{name}.{uuid.uuid4().hex}")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, os.path.join(self.root, name))
        _fsync_dir(self.root)
