# files of src/telemetry (owned by the telemetry component)
target_sources(trainscope_core PRIVATE
  telemetry/fields.cpp
  telemetry/proc_parse.cpp
  telemetry/proc_source.cpp
  telemetry/rapl_source.cpp
  telemetry/hwmon_source.cpp
  telemetry/nvml_loader.cpp
  telemetry/nvml_source.cpp
  telemetry/sampler.cpp
  telemetry/headline.cpp
  telemetry/series_file.cpp
  telemetry/prometheus.cpp)
