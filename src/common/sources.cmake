target_sources(trainscope_core PRIVATE
  common/error.cpp
  common/provenance.cpp
  common/cpu_budget.cpp
  common/host_malloc.cpp
  common/fs.cpp
  common/progress.cpp
  common/stats.cpp
  common/text.cpp
  common/zip_crc.cpp)
