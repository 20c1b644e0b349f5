// The streaming reader of PyTorch profiler traces: zlib's gzread (which also reads plain files)
// under a std::streambuf, nlohmann-json's SAX interface on top, one compact Event per duration
// event the analysis uses, handed to the caller (events.h). The document is never held.
#include <fmt/core.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <nlohmann/json.hpp>
#include <streambuf>

#include "trace/events.h"
#include "trainscope/error.h"

namespace trainscope::trace {
namespace {

using json = nlohmann::json;

// gzread as a streambuf; counts the bytes handed out and keeps zlib's error, if any.
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw_error(ErrorKind::kIo, fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    gzbuffer(f_, 1 << 17);
  }
  ~GzBuf() override { gzclose(f_); }
  GzBuf(const GzBuf&) = delete;
  GzBuf& operator=(const GzBuf&) = delete;
  const std::string& error() const { return error_; }
  uint64_t delivered() const { return delivered_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(f_, buf_, sizeof buf_);
    int errnum = Z_OK;
    const char* msg = gzerror(f_, &errnum);
    if (n <= 0) {
      // gzread returns what a truncated stream has, then 0 with Z_BUF_ERROR set
      if (n < 0 || errnum != Z_OK) error_ = fmt::format("gzip stream damaged or truncated ({})", msg);
      return traits_type::eof();
    }
    setg(buf_, buf_, buf_ + n);
    delivered_ += static_cast<uint64_t>(n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile f_;
  char buf_[1 << 16];
  std::string error_;
  uint64_t delivered_ = 0;
};

// Where the parser is: what the innermost open container holds.
enum class Ctx { kRoot, kTop, kEvents, kEvent, kArgs, kDeviceList, kDevice, kDistInfo, kSkip };

// A number's text in microseconds as integer nanoseconds, exact to the ns for "1170.020".
int64_t us_text_to_ns(const std::string& s, double v) {
  const auto dot = s.find('.');
  if (s.find_first_of("eE") != std::string::npos || dot == std::string::npos) return std::llround(v * 1000.0);
  const bool neg = !s.empty() && s[0] == '-';
  int64_t whole = 0, frac = 0;
  for (size_t i = neg ? 1 : 0; i < dot; ++i) whole = whole * 10 + (s[i] - '0');
  for (size_t i = dot + 1, k = 0; k < 3; ++k, ++i) frac = frac * 10 + (i < s.size() ? s[i] - '0' : 0);
  const int64_t ns = whole * 1000 + frac;
  return neg ? -ns : ns;
}

// The fields of one event as read so far.
struct Pending {
  std::string name, ph, cat, pid, tid;
  int64_t ts_ns = 0, dur_ns = 0, correlation = -1, external_id = -1, stream = -1;
  int32_t device = -1;
  bool has_ts = false;
};

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

bool is_dataloader(const std::string& name) {
  const std::string tail = ".__next__";
  return starts_with(name, "enumerate(DataLoader)#") && name.size() >= tail.size() &&
         name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

// The kind of a CPU-side operator event (cpu_op, or any event of a legacy trace's CPU pid).
Kind operator_kind(const std::string& name) {
  if (starts_with(name, "ProfilerStep#")) return Kind::kStep;
  return is_dataloader(name) ? Kind::kDataLoader : Kind::kOperator;
}

// The kind of an event by its category (tb_plugin trace.py's EventTypeMap, lower-cased), or none.
std::optional<Kind> kind_of(const Pending& p, bool legacy) {
  if (p.ph != "X" || !p.has_ts) return std::nullopt;
  if (legacy && p.cat.empty()) {
    if (starts_with(p.pid, "CUDA")) return Kind::kKernel;
    return operator_kind(p.name);
  }
  std::string c = p.cat;
  for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (c == "cpu_op" || c == "operator") return operator_kind(p.name);
  // PyTorch 2.x marks the DataLoader's __next__ as a user_annotation; the plugin only looked for
  // it among operators, which older PyTorch wrote it as. Both count as DataLoader here.
  if (c == "user_annotation" && (starts_with(p.name, "ProfilerStep#") || is_dataloader(p.name)))
    return operator_kind(p.name);
  if (c == "python") return Kind::kPython;
  if (c == "kernel") return Kind::kKernel;
  if (c == "gpu_memcpy" || c == "memcpy") return Kind::kMemcpy;
  if (c == "gpu_memset" || c == "memset") return Kind::kMemset;
  if (c == "cuda_driver" || c == "runtime" || (c.size() > 8 && c.compare(c.size() - 8, 8, "_runtime") == 0))
    return Kind::kRuntime;
  return std::nullopt;
}

class Handler : public nlohmann::json_sax<json> {
 public:
  Handler(const std::string& path, TraceInfo& info, const EventSink& sink, const GzBuf& input)
      : path_(path), info_(info), sink_(sink), input_(input) {}

  bool null() override { return scalar(Value{}); }
  bool boolean(bool) override { return scalar(Value{}); }
  bool number_integer(number_integer_t v) override { return scalar(number(static_cast<double>(v), std::to_string(v))); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(number(static_cast<double>(v), std::to_string(v))); }
  bool number_float(number_float_t v, const string_t& s) override { return scalar(number(v, s)); }
  bool string(string_t& s) override {
    Value val;
    val.is_string = true;
    val.text = s;
    return scalar(val);
  }
  bool binary(binary_t&) override { return scalar(Value{}); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) override;

  bool saw_events() const { return saw_events_; }
  std::optional<int64_t> schema_version() const { return schema_version_; }

 private:
  struct Value {
    bool is_string = false, is_number = false;
    std::string text;
    double number = 0;
  };
  struct Frame {
    Ctx ctx;
    bool array;
    std::string key;  // the key this container was opened under
  };
  static Value number(double v, const std::string& s) {
    Value val;
    val.is_number = true;
    val.number = v;
    val.text = s;
    return val;
  }
  Ctx child_ctx(bool array) const;
  bool open(bool array);
  bool close();
  bool scalar(const Value& v);
  void event_field(const Value& v);
  void args_field(const Value& v);
  void top_field(const Value& v);
  void finish_event();

  std::string path_;
  TraceInfo& info_;
  const EventSink& sink_;
  const GzBuf& input_;
  std::vector<Frame> stack_;
  std::string key_;
  Pending ev_;
  bool saw_events_ = false;
  std::optional<int64_t> schema_version_;
};

Ctx Handler::child_ctx(bool array) const {
  if (stack_.empty()) return Ctx::kTop;
  const Frame& f = stack_.back();
  switch (f.ctx) {
    case Ctx::kTop:
      if (info_.schema == "legacy") return array ? Ctx::kSkip : Ctx::kEvent;
      if (key_ == "traceEvents" && array) return Ctx::kEvents;
      if (key_ == "deviceProperties" && array) return Ctx::kDeviceList;
      if (key_ == "distributedInfo" && !array) return Ctx::kDistInfo;
      return Ctx::kSkip;
    case Ctx::kEvents: return array ? Ctx::kSkip : Ctx::kEvent;
    case Ctx::kEvent: return key_ == "args" && !array ? Ctx::kArgs : Ctx::kSkip;
    case Ctx::kDeviceList: return array ? Ctx::kSkip : Ctx::kDevice;
    default: return Ctx::kSkip;
  }
}

bool Handler::open(bool array) {
  if (stack_.empty()) info_.schema = array ? "legacy" : "kineto";
  const Ctx ctx = child_ctx(array);
  if (ctx == Ctx::kEvent) ev_ = Pending{};
  if (ctx == Ctx::kEvents) saw_events_ = true;
  if (ctx == Ctx::kDevice) info_.devices.emplace_back();
  stack_.push_back(Frame{ctx, array, key_});
  return true;
}

bool Handler::close() {
  const Ctx ctx = stack_.back().ctx;
  stack_.pop_back();
  if (ctx == Ctx::kEvent) finish_event();
  return true;
}

bool Handler::scalar(const Value& v) {
  if (stack_.empty())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: not a PyTorch profiler trace: the document is a single value, not the "
                            "Kineto object or the legacy event array",
                            path_));
  switch (stack_.back().ctx) {
    case Ctx::kEvent: event_field(v); break;
    case Ctx::kArgs: args_field(v); break;
    case Ctx::kTop: top_field(v); break;
    case Ctx::kDevice:
      if (key_ == "name" && v.is_string) info_.devices.back() = v.text;
      break;
    case Ctx::kDistInfo:
      if (key_ == "rank" && v.is_number) info_.rank = static_cast<int>(v.number);
      if (key_ == "world_size" && v.is_number) info_.world_size = static_cast<int>(v.number);
      if (key_ == "backend" && v.is_string) info_.backend = v.text;
      break;
    default: break;
  }
  return true;
}

void Handler::top_field(const Value& v) {
  if (key_ == "schemaVersion" && v.is_number) schema_version_ = static_cast<int64_t>(v.number);
}

void Handler::event_field(const Value& v) {
  if (key_ == "name" && v.is_string) ev_.name = v.text;
  else if (key_ == "ph" && v.is_string) ev_.ph = v.text;
  else if (key_ == "cat" && v.is_string) ev_.cat = v.text;
  else if (key_ == "pid") ev_.pid = v.text;  // a string or a number, as text
  else if (key_ == "tid") ev_.tid = v.text;
  else if (key_ == "ts" && v.is_number) {
    ev_.ts_ns = us_text_to_ns(v.text, v.number);
    ev_.has_ts = true;
  } else if (key_ == "dur" && v.is_number) {
    ev_.dur_ns = std::max<int64_t>(0, us_text_to_ns(v.text, v.number));
  }
}

void Handler::args_field(const Value& v) {
  if (!v.is_number) return;
  const auto n = static_cast<int64_t>(v.number);
  if (key_ == "correlation") ev_.correlation = n;
  else if (key_ == "External id" || key_ == "external id") ev_.external_id = n;
  else if (key_ == "stream") ev_.stream = n;
  else if (key_ == "device") ev_.device = static_cast<int32_t>(n);
}

void Handler::finish_event() {
  const auto kind = kind_of(ev_, info_.schema == "legacy");
  if (!kind) return;
  Event e;
  e.ts_ns = ev_.ts_ns;
  e.dur_ns = ev_.dur_ns;
  e.correlation = ev_.correlation;
  e.external_id = ev_.external_id;
  e.stream = ev_.stream;
  e.device = ev_.device;
  e.kind = *kind;
  if (is_gpu(e.kind) && e.stream < 0) {
    // legacy CUDA events: tid "stream 7"; Kineto GPU events without args.stream: tid is it
    const auto digits = ev_.tid.find_first_of("0123456789");
    e.stream = digits == std::string::npos ? 0 : std::atoll(ev_.tid.c_str() + digits);
  }
  e.name = e.kind == Kind::kStep ? kNotInterned : info_.intern_name(ev_.name);
  e.thread = info_.intern_thread(ev_.pid + "/" + ev_.tid);
  sink_(e, ev_.name);
}

bool Handler::parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) {
  const std::string what = ex.what();
  // an error at the last byte there is, or at the end of input: the text stops early
  if (what.find("unexpected end of input") != std::string::npos || position >= input_.delivered())
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{}: truncated at byte {}: the JSON ends inside {}; the program writing it was "
                            "probably stopped, profile again and let the trace handler finish",
                            path_, position, stack_.empty() ? "the document" : "an open object or array"));
  throw_error(ErrorKind::kDataFormat,
              fmt::format("{}: not valid JSON at byte {} (near '{}'): {}", path_, position,
                          last_token.substr(0, 40), what));
}

}  // namespace

void read_events(const std::string& path, TraceInfo& info, const EventSink& sink) {
  GzBuf buf(path);
  std::istream in(&buf);
  Handler handler(path, info, sink, buf);
  try {
    json::sax_parse(in, &handler);
  } catch (const Error&) {
    if (!buf.error().empty())
      throw_error(ErrorKind::kDataFormat, fmt::format("{}: {} after {} decompressed bytes", path, buf.error(), buf.delivered()));
    throw;
  }
  if (!buf.error().empty())
    throw_error(ErrorKind::kDataFormat, fmt::format("{}: {} after {} decompressed bytes", path, buf.error(), buf.delivered()));
  if (info.schema == "kineto") {
    if (!handler.saw_events())
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("{}: unknown trace schema: the JSON object has no 'traceEvents' array (a Kineto "
                              "trace has traceEvents, deviceProperties, distributedInfo)",
                              path));
    if (auto v = handler.schema_version(); v && *v != 1)
      throw_error(ErrorKind::kDataFormat,
                  fmt::format("{}: unknown trace schema version {} (this trainscope reads Kineto schemaVersion 1 "
                              "and the legacy event array); please report it with the PyTorch version",
                              path, *v));
  }
}

}  // namespace trainscope::trace
