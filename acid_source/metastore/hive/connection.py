"""One thrift connection to a Hive Metastore, chosen among the URIs of the store URL.

The URL is Hive's ``hive.metastore.uris`` form: ``thrift://h1:9083`` or, for a highly available
deployment, ``thrift://h1:9083,thrift://h2:9083`` (``thrift://h1:9083,h2:9083`` too). Settings
ride as a query string: ``?timeout=30`` (seconds per call), ``?lockTimeout=600`` (seconds a write
waits for a Hive lock; 300 by default). A call that loses its connection is
sent again, once, on the next URI: every call acidorc makes is safe to repeat (Hive's
``allocate_table_write_ids`` returns the write id it already gave the transaction, a commit of
a committed transaction succeeds, an abort of an aborted one is reported as aborted).

How bytes reach the server is one parameter, ``transport``: a callable taking a connected
thrift socket and returning the transport to speak on (buffered, by default). Kerberos / SASL
(``thrift_sasl.TSaslClientTransport``) is another such callable, not a new connection class.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

from ...errors import InvalidArgumentError, MetastoreUnreachableError
from ..urls import THRIFT_SCHEME as SCHEME

DEFAULT_PORT = 9083
DEFAULT_TIMEOUT = 60.0
DEFAULT_LOCK_TIMEOUT = 300.0
_SETTINGS = {"timeout": "timeout", "lockTimeout": "lock_timeout"}


@dataclass(frozen=True)
class MetastoreAddress:
    """The parsed store URL: the URIs in order, and the connection settings."""

    uris: tuple[tuple[str, int], ...]
    timeout: float = DEFAULT_TIMEOUT
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT

    @classmethod
    def parse(cls, url: str) -> "MetastoreAddress":
        text = url.strip()
        body, _, query = text.partition("?")
        uris = []
        for part in body.split(","):
            part = part.strip()
            if not part:
                continue
            if "://" not in part:
                part = f"{SCHEME}://{part}"
            split = urlsplit(part)
            if split.scheme.lower() != SCHEME or not split.hostname or split.path not in ("", "/"):
                raise InvalidArgumentError("metastoreUrl", f"{url!r}: expected thrift://host:port[,thrift://host:port...]")
            try:
                port = split.port or DEFAULT_PORT
            except ValueError:
                raise InvalidArgumentError("metastoreUrl", f"{url!r}: {part!r} has no valid port") from None
            uris.append((split.hostname, port))
        if not uris:
            raise InvalidArgumentError("metastoreUrl", f"{url!r} names no metastore host")
        settings = {"timeout": DEFAULT_TIMEOUT, "lock_timeout": DEFAULT_LOCK_TIMEOUT}
        for key, value in parse_qsl(query, keep_blank_values=True):
            if key not in _SETTINGS:
                raise InvalidArgumentError("metastoreUrl", f"{url!r}: unknown setting {key!r} "
                                                           f"(known: {', '.join(_SETTINGS)})")
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not 0 < seconds < float("inf"):
                raise InvalidArgumentError("metastoreUrl", f"{url!r}: {key} must be a positive number of "
                                                           f"seconds, got {value!r}")
            settings[_SETTINGS[key]] = seconds
        return cls(tuple(uris), **settings)

    def __str__(self) -> str:
        text = ",".join(f"{SCHEME}://{h}:{p}" for h, p in self.uris)
        query = [f"{k}={getattr(self, a):g}" for k, a in _SETTINGS.items()
                 if getattr(self, a) != {"timeout": DEFAULT_TIMEOUT, "lock_timeout": DEFAULT_LOCK_TIMEOUT}[a]]
        return f"{text}?{'&'.join(query)}" if query else text


def buffered_transport(socket: Any) -> Any:
    from thrift.transport import TTransport

    return TTransport.TBufferedTransport(socket)


class Connection:
    """A lazily opened, thread-safe thrift client (the heartbeat thread shares it with the
    writer), reopened after a fork and dropped when pickled."""

    def __init__(self, address: MetastoreAddress, transport: Callable[[Any], Any] = buffered_transport):
        self.address = address
        self.transport = transport
        self._lock = threading.RLock()
        self._client: Any = None
        self._open: Any = None
        self._pid: int | None = None
        self._next_uri = 0

    def __getstate__(self) -> dict:
        return {"address": self.address, "transport": self.transport}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["address"], state["transport"])  # type: ignore[misc]

    def call(self, method: str, *args: Any) -> Any:
        """``client.method(*args)``; a broken connection is reopened (next URI) and the call sent
        once more. Thrift's declared exceptions (NoSuchObjectException, TxnAbortedException...)
        pass through for the caller to translate."""
        from thrift.transport.TTransport import TTransportException

        with self._lock:
            for attempt in range(2):
                client = self._connected()
                try:
                    return getattr(client, method)(*args)
                except (TTransportException, OSError, EOFError) as exc:
                    self._drop()
                    self._next_uri += 1
                    if attempt == 1:
                        raise MetastoreUnreachableError(
                            f"the Hive Metastore at {self.address} stopped answering during {method}: {exc}",
                            url=str(self.address)) from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _connected(self) -> Any:
        if self._client is not None and self._pid == os.getpid():
            return self._client
        self._client = None
        from pymetastore.hive_metastore import ThriftHiveMetastore
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket
        from thrift.transport.TTransport import TTransportException

        errors = []
        count = len(self.address.uris)
        for i in range(count):
            host, port = self.address.uris[(self._next_uri + i) % count]
            socket = TSocket.TSocket(host, port)
            socket.setTimeout(self.address.timeout * 1000)
            transport = self.transport(socket)
            try:
                transport.open()
            except (TTransportException, OSError) as exc:
                errors.append(f"{host}:{port}: {exc}")
                continue
            self._next_uri = (self._next_uri + i) % count
            self._open = transport
            self._client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
            self._pid = os.getpid()
            return self._client
        raise MetastoreUnreachableError(f"no Hive Metastore answered at {self.address}: {'; '.join(errors)}",
                                        url=str(self.address))

    def _drop(self) -> None:
        if self._open is not None and self._pid == os.getpid():
            try:
                self._open.close()
            except Exception:  # noqa: BLE001 - closing a broken socket may fail in any way
                pass
        self._client = self._open = None
