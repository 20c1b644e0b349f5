target_sources(trainscope_cli PRIVATE cmd_monitor.cpp)
target_sources(trainscope_cli PRIVATE cmd_history.cpp)
target_sources(trainscope_cli PRIVATE cmd_infer.cpp)
target_sources(trainscope_cli PRIVATE cmd_settings.cpp settings_cli.cpp)
