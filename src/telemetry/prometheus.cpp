// Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/) and a loopback HTTP server.
#include <chrono>
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <vector>
#include <cstring>
#include <map>
#include <thread>

#include "telemetry/source.h"
#include "trainscope/error.h"
#include "trainscope/telemetry_prometheus.h"

namespace trainscope {
namespace {

bool ends_with(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

std::string escape_label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string escape_help(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

struct Family {
  std::string help, type;
  std::vector<std::string> samples;
};

/// metric with unit suffix -> (base name with Prometheus unit, scale, type).
struct Mapped {
  std::string name;
  double scale = 1;
  std::string type = "gauge";
};

Mapped map_metric(std::string m) {
  struct Unit {
    const char* suffix;
    const char* prom;
    double scale;
    const char* type;
  };
  static const Unit kUnits[] = {{"_bytes_per_s", "_bytes_per_second", 1, "gauge"},
                                {"_pct", "_ratio", 0.01, "gauge"},
                                {"_w", "_watts", 1, "gauge"},
                                {"_j", "_joules_total", 1, "counter"},
                                {"_c", "_celsius", 1, "gauge"},
                                {"_bytes", "_bytes", 1, "gauge"},
                                {"_mhz", "_hertz", 1e6, "gauge"},
                                {"_count", "", 1, "gauge"},
                                {"_mask", "", 1, "gauge"}};
  Mapped out;
  std::string unit;
  for (const auto& u : kUnits)
    if (ends_with(m, u.suffix)) {
      m = m.substr(0, m.size() - std::strlen(u.suffix));  // not resize(): GCC 13 -Wrestrict false positive
      unit = u.prom;
      out.scale = u.scale;
      out.type = u.type;
      break;
    }
  // Spell out abbreviations (Prometheus names are read by people who never saw ours).
  auto replace_word = [&](const std::string& from, const std::string& to) {
    std::string r;
    size_t i = 0;
    while (i < m.size()) {
      size_t j = m.find('_', i);
      std::string w = m.substr(i, j == std::string::npos ? std::string::npos : j - i);
      r += (w == from ? to : w);
      if (j == std::string::npos) break;
      r += '_';
      i = j + 1;
    }
    m = r;
  };
  replace_word("util", "utilization");
  replace_word("mem", "memory");
  replace_word("temp", "temperature");
  replace_word("freq", "frequency");
  replace_word("avg", "average");
  out.name = m + unit;
  return out;
}

}  // namespace

std::string format_prometheus(const TelemetrySnapshot& snap, const std::vector<GpuInfo>& gpus) {
  std::map<std::string, Family> families;
  for (const auto& r : snap.readings) {
    Mapped mm = map_metric(r.metric);
    std::string prefix, labels;
    const std::string& d = r.device;
    if (d.rfind("gpu", 0) == 0) {
      prefix = "trainscope_gpu_";
      std::string idx = d.substr(3);
      labels = fmt::format("gpu=\"{}\"", escape_label(idx));
      for (const auto& g : gpus)
        if (std::to_string(g.nvml_index) == idx)
          labels += fmt::format(",uuid=\"{}\",name=\"{}\"", escape_label(g.uuid), escape_label(g.name));
    } else if (d == "cpu" && r.metric.rfind("mem_", 0) == 0) {
      prefix = "trainscope_host_";
    } else if (d.rfind("cpu", 0) == 0) {
      prefix = "trainscope_cpu_";
      labels = fmt::format("cpu=\"{}\"", d == "cpu" ? std::string("all") : escape_label(d.substr(3)));
    } else if (d == "process") {
      prefix = "trainscope_process_";
      if (mm.name == "rss_bytes") mm.name = "resident_memory_bytes";
      if (mm.name == "peak_rss_bytes") mm.name = "resident_memory_peak_bytes";
    } else {
      prefix = "trainscope_sensor_";
      labels = fmt::format("sensor=\"{}\"", escape_label(d));
    }
    std::string name = prefix + mm.name;
    Family& f = families[name];
    if (f.help.empty()) {
      const TelemetryField* field = telemetry::find_field(r.metric);
      f.help = field ? field->help : r.metric;
      // trainscope's *_pct fields become Prometheus *_ratio: say the scale changed.
      if (mm.scale == 0.01) f.help += "; exported as a ratio (percent / 100, so 1 = 100 %)";
      f.type = mm.type;
    }
    f.samples.push_back(fmt::format("{}{}{}{} {}", name, labels.empty() ? "" : "{", labels, labels.empty() ? "" : "}",
                                    mm.scale == 0.01 ? r.value / 100.0 : r.value * mm.scale));
  }
  std::string out;
  for (const auto& [name, f] : families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(f.help), name, f.type);
    for (const auto& s : f.samples) out += s + "\n";
  }
  return out;
}

std::pair<std::string, uint16_t> parse_listen_address(const std::string& text) {
  size_t colon = text.rfind(':');
  auto bad = [&] {
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("--listen '{}' is not HOST:PORT with an IPv4 host and a port 0..65535 (e.g. 127.0.0.1:9400)", text));
  };
  if (colon == std::string::npos || colon == 0) bad();
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1) bad();
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) bad();
  unsigned long p = std::stoul(port);
  if (p > 65535) bad();
  return {host, static_cast<uint16_t>(p)};
}

namespace {

// The HTTP response to one request head: /metrics rendered, 404 elsewhere, 405 for a non-GET.
std::string response_to(const std::string& req, const std::function<std::string()>& render) {
  std::string line = req.substr(0, req.find("\r\n"));
  std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
  if (line.rfind("GET ", 0) != 0) {
    status = "405 Method Not Allowed";
    body = "only GET is supported\n";
    type = "text/plain";
  } else {
    std::string path = line.substr(4, line.find(' ', 4) - 4);
    if (path == "/metrics" || path.rfind("/metrics?", 0) == 0) {
      try {
        body = render();
      } catch (const std::exception& e) {
        status = "500 Internal Server Error";
        body = std::string(e.what()) + "\n";
        type = "text/plain";
      }
    } else {
      status = "404 Not Found";
      body = "trainscope serves /metrics only\n";
      type = "text/plain";
    }
  }
  return fmt::format("HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
                     type, body.size(), body);
}

// One connection: its request head as read so far, then its response as sent so far.
struct Client {
  int fd = -1;
  std::string in, out;
  size_t sent = 0;
  bool responding = false;
  std::chrono::steady_clock::time_point deadline;
};

}  // namespace

// Every connection is served at once (poll over all of them, non-blocking sockets): a slow or
// idle client holds its own connection, never another scrape. Each gets 500 ms to send its
// request head and 2 s to take the response.
struct MetricsServer::Impl {
  static constexpr size_t kMaxClients = 256;  // more wait in the listen backlog
  int fd = -1;
  uint16_t port = 0;
  std::function<std::string()> render;
  std::atomic<bool> stop{false};
  std::thread thread;

  void respond(Client& c) {
    c.out = response_to(c.in, render);
    c.responding = true;
    c.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  }

  // Reads or writes what the socket is ready for; false when the connection is done.
  bool step(Client& c, short revents) {
    char buf[2048];
    if (!c.responding && (revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) c.in.append(buf, static_cast<size_t>(n));
      if (n == 0 || c.in.find("\r\n\r\n") != std::string::npos || c.in.size() >= 16384) respond(c);
      else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    }
    if (c.responding && (revents & POLLOUT)) {
      ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) c.sent += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      if (c.sent == c.out.size()) return false;
    }
    if (std::chrono::steady_clock::now() < c.deadline) return true;
    if (c.responding) return false;  // too slow to take its response
    respond(c);                      // too slow to ask: answered with what it sent (as a 405)
    return true;
  }

  void accept_new(std::vector<Client>& clients) {
    while (clients.size() < kMaxClients) {
      int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) return;
      Client& cl = clients.emplace_back();
      cl.fd = c;
      cl.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    }
  }

  void loop() {
    std::vector<Client> clients;
    std::vector<pollfd> fds;
    while (!stop.load()) {
      fds.assign(1, pollfd{fd, POLLIN, 0});
      for (const auto& c : clients) fds.push_back(pollfd{c.fd, static_cast<short>(c.responding ? POLLOUT : POLLIN), 0});
      if (::poll(fds.data(), fds.size(), clients.empty() ? 100 : 20) < 0) continue;  // wakes to notice stop
      std::vector<Client> open;
      for (size_t i = 0; i < clients.size(); ++i) {
        if (step(clients[i], fds[i + 1].revents)) open.push_back(std::move(clients[i]));
        else ::close(clients[i].fd);
      }
      clients = std::move(open);
      if (fds[0].revents & POLLIN) accept_new(clients);
    }
    for (auto& c : clients) ::close(c.fd);
  }
};

MetricsServer::MetricsServer(const std::string& host, uint16_t port, std::function<std::string()> render)
    : impl_(std::make_unique<Impl>()) {
  impl_->render = std::move(render);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    throw_error(ErrorKind::kInvalidArgument, fmt::format("metrics server: '{}' is not an IPv4 address", host));
  impl_->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);  // accept_new drains it
  if (impl_->fd < 0) throw_error(ErrorKind::kIo, fmt::format("metrics server: socket() failed: {}", std::strerror(errno)));
  int one = 1;
  ::setsockopt(impl_->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(impl_->fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(impl_->fd, 128) != 0) {
    int err = errno;
    ::close(impl_->fd);
    // The hint names the cause errno gives: a busy port, an address this host does not have, a
    // port below 1024 without the privilege.
    const char* hint = err == EADDRINUSE      ? "the port is in use: pick another port with --listen"
                       : err == EADDRNOTAVAIL ? "this host has no such address: give one of its own addresses, "
                                                "127.0.0.1 or 0.0.0.0 with --listen"
                       : err == EACCES        ? "ports below 1024 need privileges: pick a port >= 1024 with --listen"
                                              : "pick another address or port with --listen";
    throw_error(ErrorKind::kIo, fmt::format("metrics server: cannot listen on {}:{}: {}; {}", host, port,
                                            std::strerror(err), hint));
  }
  socklen_t len = sizeof addr;
  ::getsockname(impl_->fd, reinterpret_cast<sockaddr*>(&addr), &len);
  impl_->port = ntohs(addr.sin_port);
  impl_->thread = std::thread([this] { impl_->loop(); });
}

MetricsServer::~MetricsServer() { stop(); }

uint16_t MetricsServer::port() const { return impl_->port; }

void MetricsServer::stop() {
  if (impl_->stop.exchange(true)) return;
  if (impl_->thread.joinable()) impl_->thread.join();
  ::close(impl_->fd);
}

}  // namespace trainscope
