ts_add_test(test_results SOURCES results/test_run_record.cpp results/test_inference_reporter.cpp
            results/test_reporter_registry.cpp)
ts_add_test(test_generation_section SOURCES results/test_generation_section.cpp LIBS SQLite::SQLite3)
