#include "server/probe/java_probe_client.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/kafka/errc.h"
#include "server/probe/payload.h"

namespace kfaild::probe {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJarName = "kfaild-java-probe.jar";
// The JVM's own cost kept small: one GC thread, a small heap (the probe holds a few thousand
// messages at most), C1 only (the probe's code is small; C2 would compile for minutes of CPU).
constexpr const char* kJvmOptions[] = {"-XX:+UseSerialGC", "-Xms16m", "-Xmx256m",
                                       "-XX:TieredStopAtLevel=1", "-Xss512k"};

Error javaError(const std::string& what) {
  return kafka::kafkaError(kafka::errc::client_create_failed, what);
}

bool executable(const fs::path& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p);
}

fs::path selfDir() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path();
}

// Writes all of `bytes` to a pipe whose reader may be gone: EPIPE, never SIGPIPE (kfaild does
// not ignore it: the signal is blocked in this thread for the write and a pending one taken
// back). Returns the bytes written (fewer when the pipe is full: it is non-blocking), -1 on error.
ssize_t writeSome(int fd, const std::string& bytes) {
  sigset_t pipe_signal, old;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  ssize_t total = 0;
  while (static_cast<std::size_t>(total) < bytes.size()) {
    const auto n =
        ::write(fd, bytes.data() + total, bytes.size() - static_cast<std::size_t>(total));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == EAGAIN) break;
      if (errno == EPIPE) {
        const timespec zero{};
        ::sigtimedwait(&pipe_signal, nullptr, &zero);
      }
      total = -1;
      break;
    }
    total += n;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return total;
}

struct Spawned {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts `argv` with pipes for its stdin, stdout and stderr (the parent's ends close-on-exec,
// stdout and stderr non-blocking). The child gets SIGKILL when the calling thread exits
// (PR_SET_DEATHSIG), so the caller must be a thread that lives as long as the child should.
Result<Spawned> spawn(const std::vector<std::string>& argv) {
  int in[2], out[2], err[2], exec_status[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(exec_status, O_CLOEXEC) != 0) {
    return javaError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return javaError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // kfaild died between the fork and the prctl: nobody to kill this child later.
    if (::getppid() != parent) ::_exit(1);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execvp(args[0], args.data());
    const int e = errno;
    [[maybe_unused]] const auto n = ::write(exec_status[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(exec_status[1]);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(exec_status[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(exec_status[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    ::waitpid(pid, nullptr, 0);
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    return javaError("cannot run " + argv[0] + ": " + std::strerror(exec_errno));
  }
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  return Spawned{pid, in[1], out[0], err[0]};
}

std::vector<std::string> childArgv(const JavaRuntime& runtime, bool check) {
  std::vector<std::string> argv = {runtime.java};
  for (const char* option : kJvmOptions) argv.emplace_back(option);
  argv.insert(argv.end(), {"-jar", runtime.jar});
  if (check) argv.emplace_back("--check");
  return argv;
}

std::string configText(const java::JavaSettings& settings) {
  std::string text;
  for (const auto& [key, value] : settings.settings) text += java::configLine(key, value);
  return text + "go\n";
}

std::string describeExit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

// Reads what is there on a non-blocking fd into `lines`; false at EOF or error.
bool readLines(int fd, java::LineSplitter& splitter, std::vector<std::string>& lines) {
  char buffer[65536];
  while (true) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      splitter.append(std::string_view(buffer, static_cast<std::size_t>(n)), lines);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// Settings whose values are secrets: never in the drill's reported settings.
bool secretSetting(const std::string& key) {
  return key.find("password") != std::string::npos || key.find("jaas") != std::string::npos ||
         key == "ssl.keystore.key" || key == "ssl.keystore.certificate.chain";
}

}  // namespace

Result<JavaRuntime> findJavaRuntime(const config::JavaProbeConfig& java) {
  JavaRuntime runtime;
  if (!java.runtime.empty()) {
    if (!executable(java.runtime)) {
      return javaError("probe.java.runtime: " + java.runtime + " is not an executable file");
    }
    runtime.java = java.runtime;
  } else if (const char* home = std::getenv("JAVA_HOME");
             home && executable(fs::path(home) / "bin" / "java")) {
    runtime.java = (fs::path(home) / "bin" / "java").string();
  } else if (const char* path = std::getenv("PATH")) {
    std::string_view dirs = path;
    while (runtime.java.empty() && !dirs.empty()) {
      const auto colon = dirs.find(':');
      const auto dir = fs::path(std::string(dirs.substr(0, colon))) / "java";
      if (executable(dir)) runtime.java = dir.string();
      dirs.remove_prefix(colon == std::string_view::npos ? dirs.size() : colon + 1);
    }
  }
  if (runtime.java.empty()) {
    return javaError(
        "probe.java.runtime: no Java runtime for probe.client java (no java on PATH, no "
        "JAVA_HOME, probe.java.runtime unset)");
  }
  if (!java.jar.empty()) {
    if (!fs::is_regular_file(java.jar)) return javaError("probe.java.jar: no file " + java.jar);
    runtime.jar = java.jar;
    return runtime;
  }
  const auto self = selfDir();
  for (const auto& candidate :
       {self / ".." / "share" / "kfaild" / "java" / kJarName, self / ".." / "java" / kJarName}) {
    if (fs::is_regular_file(candidate)) {
      runtime.jar = fs::weakly_canonical(candidate).string();
      return runtime;
    }
  }
  return javaError(std::string("probe.java.jar: ") + kJarName + " is neither in " +
                   (self / ".." / "share" / "kfaild" / "java").string() + " nor in " +
                   (self / ".." / "java").string() + ": set probe.java.jar");
}

Result<java::JavaSettings> checkJavaSettings(const config::ClusterConfig& cluster,
                                             const std::map<std::string, std::string>& settings,
                                             const JavaRuntime& runtime) {
  std::string error;
  auto mapped = java::javaSettings(cluster.client, settings, error);
  if (!mapped) return javaError("client." + error);
  mapped->settings["bootstrap.servers"] = cluster.bootstrap;
  if (!mapped->settings.contains("client.id"))
    mapped->settings["client.id"] = "kfaild-" + cluster.name;
  auto child = spawn(childArgv(runtime, true));
  if (!child) return child.error();
  const auto text = configText(*mapped);
  const bool wrote = writeSome(child->in, text) == static_cast<ssize_t>(text.size());
  closeFd(child->in);
  java::LineSplitter splitter, err_splitter;
  std::vector<std::string> lines, err_lines;
  pollfd fds[2] = {{child->out, POLLIN, 0}, {child->err, POLLIN, 0}};
  for (int open = 2, waited_ms = 0; open > 0 && waited_ms < 60'000; waited_ms += 100) {
    if (::poll(fds, 2, 100) <= 0) continue;
    for (auto& fd : fds) {
      if (fd.fd < 0 || fd.revents == 0) continue;
      if (!readLines(fd.fd, fd.fd == child->out ? splitter : err_splitter,
                     fd.fd == child->out ? lines : err_lines)) {
        fd.fd = -1;
        --open;
      }
    }
  }
  ::kill(child->pid, SIGKILL);
  int status = 0;
  ::waitpid(child->pid, &status, 0);
  closeFd(child->out);
  closeFd(child->err);
  for (const auto& line : lines) {
    const auto report = java::parseReport(line);
    if (!report || report->kind != java::ReportKind::kRefused) continue;
    const auto origin = settings.contains(report->key) ? "probe.java.settings." : "client.";
    return javaError(origin + report->key + ": kafka-clients refuses it: " + report->text);
  }
  if (!wrote || std::find(lines.begin(), lines.end(), "ok") == lines.end()) {
    std::string why = err_lines.empty() ? describeExit(status) : err_lines.front();
    return javaError("probe.java.runtime: " + runtime.java + " -jar " + runtime.jar +
                     " --check did not answer: " + why);
  }
  return std::move(*mapped);
}

ProbeRunner::JavaProbeClient::~JavaProbeClient() {
  std::lock_guard lock(child_mutex_);
  if (child_.pid > 0) {
    ::kill(child_.pid, SIGKILL);
    ::waitpid(child_.pid, nullptr, 0);
  }
  closeFd(child_.in);
  closeFd(child_.out);
  closeFd(child_.err);
}

Status ProbeRunner::JavaProbeClient::prepare() {
  auto runtime = findJavaRuntime(runner_.cluster_.probe.java);
  if (!runtime) return runtime.error();
  runtime_ = std::move(*runtime);
  // probe.java.settings, then the profile's own (probe.profiles[j].settings) over them.
  auto settings = runner_.cluster_.probe.java.settings;
  for (const auto& [key, value] : runner_.profile_.settings) settings[key] = value;
  // As the librdkafka probe's message.timeout.ms: every message has its fate within it.
  if (!settings.contains("delivery.timeout.ms")) {
    settings["delivery.timeout.ms"] =
        std::to_string(runner_.cluster_.probe.message_timeout_us / 1000);
  }
  auto checked = checkJavaSettings(runner_.cluster_, settings, runtime_);
  if (!checked) return checked.error();
  settings_ = std::move(*checked);
  if (!settings_.ignored.empty()) {
    std::string ignored;
    for (const auto& key : settings_.ignored) ignored += (ignored.empty() ? "" : ", ") + key;
    spdlog::info("probe {}: java client: librdkafka-only client settings not passed on: {}",
                 runner_.cluster_.name, ignored);
  }
  return okStatus();
}

void ProbeRunner::JavaProbeClient::describe(std::map<std::string, std::string>& settings,
                                            std::int64_t& message_timeout_us) {
  // The librdkafka settings then only apply to set-up: the Java client's are what it measures.
  settings["probe.client"] = "java";
  for (const auto& [key, value] : settings_.settings) {
    if (!secretSetting(key) && key != "bootstrap.servers") settings["java." + key] = value;
  }
  settings["java.acks"] = "all";
  if (!settings_.settings.contains("enable.idempotence"))
    settings["java.enable.idempotence"] = "true";
  const auto timeout = settings_.settings.find("delivery.timeout.ms");
  if (timeout != settings_.settings.end()) {
    message_timeout_us = std::stoll(timeout->second) * 1000;
  }
}

Status ProbeRunner::JavaProbeClient::beginReading(
    const rd_kafka_topic_partition_list_t& assignment) {
  {
    std::lock_guard lock(child_mutex_);
    targets_.clear();
    for (int i = 0; i < assignment.cnt; ++i) {
      const auto& e = assignment.elems[i];
      targets_.push_back({e.topic, e.partition, e.offset, -1});
    }
  }
  // Every child is the reporter's (PR_SET_DEATHSIG: its thread lives as long as this client, the
  // sender's ends first): wait for its first attempt, so that a child that starts is probing
  // from the first tick. One that does not is supervised like one that died.
  begun_ = true;
  while (attempts_ == 0 && runner_.sender_.sleepFor(std::chrono::milliseconds(10))) {
  }
  return okStatus();
}

Status ProbeRunner::JavaProbeClient::startChild() {
  const auto before = runner_.clock_.monoNow();
  auto spawned = spawn(childArgv(runtime_, false));
  if (!spawned) return spawned.error();
  Child child{spawned->pid, spawned->in, spawned->out, spawned->err, before};
  const auto config = configText(settings_);
  std::string failure;
  if (writeSome(child.in, config) != static_cast<ssize_t>(config.size())) {
    failure = "it did not take its settings";
  }
  // Its hello: the clients made, and the clock it reports on.
  stdout_lines_.reset();
  stderr_lines_.reset();
  std::vector<std::string> lines, err_lines;
  std::optional<java::Report> hello;
  const auto deadline = before + kHelloTimeoutUs;
  int err_fd = child.err;
  while (failure.empty() && !hello && runner_.clock_.monoNow() < deadline &&
         !runner_.reporter_.stopRequested() && !runner_.stopping_) {
    pollfd fds[2] = {{child.out, POLLIN, 0}, {err_fd, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[1].revents != 0 && !readLines(err_fd, stderr_lines_, err_lines)) err_fd = -1;
    for (const auto& line : err_lines) forwardStderr(line);
    err_lines.clear();
    if (!readLines(child.out, stdout_lines_, lines) && lines.empty()) {
      failure = "it exited before its hello";
      break;
    }
    if (lines.empty()) continue;
    hello = java::parseReport(lines.front());
    if (!hello || hello->kind != java::ReportKind::kHello) {
      failure = "its first line was not a hello: " + lines.front().substr(0, 200);
    } else if (hello->code != java::kProtocolVersion) {
      failure = "it speaks protocol " + std::to_string(hello->code);
    } else if (!java::sameClock(hello->t_ns, before, runner_.clock_.monoNow())) {
      failure = "its System.nanoTime is not kfaild's monotonic clock";
    }
  }
  if (failure.empty() && !hello) failure = "no hello within 30 s";
  if (!failure.empty()) {
    ::kill(child.pid, SIGKILL);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    closeFd(child.in);
    closeFd(child.out);
    closeFd(child.err);
    return javaError("java probe child: " + failure);
  }
  std::lock_guard lock(child_mutex_);
  child_ = child;
  pending_.clear();
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    pending_ +=
        java::assignLine(i, targets_[i].topic, targets_[i].partition, targets_[i].read_from);
  }
  flushLocked();
  up_ = true;
  // Lines after the hello in the same read.
  const auto now = runner_.clock_.now();
  for (std::size_t i = 1; i < lines.size(); ++i) {
    (void)handleLine(lines[i], now);
  }
  return okStatus();
}

void ProbeRunner::JavaProbeClient::flushLocked() {
  if (pending_.empty() || child_.in < 0) return;
  const auto wrote = writeSome(child_.in, pending_);
  if (wrote > 0) pending_.erase(0, static_cast<std::size_t>(wrote));
}

void ProbeRunner::JavaProbeClient::runSender() {
  {
    // The Java client holds its own connections: the librdkafka clients of set-up go.
    std::unique_lock producer_lock(runner_.producer_mutex_);
    for (auto* t : runner_.topic_handles_) rd_kafka_topic_destroy(t);
    runner_.topic_handles_.clear();
    {
      std::unique_lock slots_lock(runner_.slots_mutex_);
      for (auto& slot : runner_.slots_) slot->topic = nullptr;
    }
    std::unique_lock consumer_lock(runner_.consumer_mutex_);
    runner_.consumer_.reset();
    runner_.producer_.reset();
  }
  runner_.takeSenderScheduling();
  runner_.pacer_ =
      std::make_unique<Pacer>(runner_.cluster_.probe.interval_us, runner_.clock_.monoNow());
  while (!runner_.sender_.stopRequested()) {
    const auto wait = runner_.pacer_->deadline() - runner_.clock_.monoNow();
    if (wait > 0 && !runner_.sender_.sleepFor(std::chrono::microseconds(wait))) break;
    runner_.tick();
    std::lock_guard lock(child_mutex_);
    flushLocked();
  }
}

rd_kafka_resp_err_t ProbeRunner::JavaProbeClient::send(std::size_t index, Slot&, std::int64_t seq,
                                                       const std::string& body, common::Instant) {
  if (!up_) return static_cast<rd_kafka_resp_err_t>(kClientDown);
  std::lock_guard lock(child_mutex_);
  if (pending_.size() > kMaxPendingBytes) return RD_KAFKA_RESP_ERR__QUEUE_FULL;
  pending_ += java::sendLine(index, seq, body);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

bool ProbeRunner::JavaProbeClient::addPartitions(std::vector<AddedPartition>& added,
                                                 const std::vector<std::string>&) {
  // Read from the beginning: a partition just added holds nothing the probe sent before.
  const auto first = runner_.appendSlots(added);
  std::lock_guard lock(child_mutex_);
  for (std::size_t k = 0; k < added.size(); ++k) {
    targets_.push_back({added[k].topic, added[k].partition, 0, -1});
    pending_ += java::assignLine(first + k, added[k].topic, added[k].partition, 0);
  }
  flushLocked();
  return true;
}

void ProbeRunner::JavaProbeClient::runReporter() {
  while (!runner_.reporter_.stopRequested() && !begun_) {
    if (!runner_.reporter_.sleepFor(std::chrono::milliseconds(50))) return;
  }
  while (!runner_.reporter_.stopRequested()) {
    if (up_) {
      serveChild();
      continue;
    }
    const auto wait = next_start_ - runner_.clock_.monoNow();
    if (wait > 0) {
      runner_.reporter_.sleepFor(std::chrono::microseconds(std::min<std::int64_t>(wait, 100'000)));
      continue;
    }
    if (runner_.stopping_) return;
    auto started = startChild();
    ++attempts_;
    if (!started) {
      childGone("could not start: " + started.error().describe());
      continue;
    }
    if (exits_ == 0) continue;
    ++restarts_;
    ++runner_.client_restarts_;
    recordEvent(common::EventKind::kClientRestarted,
                "restart " + std::to_string(restarts_) + " after " +
                    std::to_string(backoff_us_ / 1000) + " ms backoff",
                runner_.clock_.now());
  }
}

void ProbeRunner::JavaProbeClient::serveChild() {
  int out_fd = -1, err_fd = -1;
  {
    std::lock_guard lock(child_mutex_);
    out_fd = child_.out;
    err_fd = child_.err;
  }
  std::vector<std::string> lines, err_lines;
  while (!runner_.reporter_.stopRequested()) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[1].revents != 0) {
      // A closed stderr would wake every poll: left out from there on.
      if (!readLines(err_fd, stderr_lines_, err_lines)) err_fd = -1;
      for (const auto& line : err_lines) forwardStderr(line);
      err_lines.clear();
    }
    if (fds[0].revents == 0) continue;
    const bool open = readLines(out_fd, stdout_lines_, lines);
    const auto now = runner_.clock_.now();
    for (const auto& line : lines) {
      if (!handleLine(line, now)) {
        childGone("wrote a line kfaild cannot parse: " + line.substr(0, 200));
        return;
      }
    }
    lines.clear();
    if (stdout_lines_.overflowed()) {
      childGone("wrote a line over 64 KiB");
      return;
    }
    if (!open) {
      childGone(stdout_lines_.partial().empty()
                    ? std::string()
                    : "died mid-line (\"" + stdout_lines_.partial().substr(0, 200) + "\")");
      return;
    }
  }
}

bool ProbeRunner::JavaProbeClient::handleLine(const std::string& line, common::Instant now) {
  const auto report = java::parseReport(line);
  if (!report) return false;
  LedgerOutput out;
  const auto at = java::instantOf(report->t_ns, now);
  switch (report->kind) {
    case java::ReportKind::kAck:
    case java::ReportKind::kError:
      applyAck(*report, at, out);
      break;
    case java::ReportKind::kRecv:
      applyRecv(*report, at, out);
      break;
    case java::ReportKind::kLeader:
      leaderSeen(*report, at);
      break;
    default:
      return false;
  }
  runner_.publish(out);
  return true;
}

void ProbeRunner::JavaProbeClient::applyAck(const java::Report& report, common::Instant at,
                                            LedgerOutput& out) {
  std::shared_lock slots_lock(runner_.slots_mutex_);
  const auto index = static_cast<std::size_t>(report.slot);
  if (index >= runner_.slots_.size()) return;
  auto& slot = *runner_.slots_[index];
  std::lock_guard lock(slot.mutex);
  if (report.kind == java::ReportKind::kAck) {
    slot.ledger.deliveryReport(report.seq, at, 0, report.offset, out);
  } else {
    // Kafka's error codes, which librdkafka's broker errors equal; a Java-side failure the
    // protocol has no code for (UNKNOWN_SERVER_ERROR, -1) stays -1, as librdkafka's.
    slot.ledger.deliveryReport(report.seq, at, report.code, std::nullopt, out);
  }
}

void ProbeRunner::JavaProbeClient::applyRecv(const java::Report& report, common::Instant at,
                                             LedgerOutput& out) {
  const auto index = static_cast<std::size_t>(report.slot);
  {
    std::lock_guard lock(child_mutex_);
    if (index < targets_.size()) {
      targets_[index].read_from = std::max(targets_[index].read_from, report.offset + 1);
    }
  }
  const auto payload = decodePayload(report.text);
  if (!payload || payload->run_id != runner_.run_id_ || !runner_.ready_) return;
  std::shared_lock slots_lock(runner_.slots_mutex_);
  if (index >= runner_.slots_.size()) return;
  auto& slot = *runner_.slots_[index];
  std::lock_guard lock(slot.mutex);
  slot.ledger.received(payload->seq, at, out);
}

void ProbeRunner::JavaProbeClient::leaderSeen(const java::Report& report, common::Instant at) {
  std::string topic;
  std::int32_t partition = 0, from = -1;
  {
    std::lock_guard lock(child_mutex_);
    const auto index = static_cast<std::size_t>(report.slot);
    if (index >= targets_.size()) return;
    auto& target = targets_[index];
    // Only a move to a broker: "no leader" in between is not a discovery, and a child's first
    // view (nothing before it) is where it started, not a change.
    if (report.broker < 0 || report.broker == target.leader) return;
    from = std::exchange(target.leader, report.broker);
    topic = target.topic;
    partition = target.partition;
  }
  if (from < 0) return;
  storage::Event e;
  e.cluster = runner_.cluster_id_;
  e.t_us = at.wall;
  e.source = common::toString(common::EventSource::kClient);
  e.kind = common::toString(common::EventKind::kClientLeaderUpdate);
  e.broker = report.broker;
  e.topic = topic;
  e.partition = partition;
  e.detail = common::jsonText(nlohmann::json{{"client", "producer"},
                                             {"via", "java"},
                                             {"from", from},
                                             {"to", report.broker},
                                             {"epoch", report.epoch}});
  runner_.store_.addEvent(std::move(e));
}

void ProbeRunner::JavaProbeClient::forwardStderr(const std::string& line) {
  const auto now = runner_.clock_.monoNow();
  if (now - stderr_window_ > 10'000'000) {
    if (stderr_dropped_ > 0) {
      spdlog::warn("probe {}: java client: {} more stderr lines not shown", runner_.cluster_.name,
                   stderr_dropped_);
    }
    stderr_window_ = now;
    stderr_in_window_ = 0;
    stderr_dropped_ = 0;
  }
  if (++stderr_in_window_ > kStderrLines) {
    ++stderr_dropped_;
    return;
  }
  spdlog::warn("probe {}: java client: {}", runner_.cluster_.name, line.substr(0, 1000));
}

void ProbeRunner::JavaProbeClient::childGone(const std::string& reason) {
  Child child;
  {
    std::lock_guard lock(child_mutex_);
    up_ = false;
    child = std::exchange(child_, Child{});
    pending_.clear();
  }
  if (quitting_) {
    // Told to quit by stop(): no death to report.
    if (child.pid > 0) ::waitpid(child.pid, nullptr, 0);
    closeFd(child.in);
    closeFd(child.out);
    closeFd(child.err);
    return;
  }
  const auto now = runner_.clock_.now();
  std::string why = reason;
  if (child.pid > 0) {
    int status = 0;
    // A child that is still there (a line it should not have written) is made to go.
    if (::waitpid(child.pid, &status, WNOHANG) == 0) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &status, 0);
      if (why.empty()) why = describeExit(status);
    } else {
      why = why.empty() ? describeExit(status) : why + ", " + describeExit(status);
    }
    closeFd(child.in);
    closeFd(child.out);
    closeFd(child.err);
  }
  // What it had outstanding will never be answered.
  LedgerOutput out;
  {
    std::shared_lock slots_lock(runner_.slots_mutex_);
    for (auto& slot : runner_.slots_) {
      std::lock_guard lock(slot->mutex);
      slot->ledger.failOutstanding(now, kClientDown, out);
    }
  }
  runner_.publish(out);
  const bool stable = child.pid > 0 && now.mono - child.started > kStableUs;
  backoff_us_ = stable || exits_ == 0 ? kBackoffFirstUs : std::min(2 * backoff_us_, kBackoffMaxUs);
  ++exits_;
  next_start_ = now.mono + backoff_us_;
  spdlog::warn("probe {}: java client {}: starting it again in {} ms", runner_.cluster_.name, why,
               backoff_us_ / 1000);
  recordEvent(common::EventKind::kClientExited, why, now);
}

void ProbeRunner::JavaProbeClient::recordEvent(common::EventKind kind, const std::string& reason,
                                               common::Instant at) {
  storage::Event e;
  e.cluster = runner_.cluster_id_;
  e.t_us = at.wall;
  e.source = common::toString(common::EventSource::kProbe);
  e.kind = common::toString(kind);
  e.detail = common::jsonText(
      nlohmann::json{{"client", "java"}, {"reason", reason}, {"backoff_ms", backoff_us_ / 1000}});
  runner_.store_.addEvent(std::move(e));
}

void ProbeRunner::JavaProbeClient::runReceiver() {
  // The child reads; this thread only gives up on lost messages.
  while (runner_.receiver_.sleepFor(std::chrono::microseconds(kExpireEveryUs))) {
    if (runner_.ready_) runner_.expireAll(runner_.clock_.now());
  }
}

bool ProbeRunner::JavaProbeClient::outstanding() const {
  std::shared_lock slots_lock(runner_.slots_mutex_);
  for (auto& slot : runner_.slots_) {
    std::lock_guard lock(slot->mutex);
    if (slot->ledger.status().outstanding > 0) return true;
  }
  return false;
}

void ProbeRunner::JavaProbeClient::finishOutstanding() {
  // The reporter still serves the child's acks for up to 2 s; then the child is told to quit.
  const auto until = runner_.clock_.monoNow() + 2'000'000;
  while (up_ && runner_.clock_.monoNow() < until && outstanding()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  quitting_ = true;
  std::lock_guard lock(child_mutex_);
  if (child_.in >= 0) {
    pending_ += "quit\n";
    flushLocked();
    closeFd(child_.in);
  }
}

}  // namespace kfaild::probe
