target_sources(trainscope_core PRIVATE
  results/run_record.cpp
  results/console_table.cpp)
