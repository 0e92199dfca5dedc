"""Secured mode (KFAILD_LAB_SECURITY=sasl_ssl or mtls): the brokers' client listener needs TLS
with a certificate of the lab's own CA, and SASL SCRAM (sasl_ssl) or a client certificate
(mtls)."""

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

from .errors import LabError
from .layout import lab_port, node_host, node_port, security_mode
from .settings import NODES
from .state import Lab, node_dir, state_dir

SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")

# admin: the brokers among themselves; kfaild: kfaild's clients; probe: a principal with only
# the ACLs docs/SECURITY.md lists for kfaild's probes (tests/e2e/secured_test.cc grants them).
LAB_USERS = ("admin", "kfaild", "probe")

# In sasl_ssl mode every node authorizes with KRaft's StandardAuthorizer and refuses what no ACL
# allows. Super users: the brokers (admin), kfaild (so that the secured tests need no ACLs) and
# ANONYMOUS, the principal of the PLAINTEXT listeners (the controllers' and `lab`'s own).
AUTHORIZER_PROPERTIES = (
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found=false",
    "super.users=User:admin;User:kfaild;User:ANONYMOUS",
)
CERT_DAYS = 3650


def tls_dir() -> Path:
    return state_dir() / "tls"


def secrets_dir() -> Path:
    return state_dir() / "secrets"


def password_file(user: str) -> Path:
    return secrets_dir() / f"{user}.password"


def node_tls_dir(node: int) -> Path:
    # Inside the node's dir, so that a container node (which mounts only its dir) finds it too.
    return node_dir(node) / "tls"


def openssl(*args: str) -> None:
    if not shutil.which("openssl"):
        raise LabError("secured mode needs the `openssl` command (Debian package openssl)")
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise LabError(f"`openssl {args[0]}` failed: {r.stderr.strip()}")


def private_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def issue(name: str, subject: str, san: str, out_dir: Path) -> tuple[Path, Path]:
    """A P-256 key (PKCS#8, unencrypted) and a certificate the lab's CA signs, with `san`."""
    key, csr, cert = out_dir / f"{name}.key", out_dir / f"{name}.csr", out_dir / f"{name}.pem"
    ext = out_dir / f"{name}.ext"
    ext.write_text(
        f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
    )
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key))
    os.chmod(key, 0o600)
    openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
    openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(tls_dir() / "ca.pem"),
        "-CAkey",
        str(tls_dir() / "ca.key"),
        "-CAcreateserial",
        "-days",
        str(CERT_DAYS),
        "-extfile",
        str(ext),
        "-out",
        str(cert),
    )
    csr.unlink()
    ext.unlink()
    return key, cert


def ensure_security(base: int) -> None:
    """Once per state dir: the CA, kfaild's client certificate, the users' passwords; per node
    (again when its address changed) its certificate, for the address it advertises."""
    ca_key, ca = tls_dir() / "ca.key", tls_dir() / "ca.pem"
    if not ca.exists():
        tls_dir().mkdir(parents=True, exist_ok=True)
        openssl(
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            str(ca_key),
        )
        os.chmod(ca_key, 0o600)
        openssl(
            "req",
            "-x509",
            "-new",
            "-key",
            str(ca_key),
            "-subj",
            "/CN=kfaild lab CA",
            "-days",
            str(CERT_DAYS),
            "-out",
            str(ca),
        )
    if not (tls_dir() / "client.pem").exists():
        issue("client", "/CN=kfaild", "DNS:kfaild", tls_dir())
    for user in LAB_USERS:
        if not password_file(user).exists():
            secrets_dir().mkdir(parents=True, exist_ok=True)
            os.chmod(secrets_dir(), 0o700)
            secret = base64.urlsafe_b64encode(os.urandom(18)).decode()
            private_write(password_file(user), secret + "\n")
    for n in NODES:
        d = node_tls_dir(n)
        # The address also as a DNS name: a client that matches the host it connects to as a
        # name (OpenSSL's SSL_set1_host, as librdkafka calls it) does so for an IP literal too.
        host = node_host(n, base)
        san = f"IP:{host},DNS:{host},DNS:localhost"
        stamp = d / "san"
        if stamp.exists() and stamp.read_text().strip() == san and (d / "node.pem").exists():
            continue
        d.mkdir(parents=True, exist_ok=True)
        key, cert = issue("cert", f"/CN=lab node {n}", san, d)
        # Kafka's PEM keystore: the private key, then the certificate chain, in one file.
        private_write(d / "node.pem", key.read_text() + cert.read_text())
        shutil.copyfile(ca, d / "ca.pem")
        stamp.write_text(san + "\n")


def password(user: str) -> str:
    return password_file(user).read_text().strip()


def scram_arguments() -> list[str]:
    """kafka-storage format's --add-scram for every user and SCRAM mechanism (KIP-900)."""
    out = []
    for user in LAB_USERS:
        for mechanism in SCRAM_MECHANISMS:
            out += ["--add-scram", f"{mechanism}=[name={user},password={password(user)}]"]
    return out


def client_properties(mode: str) -> dict[str, str]:
    """What a client of the lab's brokers in security `mode` needs (kfaild's `client:` keys; the
    password as kfaild's sasl.password_file, never the password itself)."""
    if mode == "plaintext":
        return {}
    props = {"ssl.ca.location": str(tls_dir() / "ca.pem")}
    if mode == "sasl_ssl":
        props.update(
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "kfaild",
                "sasl.password_file": str(password_file("kfaild")),
            }
        )
    else:
        props.update(
            {
                "security.protocol": "SSL",
                "ssl.certificate.location": str(tls_dir() / "client.pem"),
                "ssl.key.location": str(tls_dir() / "client.key"),
            }
        )
    return props


def write_client_file(lab: Lab | None = None) -> Path:
    """<state dir>/client.json: client_properties(), for scripts and tests."""
    path = state_dir() / "client.json"
    props = client_properties(security_mode(lab))
    path.write_text(json.dumps(props, indent=2, sort_keys=True) + "\n")
    return path


def security_properties(node: int, base: int) -> list[str]:
    """A broker's listeners in secured mode: CLIENT (SASL_SSL or SSL with client certificates,
    also the brokers' own inter-broker listener, as user admin or with their certificates) and
    LAB (PLAINTEXT, for `lab` itself); the controllers stay PLAINTEXT (KRaft keeps the SCRAM
    credentials in the metadata log, which a controller listener cannot wait for)."""
    host, port = node_host(node, base), node_port(node, base)
    mode = security_mode()
    protocol = "SASL_SSL" if mode == "sasl_ssl" else "SSL"
    tls = node_tls_dir(node)
    lines = [
        f"listeners=CLIENT://{host}:{port},LAB://{host}:{lab_port(node, base)}",
        f"advertised.listeners=CLIENT://{host}:{port},LAB://{host}:{lab_port(node, base)}",
        f"listener.security.protocol.map=CONTROLLER:PLAINTEXT,CLIENT:{protocol},LAB:PLAINTEXT",
        "inter.broker.listener.name=CLIENT",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={tls / 'node.pem'}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={tls / 'ca.pem'}",
        "ssl.endpoint.identification.algorithm=https",
    ]
    if mode == "sasl_ssl":
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required"
        admin = f'username="admin" password="{password("admin")}"'
        users = " ".join(f'user_{u}="{password(u)}"' for u in LAB_USERS)
        lines += [
            "listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
            f"listener.name.client.scram-sha-512.sasl.jaas.config={scram} {admin};",
            f"listener.name.client.scram-sha-256.sasl.jaas.config={scram} {admin};",
            "listener.name.client.plain.sasl.jaas.config="
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {admin} {users};",
        ]
    else:
        lines.append("listener.name.client.ssl.client.auth=required")
    return lines
