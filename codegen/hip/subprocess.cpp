// runProcess: posix_spawn with a socket for stdin (send(MSG_NOSIGNAL) cannot raise SIGPIPE), pipes
// for stdout/stderr, one poll loop feeding and draining all three (no deadlock on large outputs),
// and SIGKILL at the deadline.
#include "codegen/hip/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace smelt {

namespace {

/// Closes a file descriptor on scope exit unless released.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

std::vector<std::string> childEnvironment(const ProcessSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : spec.environment) replaced = replaced || key == k;
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [k, v] : spec.environment) env.push_back(k + "=" + v);
  return env;
}

/// Reads what is available from `fd` into `out`; false at end of file or on an error.
bool drain(int fd, std::string& out) {
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(buffer)) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
}

}  // namespace

Expected<ProcessResult> runProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Error("runProcess: empty argv");
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + spec.timeout;

  int sv[2], out_pipe[2], err_pipe[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return makeError("runProcess: socketpair: {}", strerror(errno));
  Fd in_parent(sv[0]), in_child(sv[1]);
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return makeError("runProcess: pipe: {}", strerror(errno));
  Fd out_read(out_pipe[0]), out_child(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return makeError("runProcess: pipe: {}", strerror(errno));
  Fd err_read(err_pipe[0]), err_child(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto 0/1/2 clears close-on-exec on the child's copies only.
  posix_spawn_file_actions_adddup2(&actions, in_child.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_child.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_child.fd, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // The child starts with default signal handling whatever the parent blocked or ignored.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGABRT);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = childEnvironment(spec);
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int spawn_rc = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawn_rc != 0) return makeError("cannot start {}: {}", spec.argv[0], strerror(spawn_rc));
  in_child.reset();
  out_child.reset();
  err_child.reset();
  fcntl(out_read.fd, F_SETFL, O_NONBLOCK);
  fcntl(err_read.fd, F_SETFL, O_NONBLOCK);

  ProcessResult result;
  size_t written = 0;
  if (spec.input.empty()) in_parent.reset();
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      result.timed_out = true;
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    int in_index = -1, out_index = -1, err_index = -1;
    if (in_parent.fd >= 0) fds[in_index = n++] = {in_parent.fd, POLLOUT, 0};
    if (out_open) fds[out_index = n++] = {out_read.fd, POLLIN, 0};
    if (err_open) fds[err_index = n++] = {err_read.fd, POLLIN, 0};
    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (poll(fds, n, static_cast<int>(wait_ms)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (in_index >= 0 && fds[in_index].revents) {
      ssize_t sent = send(in_parent.fd, spec.input.data() + written, spec.input.size() - written,
                          MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent > 0) written += static_cast<size_t>(sent);
      // All sent, or the child closed its stdin (EPIPE): close ours so it sees end of file.
      if (written == spec.input.size() || (sent < 0 && errno != EAGAIN && errno != EINTR))
        in_parent.reset();
    }
    if (out_index >= 0 && fds[out_index].revents) out_open = drain(out_read.fd, result.out);
    if (err_index >= 0 && fds[err_index].revents) err_open = drain(err_read.fd, result.err);
  }
  in_parent.reset();

  // The child closed its outputs (or time ran out): wait for it, until the deadline.
  int status = 0;
  pid_t waited = 0;
  while (!result.timed_out) {
    waited = waitpid(pid, &status, WNOHANG);
    if (waited != 0 && !(waited < 0 && errno == EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline)
      result.timed_out = true;
    else
      usleep(1000);
  }
  if (result.timed_out) {
    kill(pid, SIGKILL);
    while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
  }
  if (waited == pid) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  }
  result.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace smelt
