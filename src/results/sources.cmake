target_sources(trainscope_core PRIVATE
  results/run_record.cpp
  results/record_json.cpp
  results/run_metrics.cpp
  results/console_table.cpp
  results/inference_reporters.cpp
  results/inference_run.cpp
  results/input_pipeline_text.cpp
  results/results_files.cpp
  results/generation_section.cpp
  results/generation_stats.cpp
  results/generation_output.cpp)
