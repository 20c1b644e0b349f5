#include "common/text.h"

#include <ctime>

namespace trainscope {

std::string utc_timestamp(UtcFormat format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format == UtcFormat::kFolder ? "%Y%m%d-%H%M%S" : "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += "\"\"";
    else if (c == '\n' || c == '\r') o += ' ';
    else o += c;
  }
  return o + "\"";
}

}  // namespace trainscope
