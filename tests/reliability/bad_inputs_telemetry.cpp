// Bad-input rows: /proc and sysfs (telemetry sources and the bare parsers): never throw;
// unavailable or dropped with a reason.
#include "reliability/bad_input_table.h"
#include "telemetry/proc_parse.h"
#include "telemetry/source.h"
#include "trainscope/fs.h"

namespace trainscope::bad_inputs {

namespace {

/// A copy of the telemetry fixture tree (tests/fixtures/telemetry: proc/ and sys/) in `dir`.
fs::path telemetry_tree(const fs::path& dir) {
  fs::copy(fs::path(TS_FIXTURES_DIR) / "telemetry", dir / "t", fs::copy_options::recursive);
  return dir / "t";
}

/// Reasons of the drops one poll of `src` recorded, "device/metric:reason; ...".
std::string drops_of(telemetry::TelemetrySource& src) {
  telemetry::SampleBatch b;
  src.sample(1'000'000'000, b);
  std::string out;
  for (const auto& d : b.drops) out += d.device + "/" + d.metric + ":" + d.reason + "; ";
  return out;
}
std::string probe_failure(telemetry::TelemetrySource& src) {
  auto p = src.probe();
  return p.available ? std::string() : "unavailable: " + p.reason;
}

}  // namespace

// Rows: /proc and sysfs.
void add_telemetry_rows(std::vector<Row>& t) {
  t.push_back({"proc_stat_garbage_probe",
               [](D d) { return write_text(telemetry_tree(d) / "proc" / "stat", "intr 1 2 3\nbogus\n").string(); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "no 'cpu' line"});
  t.push_back({"proc_stat_empty_probe", [](D d) { return write_text(telemetry_tree(d) / "proc" / "stat", "").string(); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "no 'cpu' line"});
  t.push_back({"proc_missing_root", [](D d) { return (d / "noproc").string(); },
               [](D d, S in) {
                 auto s = telemetry::make_proc_source(in, (d / "sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "ENOENT"});
  t.push_back({"proc_stat_garbage_while_sampling", [](D d) { telemetry_tree(d); return std::string("util_pct"); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 write_text(d / "t/proc/stat", "cpu x y z\n\0\0garbage");
                 write_text(d / "t/proc/self/status", "VmRSS:\t-12 kB\n");
                 return drops_of(*s);
               },
               kSoft, "parse_error"});
  t.push_back({"proc_files_vanish_while_sampling", [](D d) { telemetry_tree(d); return std::string("util_pct"); },
               [](D d, S) {
                 auto s = telemetry::make_proc_source((d / "t/proc").string(), (d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 trainscope::remove_tree(d / "t/proc");
                 return drops_of(*s);
               },
               kSoft, "unreadable"});
  t.push_back({"rapl_range_garbage_probe",
               [](D d) {
                 auto root = telemetry_tree(d) / "sys/class/powercap";
                 for (const auto& e : fs::directory_iterator(root))
                   write_text(e.path() / "max_energy_range_uj", "lots\n");
                 return std::string("max_energy_range_uj");
               },
               [](D d, S) {
                 auto s = telemetry::make_rapl_source((d / "t/sys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "unreadable or zero"});
  t.push_back({"rapl_missing_powercap", [](D d) { return (d / "nosys/class/powercap").string(); },
               [](D d, S) {
                 auto s = telemetry::make_rapl_source((d / "nosys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "does not exist"});
  t.push_back({"rapl_energy_garbage_while_sampling", [](D d) { telemetry_tree(d); return std::string("energy_j"); },
               [](D d, S) {
                 auto s = telemetry::make_rapl_source((d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 for (const auto& e : fs::directory_iterator(d / "t/sys/class/powercap"))
                   write_text(e.path() / "energy_uj", "-5\n");
                 return drops_of(*s);
               },
               kSoft, "parse_error"});
  t.push_back({"hwmon_temp_garbage_while_sampling", [](D d) { telemetry_tree(d); return std::string("temp_c"); },
               [](D d, S) {
                 auto s = telemetry::make_hwmon_source((d / "t/sys").string(), {});
                 if (!s->probe().available) return std::string();
                 write_text(d / "t/sys/class/hwmon/hwmon0/temp1_input", "hot\n");
                 write_text(d / "t/sys/class/thermal/thermal_zone0/temp", "");
                 return drops_of(*s);
               },
               kSoft, "parse_error"});
  t.push_back({"hwmon_missing_sys", [](D d) { return (d / "nosys/class/hwmon").string(); },
               [](D d, S) {
                 auto s = telemetry::make_hwmon_source((d / "nosys").string(), {});
                 return probe_failure(*s);
               },
               kSoft, "no temperature sensor"});
  // Bare parsers: garbage gives an empty optional / nothing (the sources turn it into a drop).
  auto parser_row = [&](std::string name, std::function<bool()> rejected) {
    t.push_back({name, [](D) { return std::string(); },
                 [rejected](D, S) { return rejected() ? std::string("rejected") : std::string(); }, kSoft, ""});
  };
  parser_row("parse_u64_garbage_empty_negative_overflow", [] {
    return !telemetry::parse_u64("12ab") && !telemetry::parse_u64("") && !telemetry::parse_u64("-1") &&
           !telemetry::parse_u64("99999999999999999999999");
  });
  parser_row("parse_self_stat_garbage", [] {
    return !telemetry::parse_self_stat("") && !telemetry::parse_self_stat("123 (cat) R 1 2") &&
           !telemetry::parse_self_stat("no parenthesis at all");
  });
  parser_row("parse_proc_stat_garbage", [] {
    return telemetry::parse_proc_stat("cpu\ncpu0 a b c d\ncpux 1\n\n\n").empty() && telemetry::parse_proc_stat("").empty();
  });
  parser_row("parse_kb_field_garbage", [] {
    return !telemetry::parse_kb_field("VmRSS: many kB\n", "VmRSS") && !telemetry::parse_kb_field("VmRSS:", "VmRSS") &&
           !telemetry::parse_kb_field("VmRSS: 12 MB\n", "VmRSS") && !telemetry::parse_kb_field("", "MemTotal");
  });
}

}  // namespace trainscope::bad_inputs
