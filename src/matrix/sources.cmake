# The experiment matrix (trainscope/runner.h, the matrix layer): its class matrix/matrix.h, one
# file per idea.
target_sources(trainscope PRIVATE
  matrix/matrix.cpp
  matrix/inputs.cpp
  matrix/run_folder.cpp
  matrix/run_telemetry.cpp
  matrix/sweep.cpp
  matrix/train_cell.cpp
  matrix/failure.cpp
  matrix/host.cpp)
