# Report component: analysis, advice, history and compare (torch-free), and the HTML end-to-end test.
# One file per idea; helpers in report/report_helpers.h.
ts_add_test(test_report SOURCES report/test_report_advice.cpp report/test_report_analysis.cpp
            report/test_report_compare.cpp report/test_report_history.cpp report/test_report_hosts.cpp
            report/test_report_identity.cpp report/test_report_render.cpp report/test_report_reporters.cpp
            report/test_batch_sweep.cpp report/test_report_generation.cpp report/test_report_cpu_contention.cpp
            LIBS SQLite::SQLite3)

add_executable(report_fixture_html report/report_fixture_html.cpp)
target_link_libraries(report_fixture_html PRIVATE trainscope_core)

# Opens report.html of the study fixture in headless Chromium: no console errors, every chart drawn,
# a screenshot kept under <build>/test-artifacts/report/. Skips (77) only when chromium is absent.
add_test(NAME ReportHtmlChromium
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/report/e2e_html.sh $<TARGET_FILE:report_fixture_html>
                 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/report/study ${PROJECT_BINARY_DIR}/test-artifacts/report)
set_tests_properties(ReportHtmlChromium PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS report)
ts_add_test(test_report_lm SOURCES report/test_report_lm.cpp)
# A language model's and an image model's inference.json in compare, the report's generation
# tables and the history: serving and threads that differ, several invocations of one
# folder, the record's dtype, image inference compared, schema 4 and `history import`.
ts_add_test(test_compare_gen SOURCES report/test_compare_gen_serving.cpp report/test_compare_gen_sources.cpp
            report/test_compare_gen_dtype.cpp report/test_compare_gen_image.cpp report/test_compare_gen_history.cpp
            LIBS SQLite::SQLite3)
