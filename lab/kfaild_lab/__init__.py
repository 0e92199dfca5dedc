"""The lab cluster behind `lab/lab`: a real Apache Kafka cluster in KRaft mode, one JVM per node.

Modules, each depending only on those above it:
  errors, console  the two failures a verb can end with; output
  settings         what the environment fixes at start: node ids, paths, JVM options, --set keys
  state            the state dir: node dirs, pid files, lab.json, the lock
  layout           ports, addresses and modes (namespaced, secured) of a lab on a port base
  netns            namespaced mode: bridge, namespaces, veths, loop-mounted log filesystems
  secured          secured mode: CA, certificates, SCRAM users, listener properties
  processes        the nodes' JVMs: pids, liveness, java, ports in use
  protocol         DescribeCluster and DescribeQuorum spoken directly
  cluster          the cluster as the nodes see it: status, health, quorum
  config           server.properties and kafka-storage format
  jars             the Kafka jars (through pom.xml) and the class data sharing archive
  containers       container mode (Podman)
  nodes            starting and stopping nodes
  verbs            one function per `lab` verb
"""
