# Structure checks (torch-free: they run in every build, the sanitizer ones included).
# LayersPointDown: every #include points down the layers of docs/design.md#layers
# (scripts/check-layers.py, its allow-list scripts/layers-allow.txt).
# FunctionsWithinLimit: no function in src/ or tools/ over 100 lines (scripts/check-function-length.py,
# pmccabe; skipped, 77, where pmccabe is not installed: scripts/install-deps.sh --test installs it).
add_test(NAME LayersPointDown COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/check-layers.py)
add_test(NAME FunctionsWithinLimit
         COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/check-function-length.py --skip-without-pmccabe)
set_tests_properties(FunctionsWithinLimit PROPERTIES SKIP_RETURN_CODE 77)
# The checkers themselves: an up-pointing include, a stale allow-list line, an unclaimed file and a
# 123-line function each fail their check on a copy of the tree.
add_test(NAME StructureCheckersCatchViolations
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/structure/checks_selftest.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(StructureCheckersCatchViolations PROPERTIES SKIP_RETURN_CODE 77)
