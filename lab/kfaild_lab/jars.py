"""The Kafka jars, fetched through pom.xml into the cache, and the class data sharing archive.

Class data sharing: a node's JVM maps Kafka's classes from an archive instead of loading,
verifying and linking them from the jars. A lab of four nodes came up with 6.0-6.4 CPU s
instead of 10.0-11.2 and in 4.6 s instead of 6.5-6.9 (lab/README.md). `lab fetch` writes
the archive once per JDK build (a dynamic archive is valid only for the JDK that wrote it) from
one throwaway node that is broker and controller at once; `up` and `start` use it when it is
there, and a JVM that cannot use it runs as without it. KFAILD_LAB_CDS=0 leaves it out."""

import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from .config import new_cluster_id
from .console import say, warn
from .errors import LabError
from .settings import (
    BROKER_HEAP,
    JVM_PERFORMANCE_OPTS,
    KAFKA_VERSION,
    LOG4J_CONFIG,
    POM,
    TOOLS_LOG4J_CONFIG,
)
from .state import kafka_home, libs_dir


def pom_digest() -> str:
    """The jar cache's key: the SHA-256 of pom.xml without its XML comments, so that what the POM
    declares, not how it is explained, decides whether the jars are fetched again."""
    declared = re.sub(rb"<!--.*?-->", b"", POM.read_bytes(), flags=re.DOTALL)
    return hashlib.sha256(declared).hexdigest()


def jars_ready() -> bool:
    stamp = kafka_home() / ".complete"
    try:
        ok = stamp.read_text().strip() == pom_digest()
    except OSError:
        return False
    return ok and (libs_dir() / f"kafka_2.13-{KAFKA_VERSION}.jar").exists()


def fetch(force: bool = False, quiet: bool = False) -> None:
    if jars_ready() and not force:
        if not quiet:
            say(f"Kafka {KAFKA_VERSION} jars cached in {libs_dir()}")
        return
    mvn = shutil.which("mvn")
    if not mvn:
        raise LabError(
            f"mvn not found: install Maven (apt-get install maven) to fetch the Kafka "
            f"{KAFKA_VERSION} jars into {libs_dir()}"
        )
    home = kafka_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if jars_ready() and not force:
            return
        tmp = home / f"libs.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        say(f"fetching Kafka {KAFKA_VERSION} jars from Maven Central into {libs_dir()} ...")
        t0 = time.monotonic()
        cmd = [
            mvn,
            "-B",
            "-q",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not (tmp / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
            shutil.rmtree(tmp, ignore_errors=True)
            lines = (proc.stdout + proc.stderr).strip().splitlines()[-30:]
            raise LabError(
                "fetching the Kafka jars failed: " + " ".join(cmd) + "\n" + "\n".join(lines)
            )
        stamp = home / ".complete"
        stamp.unlink(missing_ok=True)
        shutil.rmtree(libs_dir(), ignore_errors=True)
        os.replace(tmp, libs_dir())
        stamp.write_text(pom_digest() + "\n")
        count = len(list(libs_dir().glob("*.jar")))
        say(f"fetched {count} jars in {time.monotonic() - t0:.1f} s")


def cds_archive(java: str) -> Path | None:
    """Where the archive of this JDK build is: beside the jars it was made from (a new fetch
    replaces the directory, and the archive with it), or None if the JDK cannot be told apart."""
    real = Path(os.path.realpath(java))
    try:
        st = (real.parent.parent / "lib" / "server" / "libjvm.so").stat()
    except OSError:
        return None
    ident = hashlib.sha1(f"{real}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[:12]
    return libs_dir() / f"kafka-classes-{ident}.jsa"


def cds_options(java: str) -> list[str]:
    if os.environ.get("KFAILD_LAB_CDS") == "0":
        return []
    archive = cds_archive(java)
    return [f"-XX:SharedArchiveFile={archive}"] if archive and archive.exists() else []


def make_cds_archive(java: str, quiet: bool = False) -> None:
    """Writes the archive (once): starts a one-node cluster on two free ports with
    -XX:ArchiveClassesAtExit, waits until it has started, stops it; the JVM writes the classes it
    loaded as it exits. A failure is reported and leaves the lab without an archive."""
    archive = cds_archive(java)
    if archive is None or archive.exists() or os.environ.get("KFAILD_LAB_CDS") == "0":
        return
    with open(kafka_home() / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not archive.exists():
            write_cds_archive(java, archive, quiet)


def write_cds_archive(java: str, archive: Path, quiet: bool) -> None:
    tmp = kafka_home() / f"cds.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "logs").mkdir(parents=True)
    ports = []
    for _ in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        ports.append(s.getsockname()[1])
        s.close()
    client, controller = ports
    props = tmp / "server.properties"
    props.write_text(
        "\n".join(
            [
                "node.id=1",
                "process.roles=broker,controller",
                f"controller.quorum.voters=1@127.0.0.1:{controller}",
                f"listeners=PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{client}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                f"log.dirs={tmp / 'data'}",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
            ]
        )
        + "\n"
    )
    t0 = time.monotonic()
    proc = None
    try:
        fmt = subprocess.run(
            [
                java,
                f"-Dlog4j2.configurationFile={TOOLS_LOG4J_CONFIG}",
                "-Xmx256m",
                "-cp",
                f"{libs_dir()}/*",
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                new_cluster_id(),
                "--config",
                str(props),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if fmt.returncode != 0:
            output = (fmt.stdout + fmt.stderr).strip()[-400:]
            raise LabError("kafka-storage format failed: " + output)
        written = tmp / "classes.jsa"
        with open(tmp / "logs" / "kafka.out", "wb") as out:
            proc = subprocess.Popen(
                [
                    java,
                    *BROKER_HEAP,
                    *JVM_PERFORMANCE_OPTS,
                    f"-XX:ArchiveClassesAtExit={written}",
                    f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                    f"-Dkafka.logs.dir={tmp / 'logs'}",
                    "-cp",
                    f"{libs_dir()}/*",
                    "kafka.Kafka",
                    str(props),
                ],
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        started = tmp / "logs" / "server.log"
        while time.monotonic() < deadline and proc.poll() is None:
            if started.exists() and "Kafka Server started" in started.read_text(errors="replace"):
                break
            time.sleep(0.5)
        if proc.poll() is not None:
            raise LabError(f"the node exited with {proc.returncode} while starting")
        if time.monotonic() >= deadline:
            raise LabError("the node did not start within 120 s")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        if not written.exists():
            raise LabError(f"the node exited with {proc.returncode} and wrote no archive")
        os.replace(written, archive)
        if not quiet:
            say(f"class data sharing archive written in {time.monotonic() - t0:.1f} s: {archive}")
    except (LabError, OSError, subprocess.SubprocessError) as e:
        warn(f"no class data sharing archive (nodes start as without one): {e}")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
