"""Where a benchmark run reads and writes, which labs it uses, and the choices of its command
line: one immutable Settings, built once from the environment and the arguments."""

import dataclasses
from pathlib import Path

from .common import sh

# The build bench/run-all configures and builds itself when a target is missing.
DEFAULT_BUILD = Path("/tmp/kfaild-bench-build")
# The article-method peer's venv needs this confluent-kafka (bench/peer-probe/probe.py).
CONFLUENT_KAFKA = "confluent-kafka==2.16.1"


@dataclasses.dataclass(frozen=True)
class Settings:
    bench: Path
    results: Path
    build: Path
    work: Path
    venv: Path
    cache: Path
    # The three-broker lab (the parts that kill brokers) and the one-broker lab (the load source
    # of the probe-cost parts), as the lab script's environment.
    lab_env: dict
    lab1_env: dict
    # The secured lab (SASL_SSL, SCRAM-SHA-512, the lab's CA: lab/README.md), three brokers: the
    # secured part's.
    secured_env: dict = dataclasses.field(default_factory=dict)
    # The article-method peer: probe.py (python, confluent-kafka) or its C++ port on librdkafka
    # (bench/peer-probe/refprobe.cc, `--peer-impl cxx`): the same options, CSV and JSON.
    peer_impl: str = "python"
    # KMinion: built from a git checkout of its source, or the operator's binary and its commit.
    kminion_src: str = ""
    kminion: str = ""
    kminion_commit: str = ""
    # bench/run-all's arguments, and the KFAILD_BENCH_* variables it ran with, for the results.
    argv: tuple = ()
    bench_env: tuple = ()

    @classmethod
    def from_environ(cls, environ, argv=(), peer_impl="python", bench=None):
        bench = bench or Path(__file__).resolve().parent.parent
        home = Path.home()
        return cls(
            bench=bench,
            results=Path(environ.get("KFAILD_BENCH_RESULTS", str(bench / "results"))),
            build=Path(environ.get("KFAILD_BENCH_BUILD", str(DEFAULT_BUILD))),
            work=Path(environ.get("KFAILD_BENCH_WORK", "/tmp/kfaild-bench-work")),
            venv=Path(environ.get("KFAILD_BENCH_VENV", str(home / ".cache/kfaild/venv"))),
            cache=Path(environ.get("KFAILD_CACHE", str(home / ".cache/kfaild"))),
            lab_env={
                "KFAILD_LAB_PORT_BASE": environ.get("KFAILD_BENCH_LAB_PORT_BASE", "29000"),
                "KFAILD_LAB_DIR": environ.get("KFAILD_BENCH_LAB_DIR", "/tmp/bench-lab"),
            },
            # One broker, replication factor 1, so that on this small machine the cluster acks
            # what the probes send and the probes, not the brokers' replication, are what is
            # measured. Its JVMs are other processes: CPU is measured per process, so their cost
            # is not counted against either probe (it is shown beside).
            lab1_env={
                "KFAILD_LAB_PORT_BASE": environ.get("KFAILD_BENCH_LAB1_PORT_BASE", "29200"),
                "KFAILD_LAB_DIR": environ.get("KFAILD_BENCH_LAB1_DIR", "/tmp/bench-lab-1b"),
                "KFAILD_LAB_BROKERS": "1",
            },
            secured_env={
                "KFAILD_LAB_PORT_BASE": environ.get("KFAILD_BENCH_SECURED_PORT_BASE", "29400"),
                "KFAILD_LAB_DIR": environ.get("KFAILD_BENCH_SECURED_DIR", "/tmp/bench-lab-secured"),
                "KFAILD_LAB_SECURITY": "sasl_ssl",
            },
            peer_impl=peer_impl,
            kminion_src=environ.get("KFAILD_KMINION_SRC", ""),
            kminion=environ.get("KFAILD_KMINION", ""),
            kminion_commit=environ.get("KFAILD_KMINION_COMMIT", ""),
            argv=tuple(argv),
            bench_env=tuple(
                f"{k}={v}" for k, v in environ.items() if k.startswith("KFAILD_BENCH_")
            ),
        )

    @property
    def repo(self):
        return self.bench.parent

    @property
    def py(self):
        """The venv's interpreter, with confluent-kafka (probe.py, gaps.py, admin calls)."""
        return self.venv / "bin/python"

    @property
    def lab(self):
        return self.repo / "lab/lab"

    @property
    def tools_log4j(self):
        return self.repo / "lab/tools-log4j2.yaml"

    @property
    def jars(self):
        return self.cache / "kafka-4.3.1/libs"

    @property
    def bootstrap(self):
        base = int(self.lab_env["KFAILD_LAB_PORT_BASE"])
        return ",".join(f"127.0.0.1:{base + 91 + i}" for i in range(3))

    @property
    def secured_bootstrap(self):
        base = int(self.secured_env["KFAILD_LAB_PORT_BASE"])
        return ",".join(f"127.0.0.1:{base + 91 + i}" for i in range(3))

    @property
    def bootstrap1(self):
        return f"127.0.0.1:{int(self.lab1_env['KFAILD_LAB_PORT_BASE']) + 91}"

    @property
    def invocation(self):
        """The command line that ran, as the results record it."""
        return sh(["bench/run-all", *self.argv])

    def peer_suffix(self):
        """What a result's name or key carries when the C++ peer measured it."""
        return "-cxx" if self.peer_impl == "cxx" else ""
