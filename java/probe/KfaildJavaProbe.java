package kfaild.probe;

// probe.client `java`: the probe's sends and reads through the Java client (kafka-clients), in
// a child process kfaild supervises (server/probe/java_probe_client.h starts, restarts and reads
// it). One KafkaProducer (acks=all, idempotent) and one KafkaConsumer (assign(), no group).
//
// The line protocol, one command or report per line, words separated by one space (the same
// text is the header of server/probe/java_protocol.h):
//   kfaild -> child, before anything else:
//     config <key> <value>     a client setting; the value is the rest of the line, with "\\"
//                              for a backslash and "\n" for a newline
//     go                       start the clients (or, with --check, check the settings and exit)
//   kfaild -> child, then:
//     assign <slot> <topic> <partition> <offset>   read the partition from the offset, and send
//                                                  slot <slot>'s messages to it
//     send <slot> <seq> <body>                     send one message (body: no spaces)
//     quit                                         close the clients and exit; so does EOF
//   child -> kfaild:
//     hello <version> <nanoTime>                  the clients are made
//     ack <slot> <seq> <t_ns> <offset>            acks=all satisfied
//     error <slot> <seq> <t_ns> <code> <name>     the send failed (a Kafka error code)
//     recv <slot> <t_ns> <offset> <head>          a record read; head: the value up to its 4th
//                                                 ':' when it starts "kfp1:", else "-"
//     leader <slot> <broker|-1> <epoch|-1> <t_ns> the producer's view of the leader changed
//     refused <key> <reason>                      a setting kafka-clients refuses (then exit 2)
//     ok                                          --check: every setting accepted (exit 0)
// Times are System.nanoTime(): CLOCK_MONOTONIC on Linux, as kfaild's monotonic clock.
// The child exits on stdin's EOF, so it never outlives kfaild's end of the pipe.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KfaildJavaProbe {
  static final int PROTOCOL_VERSION = 1;
  // How often the producer's view of each probed partition's leader is compared with the last.
  static final long LEADER_WATCH_MS = 20;

  record Target(String topic, int partition) {}

  private final LinkedBlockingQueue<String> out = new LinkedBlockingQueue<>();
  private final Map<Integer, Target> slots = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<long[]> seeks = new ConcurrentLinkedQueue<>();
  private volatile boolean stopping = false;
  private KafkaProducer<byte[], byte[]> producer;
  private KafkaConsumer<byte[], byte[]> consumer;

  public static void main(String[] args) throws Exception {
    boolean check = args.length > 0 && args[0].equals("--check");
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
    Map<String, String> settings = new HashMap<>();
    for (String line; (line = in.readLine()) != null; ) {
      if (line.equals("go")) break;
      if (!line.startsWith("config ")) continue;
      int space = line.indexOf(' ', 7);
      if (space < 0) continue;
      settings.put(line.substring(7, space), unescape(line.substring(space + 1)));
    }
    Writer stdout = new OutputStreamWriter(System.out, StandardCharsets.UTF_8);
    List<String> refusals = refusals(settings);
    if (check || !refusals.isEmpty()) {
      for (String r : refusals) stdout.write(r + "\n");
      if (refusals.isEmpty()) stdout.write("ok\n");
      stdout.flush();
      System.exit(refusals.isEmpty() ? 0 : 2);
    }
    new KfaildJavaProbe().run(settings, in, stdout);
  }

  static String unescape(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c == '\\' && i + 1 < s.length()) {
        char n = s.charAt(++i);
        b.append(n == 'n' ? '\n' : n);
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  // The settings each client knows, the producer's and the consumer's own on top of kfaild's.
  static Properties producerProps(Map<String, String> settings) {
    Properties p = new Properties();
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    for (var e : settings.entrySet()) {
      if (ProducerConfig.configNames().contains(e.getKey())) p.put(e.getKey(), e.getValue());
    }
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return p;
  }

  static Properties consumerProps(Map<String, String> settings) {
    Properties p = new Properties();
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
    for (var e : settings.entrySet()) {
      if (ConsumerConfig.configNames().contains(e.getKey())) p.put(e.getKey(), e.getValue());
    }
    // The probe reads by assign(): no group, so nothing to commit to.
    p.remove(ConsumerConfig.GROUP_ID_CONFIG);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return p;
  }

  // A key neither client knows, or a value kafka-clients refuses: "refused <key> <reason>".
  static List<String> refusals(Map<String, String> settings) {
    List<String> out = new ArrayList<>();
    for (String key : settings.keySet()) {
      if (!ProducerConfig.configNames().contains(key)
          && !ConsumerConfig.configNames().contains(key)) {
        out.add("refused " + key + " kafka-clients knows no such producer or consumer setting");
      }
    }
    if (!out.isEmpty()) return out;
    try {
      new ProducerConfig(producerProps(settings));
      new ConsumerConfig(consumerProps(settings));
    } catch (ConfigException e) {
      String key = e.getMessage() == null ? "?" : guessKey(e.getMessage(), settings);
      out.add("refused " + key + " " + oneLine(e.getMessage()));
    } catch (RuntimeException e) {
      out.add("refused ? " + oneLine(String.valueOf(e.getMessage())));
    }
    return out;
  }

  // A ConfigException names its key in its message ("Invalid value x for configuration k: ...").
  static String guessKey(String message, Map<String, String> settings) {
    String best = null;
    for (String key : settings.keySet()) {
      if (message.contains(key) && (best == null || key.length() > best.length())) best = key;
    }
    return best == null ? "?" : best;
  }

  static String oneLine(String s) {
    return s == null ? "" : s.replace('\n', ' ').replace('\r', ' ');
  }

  void emit(String line) {
    out.add(line);
  }

  void run(Map<String, String> settings, BufferedReader in, Writer stdout) throws Exception {
    Thread writer = new Thread(() -> writeLoop(stdout), "kfaild-out");
    writer.setDaemon(true);
    writer.start();
    producer = new KafkaProducer<>(producerProps(settings));
    consumer = new KafkaConsumer<>(consumerProps(settings));
    emit("hello " + PROTOCOL_VERSION + " " + System.nanoTime());
    Thread reader = new Thread(this::consumeLoop, "kfaild-consume");
    reader.setDaemon(true);
    reader.start();
    Thread watcher = new Thread(this::watchLeaders, "kfaild-leaders");
    watcher.setDaemon(true);
    watcher.start();
    try {
      for (String line; (line = in.readLine()) != null; ) {
        if (line.startsWith("send ")) {
          send(line);
        } else if (line.startsWith("assign ")) {
          assign(line);
        } else if (line.equals("quit")) {
          break;
        }
      }
    } finally {
      stopping = true;
      // What is outstanding had its chance while kfaild waited; kfaild is gone or going.
      producer.close(Duration.ZERO);
      Runtime.getRuntime().halt(0);
    }
  }

  private void assign(String line) {
    String[] w = line.split(" ");
    if (w.length != 5) return;
    int slot = Integer.parseInt(w[1]);
    int partition = Integer.parseInt(w[3]);
    slots.put(slot, new Target(w[2], partition));
    seeks.add(new long[] {slot, Long.parseLong(w[4])});
  }

  private void send(String line) {
    int a = line.indexOf(' ', 5);
    int b = a < 0 ? -1 : line.indexOf(' ', a + 1);
    if (b < 0) return;
    int slot = Integer.parseInt(line.substring(5, a));
    long seq = Long.parseLong(line.substring(a + 1, b));
    Target t = slots.get(slot);
    if (t == null) {
      emit("error " + slot + " " + seq + " " + System.nanoTime() + " 3 UNKNOWN_TOPIC_OR_PARTITION");
      return;
    }
    byte[] body = line.substring(b + 1).getBytes(StandardCharsets.UTF_8);
    try {
      producer.send(
          new ProducerRecord<>(t.topic(), t.partition(), null, body),
          (md, e) -> {
            long at = System.nanoTime();
            if (e == null) {
              emit("ack " + slot + " " + seq + " " + at + " " + md.offset());
            } else {
              Errors err = Errors.forException(e);
              emit("error " + slot + " " + seq + " " + at + " " + err.code() + " " + err.name());
            }
          });
    } catch (RuntimeException e) {
      Errors err = Errors.forException(e);
      emit("error " + slot + " " + seq + " " + System.nanoTime() + " " + err.code() + " "
          + err.name());
    }
  }

  private void consumeLoop() {
    List<TopicPartition> assigned = new ArrayList<>();
    Map<TopicPartition, Integer> slotOf = new HashMap<>();
    try {
      while (!stopping) {
        boolean changed = false;
        List<long[]> pending = new ArrayList<>();
        for (long[] s; (s = seeks.poll()) != null; ) pending.add(s);
        for (long[] s : pending) {
          Target t = slots.get((int) s[0]);
          TopicPartition tp = new TopicPartition(t.topic(), t.partition());
          if (!slotOf.containsKey(tp)) {
            assigned.add(tp);
            changed = true;
          }
          slotOf.put(tp, (int) s[0]);
        }
        if (changed) consumer.assign(assigned);
        for (long[] s : pending) {
          Target t = slots.get((int) s[0]);
          consumer.seek(new TopicPartition(t.topic(), t.partition()), s[1]);
        }
        if (assigned.isEmpty()) {
          Thread.sleep(10);
          continue;
        }
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
        if (records.isEmpty()) continue;
        long at = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : records) {
          Integer slot = slotOf.get(new TopicPartition(r.topic(), r.partition()));
          if (slot == null) continue;
          emit("recv " + slot + " " + at + " " + r.offset() + " " + head(r.value()));
        }
      }
    } catch (Exception e) {
      System.err.println("kfaild java probe: consumer failed: " + e);
      Runtime.getRuntime().halt(3);
    }
  }

  // The probe payload's header ("kfp1:<run id>:<seq>:<send µs>:"), or "-" for another value.
  static String head(byte[] value) {
    if (value == null || value.length < 5) return "-";
    if (value[0] != 'k' || value[1] != 'f' || value[2] != 'p' || value[3] != '1' || value[4] != ':')
      return "-";
    int colons = 0;
    for (int i = 0; i < value.length && i < 96; ++i) {
      byte c = value[i];
      if (c <= ' ' || c > '~') return "-";
      if (c == ':' && ++colons == 4) return new String(value, 0, i + 1, StandardCharsets.US_ASCII);
    }
    return "-";
  }

  // The producer's own metadata, as it sends by it: a change of a partition's leader there is
  // the Java client's discovery of the new leader. The public API gives no leader epoch (-1).
  private void watchLeaders() {
    Map<Integer, Integer> last = new HashMap<>();
    try {
      while (!stopping) {
        Map<String, List<PartitionInfo>> byTopic = new HashMap<>();
        for (var e : slots.entrySet()) {
          Target t = e.getValue();
          List<PartitionInfo> infos = byTopic.computeIfAbsent(t.topic(), this::partitionsFor);
          long at = System.nanoTime();
          int leader = -1;
          for (PartitionInfo info : infos) {
            if (info.partition() == t.partition() && info.leader() != null) {
              leader = info.leader().id();
            }
          }
          if (infos.isEmpty()) continue;
          Integer before = last.put(e.getKey(), leader);
          if (before == null || before != leader) {
            emit("leader " + e.getKey() + " " + leader + " -1 " + at);
          }
        }
        Thread.sleep(LEADER_WATCH_MS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      System.err.println("kfaild java probe: leader watch failed: " + e);
      Runtime.getRuntime().halt(3);
    }
  }

  private List<PartitionInfo> partitionsFor(String topic) {
    try {
      return producer.partitionsFor(topic);
    } catch (RuntimeException e) {
      // Not known yet (or the cluster away at start): no view to compare.
      return List.of();
    }
  }

  // One flush for every line that is ready: at 1,000 partitions a write per line would be
  // thousands of system calls a second.
  private void writeLoop(Writer stdout) {
    List<String> batch = new ArrayList<>();
    try {
      while (true) {
        batch.add(out.take());
        out.drainTo(batch);
        for (String line : batch) {
          stdout.write(line);
          stdout.write('\n');
        }
        stdout.flush();
        batch.clear();
      }
    } catch (Exception e) {
      // kfaild closed its end: nobody to report to.
      Runtime.getRuntime().halt(0);
    }
  }
}
