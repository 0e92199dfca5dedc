#include "server/fault/command.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "server/common/sensitive.h"
#include "server/common/utf8.h"
#include "server/fault/errc.h"

namespace kfaild::fault {
namespace {

constexpr std::size_t kMaxOutput = 4 * 1024 * 1024;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

bool makePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return true;
}

// Reads what is there without blocking; returns false at end of file or on error.
bool drain(int fd, std::string& into) {
  std::array<char, 16384> buf{};
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      // The cap cuts between characters (a read's own end may split one: the next read's
      // bytes complete it). A cut leaves the text within 3 bytes of the cap, and from there on
      // nothing is kept, so no later byte follows a cut.
      const auto room = into.size() + 3 < kMaxOutput ? kMaxOutput - into.size() : 0;
      into.append(
          common::utf8Prefix(std::string_view(buf.data(), static_cast<std::size_t>(n)), room));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string tailOf(const std::string& text, std::size_t max = 2000) {
  return common::utf8Tail(text, max);
}

}  // namespace

std::string shellQuote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string describeArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-./=:@,+%") == std::string::npos;
    out += plain ? a : shellQuote(a);
  }
  return common::sensitive(out);
}

namespace {

// A started program: its pid, the read ends of its stdout and stderr (non-blocking), and the
// write end of its stdin when it has one (else its stdin is /dev/null).
struct Child {
  pid_t pid = -1;
  Fd out, err, in;
};

Status spawn(const std::vector<std::string>& argv, bool with_stdin, Child& child) {
  if (argv.empty()) return faultError(errc::command_failed, "empty command");
  Fd out_w, err_w, in_r, exec_r, exec_w;
  if (!makePipe(child.out, out_w) || !makePipe(child.err, err_w) || !makePipe(exec_r, exec_w) ||
      (with_stdin && !makePipe(in_r, child.in))) {
    return faultError(errc::command_failed, std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0)
    return faultError(errc::command_failed, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setsid();
    // kfaild may ignore or block signals (SIGPIPE, the ones its shutdown waits on); the program
    // must start with the defaults, as it would from a shell.
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int input = with_stdin ? in_r.get() : ::open("/dev/null", O_RDONLY);
    if (input >= 0) ::dup2(input, STDIN_FILENO);
    ::dup2(out_w.get(), STDOUT_FILENO);
    ::dup2(err_w.get(), STDERR_FILENO);
    // Descriptors kfaild opened without O_CLOEXEC (sockets of other threads) must not leak
    // into a broker that this command may start and that outlives kfaild.
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    ::execvp(args[0], args.data());
    const int err = errno;
    [[maybe_unused]] const auto n = ::write(exec_w.get(), &err, sizeof err);
    ::_exit(127);
  }
  out_w.reset();
  err_w.reset();
  in_r.reset();
  exec_w.reset();

  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(exec_r.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return faultError(errc::command_failed, "cannot run " + common::sensitive(argv[0]) + ": " +
                                                std::strerror(exec_errno));
  }
  ::fcntl(child.out.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(child.err.get(), F_SETFL, O_NONBLOCK);
  child.pid = pid;
  return okStatus();
}

// One byte to a pipe whose reader may be gone: EPIPE, never a SIGPIPE (kfaild does not ignore
// it; the signal is blocked in this thread for the write and a pending one taken back).
bool writeNewline(int fd) {
  sigset_t pipe_signal, old;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  ssize_t wrote = 0;
  do {
    wrote = ::write(fd, "\n", 1);
  } while (wrote < 0 && errno == EINTR);
  if (wrote < 0 && errno == EPIPE) {
    const timespec zero{};
    ::sigtimedwait(&pipe_signal, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return wrote == 1;
}

void killGroup(pid_t pid) {
  int status = 0;
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
}

}  // namespace

Result<CommandOutput> runCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout) {
  const auto started = std::chrono::steady_clock::now();
  Child child;
  if (auto spawned = spawn(argv, false, child); !spawned) return spawned.error();
  const pid_t pid = child.pid;
  Fd& out_r = child.out;
  Fd& err_r = child.err;

  CommandOutput result;
  bool out_open = true, err_open = true;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      result.exit_code = exitCodeOf(status);
      if (out_open) drain(out_r.get(), result.out);
      if (err_open) drain(err_r.get(), result.err);
      return result;
    }
    const auto elapsed = std::chrono::steady_clock::now() - started;
    if (elapsed >= timeout) {
      killGroup(pid);
      if (err_open) drain(err_r.get(), result.err);
      return faultError(
          errc::timeout,
          describeArgv(argv) + " did not finish within " + std::to_string(timeout.count()) + " ms" +
              (result.err.empty() ? "" : "; stderr: " + common::sensitive(tailOf(result.err))));
    }
    std::array<pollfd, 2> fds{};
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_r.get(), POLLIN, 0};
    // Short slices: the exit is noticed by waitpid, not by the pipes closing.
    if (n == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (::poll(fds.data(), n, 20) > 0) {
      for (nfds_t i = 0; i < n; ++i) {
        if (fds[i].revents == 0) continue;
        if (fds[i].fd == out_r.get()) out_open = drain(out_r.get(), result.out);
        if (fds[i].fd == err_r.get()) err_open = drain(err_r.get(), result.err);
      }
    }
  }
}

Result<std::vector<LineExchange>> exchangeLines(const std::vector<std::string>& argv,
                                                std::chrono::milliseconds timeout, int rounds,
                                                const common::Clock& clock) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Child child;
  if (auto spawned = spawn(argv, true, child); !spawned) return spawned.error();
  std::string out, err;
  bool out_open = true, err_open = true;
  // The next line of stdout, waiting for it until the deadline; nullopt when the program's
  // stdout ended or the deadline passed.
  const auto nextLine = [&]() -> std::optional<std::string> {
    while (true) {
      if (const auto nl = out.find('\n'); nl != std::string::npos) {
        auto line = out.substr(0, nl);
        out.erase(0, nl + 1);
        return line;
      }
      if (!out_open) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      std::array<pollfd, 2> fds{};
      nfds_t n = 0;
      fds[n++] = {child.out.get(), POLLIN, 0};
      if (err_open) fds[n++] = {child.err.get(), POLLIN, 0};
      if (::poll(fds.data(), n, static_cast<int>(std::min<std::int64_t>(left.count(), 100))) > 0) {
        if (fds[0].revents != 0) out_open = drain(child.out.get(), out);
        if (n > 1 && fds[1].revents != 0) err_open = drain(child.err.get(), err);
      }
    }
  };
  const auto failed = [&](const std::string& what) {
    const bool late = std::chrono::steady_clock::now() >= deadline;
    killGroup(child.pid);
    if (err_open) drain(child.err.get(), err);
    return faultError(late ? errc::timeout : errc::command_failed,
                      describeArgv(argv) + " " + what +
                          (err.empty() ? "" : "; stderr: " + common::sensitive(tailOf(err))));
  };
  if (!nextLine()) return failed("printed no first line");
  std::vector<LineExchange> exchanges;
  for (int i = 0; i < rounds; ++i) {
    LineExchange x;
    x.sent = clock.wallNow();
    if (!writeNewline(child.in.get())) return failed("stopped reading its input");
    auto line = nextLine();
    x.received = clock.wallNow();
    if (!line)
      return failed("answered " + std::to_string(i) + " of " + std::to_string(rounds) + " rounds");
    x.line = std::move(*line);
    exchanges.push_back(std::move(x));
  }
  child.in.reset();
  while (true) {
    int status = 0;
    if (::waitpid(child.pid, &status, WNOHANG) == child.pid) return exchanges;
    if (std::chrono::steady_clock::now() >= deadline) {
      killGroup(child.pid);
      return exchanges;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace kfaild::fault
