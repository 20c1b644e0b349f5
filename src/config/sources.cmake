# The config layer (docs/design.md#layers): what a matrix is. The plain config structs
# (trainscope/config.h) and their TOML and matrix.json forms, the settings table
# (trainscope/settings.h: its machinery, its rows, its documentation) and the execution
# variants' names (trainscope/variants.h).
target_sources(trainscope_core PRIVATE
  config/config.cpp
  config/settings.cpp
  config/settings_rows.cpp
  config/settings_docs.cpp
  config/variants.cpp)
