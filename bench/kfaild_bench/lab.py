"""The bench labs (lab/lab with the settings' environment), Kafka's own tools, and the venv with
confluent-kafka that the article-method peer runs in."""

import datetime
import json
import os
import re
import subprocess
import sys

from .common import say
from .settings import CONFLUENT_KAFKA


def lab(s, *args, check=True, capture=True, env=None):
    cmd = [str(s.lab), *args]
    p = subprocess.run(
        cmd, env={**os.environ, **(env or s.lab_env)}, capture_output=capture, text=True
    )
    if check and p.returncode != 0:
        raise RuntimeError(f"lab {' '.join(args)} failed: {p.stderr}")
    return p


def lab_up(s):
    say("lab up (", s.lab_env, ")")
    lab(s, "up", "--timeout", "180")


def lab1_up(s):
    """The one-broker lab. The three-broker lab is stopped first when this script may (it is
    ours: --lab-down): four idle JVMs would tax every probe-cost figure."""
    say("lab up (", s.lab1_env, ")")
    lab(s, "up", "--timeout", "240", env=s.lab1_env)


def lab_pids(s, env):
    """pid of every running node of a lab, for its CPU."""
    p = lab(s, "status", "--json", check=False, env=env)
    try:
        return [n["pid"] for n in json.loads(p.stdout or p.stderr)["nodes"] if n.get("pid")]
    except (ValueError, KeyError):
        return []


def kill_time_us(kill_output, fallback_us):
    """When the lab sent SIGKILL, as it prints it ("SIGKILL sent at
    2026-11-30T08:32:35.584+00:00"), in µs since the epoch; fallback_us when it printed none."""
    m = re.search(r"sent at (\S+)", kill_output)
    if not m:
        return fallback_us
    return int(datetime.datetime.fromisoformat(m.group(1)).timestamp() * 1e6)


def java_tool(s, cls, *args):
    return [
        "java",
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={s.tools_log4j}",
        "-cp",
        f"{s.jars}/*",
        cls,
        *[str(a) for a in args],
    ]


def create_topic(s, topic, assignment):
    subprocess.run(
        java_tool(
            s,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            s.bootstrap,
            "--create",
            "--if-not-exists",
            "--topic",
            topic,
            "--replica-assignment",
            assignment,
            "--config",
            "min.insync.replicas=2",
        ),
        check=True,
        capture_output=True,
    )


def preferred_election(s):
    subprocess.run(
        java_tool(
            s,
            "org.apache.kafka.tools.LeaderElectionCommand",
            "--bootstrap-server",
            s.bootstrap,
            "--election-type",
            "PREFERRED",
            "--all-topic-partitions",
        ),
        capture_output=True,
        text=True,
    )


def delete_topic(s, topic, bootstrap=None):
    """Big probe topics are deleted after their run: thousands of idle replicas keep the brokers'
    fetchers busy and would slow every later measurement on this small machine."""
    code = (
        "from confluent_kafka.admin import AdminClient; "
        "a = AdminClient({'bootstrap.servers': %r}); "
        "[f.result() for f in a.delete_topics([%r], operation_timeout=30).values()]"
        % (bootstrap or s.bootstrap, topic)
    )
    subprocess.run([str(s.py), "-c", code], capture_output=True)


def delete_topic_java(s, topic):
    subprocess.run(
        java_tool(
            s,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            s.bootstrap,
            "--delete",
            "--if-exists",
            "--topic",
            topic,
        ),
        capture_output=True,
    )


def ensure_venv(s):
    if not s.py.exists():
        say("creating", s.venv)
        subprocess.run([sys.executable, "-m", "venv", str(s.venv)], check=True)
        subprocess.run([str(s.py), "-m", "pip", "install", "-q", CONFLUENT_KAFKA], check=True)
