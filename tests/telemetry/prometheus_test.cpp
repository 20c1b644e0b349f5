// Prometheus exposition: names, units and line format; a scrape of /metrics over loopback.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "trainscope/error.h"
#include "trainscope/telemetry_prometheus.h"

using namespace trainscope;

namespace {

TelemetrySnapshot snapshot() {
  TelemetrySnapshot s;
  s.readings = {{"gpu0", "power_w", 152.5},   {"gpu0", "util_pct", 70},      {"gpu1", "power_w", 23},
                {"gpu0", "temp_c", 69},       {"gpu0", "energy_j", 1234.5},  {"cpu", "util_pct", 60},
                {"cpu3", "util_pct", 12.5},   {"cpu", "mem_used_bytes", 1e9}, {"process", "rss_bytes", 5e8},
                {"cpu", "freq_mhz", 2100},    {"hwmon:coretemp:Package \"0\"", "temp_c", 45},
                {"cpu", "steal_pct", 1.5}};
  return s;
}

std::vector<GpuInfo> gpus() {
  GpuInfo a{0, "NVIDIA H200", "GPU-aaaa", "00000000:19:00.0", {}, {}};
  GpuInfo b{1, "NVIDIA H200", "GPU-bbbb", "00000000:2A:00.0", {}, {}};
  return {a, b};
}

// Validates text against the exposition format 0.0.4: every line is HELP, TYPE or a sample;
// every sample's family has exactly one HELP and one TYPE before it; families are contiguous.
void expect_valid_exposition(const std::string& text) {
  static const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*")*\})? (-?[0-9.eE+-]+|NaN|[+-]Inf)$)");
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  std::istringstream in(text);
  std::string line, current;
  std::set<std::string> helped, typed, finished;
  int samples = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) {
      EXPECT_TRUE(helped.insert(m[1]).second) << "second HELP: " << line;
      if (!current.empty() && current != m[1]) finished.insert(current);
      current = m[1];
      EXPECT_FALSE(finished.count(current)) << line;
    } else if (std::regex_match(line, m, kType)) {
      EXPECT_TRUE(typed.insert(m[1]).second) << "second TYPE: " << line;
      EXPECT_EQ(m[1], current) << line;
    } else if (std::regex_match(line, m, kSample)) {
      ++samples;
      std::string name = m[1];
      EXPECT_EQ(name, current) << "sample outside its family: " << line;
      EXPECT_TRUE(helped.count(name) && typed.count(name)) << line;
    } else {
      ADD_FAILURE() << "not exposition format: '" << line << "'";
    }
  }
  EXPECT_GT(samples, 0);
}

// A client socket connected to the server on 127.0.0.1:`port` (the test fails where it is not).
int connect_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Sends `request` on `fd`, reads the response until the server closes, closes `fd`.
std::string exchange(int fd, const std::string& request) {
  ::send(fd, request.data(), request.size(), 0);
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return resp;
}

}  // namespace

TEST(telemetry_Prometheus, ConventionalNamesUnitsAndLabels) {
  std::string text = format_prometheus(snapshot(), gpus());
  expect_valid_exposition(text);
  EXPECT_NE(text.find("trainscope_gpu_power_watts{gpu=\"0\",uuid=\"GPU-aaaa\",name=\"NVIDIA H200\"} 152.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trainscope_gpu_power_watts{gpu=\"1\",uuid=\"GPU-bbbb\""), std::string::npos);
  EXPECT_NE(text.find("trainscope_gpu_utilization_ratio{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 0.7\n"), std::string::npos);  // 70 % -> 0.7
  EXPECT_NE(text.find("# TYPE trainscope_gpu_energy_joules_total counter"), std::string::npos);
  EXPECT_NE(text.find("trainscope_gpu_temperature_celsius{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("trainscope_cpu_utilization_ratio{cpu=\"all\"} 0.6"), std::string::npos);
  EXPECT_NE(text.find("trainscope_cpu_utilization_ratio{cpu=\"3\"} 0.125"), std::string::npos);
  EXPECT_NE(text.find("trainscope_cpu_steal_ratio{cpu=\"all\"} 0.015"), std::string::npos) << text;
  EXPECT_NE(text.find("trainscope_host_memory_used_bytes 1000000000"), std::string::npos);
  EXPECT_NE(text.find("trainscope_process_resident_memory_bytes 500000000"), std::string::npos);
  EXPECT_NE(text.find("trainscope_cpu_frequency_hertz{cpu=\"all\"} 2100000000"), std::string::npos);
  EXPECT_NE(text.find("sensor=\"hwmon:coretemp:Package \\\"0\\\"\""), std::string::npos);  // escaped quotes
  EXPECT_NE(text.find("# HELP trainscope_gpu_power_watts "), std::string::npos);
}

TEST(telemetry_Prometheus, ScrapeOverLoopback) {
  MetricsServer server("127.0.0.1", 0, [] { return format_prometheus(snapshot(), gpus()); });
  ASSERT_GT(server.port(), 0);
  auto fetch = [&](const std::string& path) {
    return exchange(connect_loopback(server.port()),
                    "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n");
  };
  std::string resp = fetch("/metrics");
  ASSERT_EQ(resp.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << resp;
  EXPECT_NE(resp.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  size_t body = resp.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  expect_valid_exposition(resp.substr(body + 4));
  EXPECT_EQ(fetch("/other").rfind("HTTP/1.1 404", 0), 0u);
  server.stop();
  server.stop();
}

// Connections used to be served one at a time, each waiting up to 500 ms for its request: 50
// slow clients made /metrics time out. A client that connects and sends nothing no longer holds
// up a scrape that comes after it: the scrape is answered while the idle one still waits.
TEST(telemetry_Prometheus, AnIdleClientDoesNotHoldUpAScrape) {
  MetricsServer server("127.0.0.1", 0, [] { return format_prometheus(snapshot(), gpus()); });
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(connect_loopback(server.port()));
  const std::string resp =
      exchange(connect_loopback(server.port()), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(resp.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << resp;
  // Served one at a time, each idle client would have been answered (405) before the scrape.
  char buf[4096];
  for (int c : idle) {
    EXPECT_EQ(::recv(c, buf, sizeof buf, MSG_DONTWAIT), -1) << "an idle client was answered before the scrape";
    ::close(c);
  }
}

// "port in use?" was the hint for every failure to listen: an address this host does not have
// (192.0.2.1 is TEST-NET-1, never a local address) gets its own cause, a busy port its own.
TEST(telemetry_Prometheus, ListenFailureHintNamesTheCause) {
  auto message = [](const std::string& host, uint16_t port) {
    try {
      MetricsServer s(host, port, [] { return std::string(); });
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("listened");
  };
  const std::string foreign = message("192.0.2.1", 0);
  EXPECT_NE(foreign.find("this host has no such address"), std::string::npos) << foreign;
  EXPECT_EQ(foreign.find("in use"), std::string::npos) << foreign;
  MetricsServer taken("127.0.0.1", 0, [] { return std::string(); });
  const std::string busy = message("127.0.0.1", taken.port());
  EXPECT_NE(busy.find("the port is in use"), std::string::npos) << busy;
}

TEST(telemetry_Prometheus, ListenAddressParsing) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:9400"), (std::pair<std::string, uint16_t>{"127.0.0.1", 9400}));
  for (const char* bad : {"9400", "localhost:9400", "127.0.0.1:", "127.0.0.1:70000", ":80", "127.0.0.1:x"})
    EXPECT_THROW(parse_listen_address(bad), Error) << bad;
}
