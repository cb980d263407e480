"""Load a pickle that holds plain data only (dicts, lists, tuples, str, bytes, numbers, bools,
None), as torch's memory snapshots (`torch.cuda.memory._dump_snapshot`) are.

Running a pickle can run any code: a pickle names a class or function (opcodes GLOBAL,
STACK_GLOBAL, INST, and the EXT1/2/4 extension registry all resolve through `find_class`) and
then calls it (REDUCE, NEWOBJ, NEWOBJ_EX, OBJ, BUILD). Here `find_class` refuses every name and
`persistent_load` refuses every persistent id (PERSID, BINPERSID), so no callable ever reaches
the unpickler's stack and nothing in the file is executed; the first such opcode ends the load
with one line. Sizes are bounded: the file is read through a reader with only `read`, so every
string or bytes object the pickle announces is read by one `read(n)` call, and an n beyond
MAX_OBJECT_BYTES is refused before anything that large is allocated. A file beyond
MAX_FILE_BYTES is refused before it is read.
"""

from __future__ import annotations

import io
import pickle
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from perfkit.core.errors import TraceError

MAX_OBJECT_BYTES = 64 << 20  # one string / bytes object: no snapshot field comes near
MAX_FILE_BYTES = 16 << 30
FIX = "perfkit reads plain-data torch memory snapshots (torch.cuda.memory._dump_snapshot)"


class _Refused(Exception):
    """Raised inside the unpickler; carries the one line."""


class _BoundedReader:
    """A file seen by pickle through `read` / `readline` only, each call bounded."""

    def __init__(self, fh: IO[bytes], limit: int) -> None:
        self._fh = fh
        self._limit = limit

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > self._limit:
            raise _Refused(f"announces an object of {n} bytes (more than {self._limit >> 20} MiB)")
        return self._fh.read(n)

    def readline(self, limit: int = -1) -> bytes:
        return self._fh.readline(self._limit if limit < 0 else min(limit, self._limit))


@contextmanager
def _quiet_bytearray_bug() -> Iterator[None]:
    """CPython's C unpickler, when a BYTEARRAY8's announced size cannot be allocated, raises
    MemoryError and also prints `SystemError: deallocated bytearray object has exported buffers`
    through sys.excepthook (CPython 3.11-3.13): that print is dropped, every other one kept."""
    before = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if not (kind is SystemError and "bytearray" in str(exc)):
            before(kind, exc, tb)

    sys.excepthook = hook
    try:
        yield
    finally:
        sys.excepthook = before


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"asks for {module[:80]}.{name[:80]} (a class or function: loading it could run code)")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("asks for a persistent object (PERSID: loading it could run code)")


def load_plain_pickle(path: str | Path, max_object_bytes: int = MAX_OBJECT_BYTES) -> Any:
    """The plain data in pickle `path`; TraceError (one line, nothing run) when the pickle
    asks for any class, function or persistent object, is damaged, or is too large."""
    p = Path(path)
    size = p.stat().st_size  # an OSError (missing, unreadable) is the CLI's own one line
    if size > MAX_FILE_BYTES:
        raise TraceError(f"{p}: {size} bytes, more than {MAX_FILE_BYTES >> 30} GiB; {FIX}")
    with open(p, "rb") as fh:
        head = fh.read(2)
        if not head or head[0] != 0x80:  # PROTO: every pickle since protocol 2 starts with it
            raise TraceError(f"{p}: not a pickle (protocol 2 or later); {FIX}")
        fh.seek(0)
        unpickler = _PlainData(_BoundedReader(fh, max_object_bytes))  # type: ignore[arg-type]
        try:
            with _quiet_bytearray_bug():
                return unpickler.load()
        except _Refused as exc:
            raise TraceError(f"{p}: refused: the pickle {exc}; {FIX}") from None
        except RecursionError:
            raise TraceError(f"{p}: nested too deeply to load; {FIX}") from None
        except MemoryError:
            raise TraceError(f"{p}: too large to load in memory; {FIX}") from None
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
                AttributeError, OverflowError, UnicodeDecodeError, io.UnsupportedOperation) as exc:
            what = " ".join(str(exc).split())[:160] or type(exc).__name__
            raise TraceError(f"{p}: damaged pickle ({what}); {FIX}") from None
