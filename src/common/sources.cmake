target_sources(trainscope_core PRIVATE
  common/error.cpp
  common/config.cpp
  # the settings table (trainscope/settings.h): its machinery, its rows, its documentation
  common/settings.cpp
  common/settings_rows.cpp
  common/settings_docs.cpp
  common/provenance.cpp
  common/cpu_budget.cpp
  common/host_malloc.cpp
  common/fs.cpp
  common/progress.cpp
  common/stats.cpp
  common/text.cpp
  # execution variants (trainscope/variants.h)
  common/variants.cpp
  common/mfu.cpp)
