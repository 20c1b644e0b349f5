# The binary end to end, one file per idea (helpers: cli/cli_helpers.h), and the settings' options.
ts_add_test(test_cli SOURCES cli/test_cli_bad_input.cpp cli/test_cli_console.cpp cli/test_cli_exit.cpp
            cli/test_cli_hosts.cpp cli/test_cli_identity.cpp cli/test_cli_interrupt.cpp cli/test_cli_models.cpp
            cli/test_cli_outputs.cpp cli/test_cli_resume.cpp cli/test_cli_stall.cpp
            cli/test_settings_cli.cpp ${PROJECT_SOURCE_DIR}/tools/trainscope/settings_cli.cpp
            TORCH LIBS CLI11::CLI11)
target_include_directories(test_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/trainscope)
add_dependencies(test_cli trainscope_cli)

# The record end to end: the binary with a two-GPU fake NVML (tests/fake_nvml, built by telemetry.cmake).
ts_add_test(test_record_e2e SOURCES cli/test_record_e2e.cpp)
add_dependencies(test_record_e2e trainscope_cli fake_nvml)
target_compile_definitions(test_record_e2e PRIVATE TS_FAKE_NVML="$<TARGET_FILE:fake_nvml>")

# A language model end to end: record, TensorBoard, compare, history, report (docs/language-models.md).
ts_add_test(test_lm_e2e SOURCES cli/test_lm_e2e.cpp)
add_dependencies(test_lm_e2e trainscope_cli)

# A vision transformer end to end: vit-ti on synthetic images, its record and checkpoint (docs/workloads.md).
ts_add_test(test_vit_e2e SOURCES cli/test_vit_e2e.cpp)
add_dependencies(test_vit_e2e trainscope_cli)
# Token generation end to end: pp/tg, the decode sweep, the server scenario and llama-bench's formats (docs/generation.md).
ts_add_test(test_generate_e2e SOURCES cli/test_generate_e2e.cpp)
add_dependencies(test_generate_e2e trainscope_cli)
# A language model's generation results in report (RQ5, tables), compare (the gate) and history (docs/generation.md#outputs).
ts_add_test(test_generate_outputs_e2e SOURCES cli/test_generate_outputs_e2e.cpp)
add_dependencies(test_generate_outputs_e2e trainscope_cli)
# The server scenario's continuous batching and lengths from the text, end to end (docs/generation.md).
ts_add_test(test_cli_server_e2e SOURCES cli/test_cli_server_e2e.cpp)
add_dependencies(test_cli_server_e2e trainscope_cli)
# infer's flags checked before anything is loaded or written, and damaged checkpoints named.
ts_add_test(test_cli_infer_flags SOURCES cli/test_cli_infer_flags.cpp)
add_dependencies(test_cli_infer_flags trainscope_cli)
