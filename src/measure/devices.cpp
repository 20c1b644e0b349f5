// measure_devices (include/trainscope/measure.h): the program once per device, then one results
// file of all of them, so the devices are compared as `run` compares the cells of a matrix.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "trainscope/error.h"
#include "trainscope/fs.h"
#include "trainscope/measure.h"
#include "trainscope/reporter.h"

namespace trainscope::measure {
namespace {

bool valid_device(const std::string& d) {
  if (d == "cpu" || d == "cuda") return true;
  return d.size() > 5 && d.compare(0, 5, "cuda:") == 0 &&
         std::all_of(d.begin() + 5, d.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
}

void check_devices(const std::vector<std::string>& devices) {
  if (devices.empty())
    throw_error(ErrorKind::kInvalidArgument, "measure: --devices is empty; name the devices, e.g. --devices cpu,cuda:0");
  std::set<std::string> seen;
  for (const std::string& d : devices) {
    if (!valid_device(d))
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("measure: --devices: '{}' is not a device; write cpu, cuda or cuda:N, e.g. --devices cpu,cuda:0", d));
    if (!seen.insert(d).second)
      throw_error(ErrorKind::kInvalidArgument, fmt::format("measure: --devices names '{}' twice", d));
  }
}

// "cuda:0" -> "cuda0": the device's folder name.
std::string folder_of(std::string device) {
  device.erase(std::remove(device.begin(), device.end(), ':'), device.end());
  return device;
}

}  // namespace

std::vector<MeasureResult> measure_devices(const MeasureConfig& config, const std::vector<std::string>& devices) {
  check_devices(devices);
  ensure_writable_dir(config.out_dir);
  std::vector<MeasureResult> out;
  std::vector<RunRecord> records;
  for (const std::string& d : devices) {
    MeasureConfig c = config;
    c.run_device = d;
    c.out_dir = config.out_dir + "/" + folder_of(d);
    out.push_back(measure_command(c));
    records.push_back(out.back().record);
  }
  ResultsFilesReporter files;
  files.start(out.front().provenance, config.out_dir, records.size());
  for (const RunRecord& r : records) files.run_finished(r);
  files.finish(records);
  return out;
}

}  // namespace trainscope::measure
