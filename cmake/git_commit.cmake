# Script mode (cmake -DSRC=<source dir> -DOUT=<header> -P git_commit.cmake), run on every build by
# the trainscope_git_commit target: writes OUT, defining TRAINSCOPE_GIT_COMMIT for provenance
# (results.json `git_commit`, `trainscope --version`), and rewrites it only when the text
# changes, so a new commit recompiles only the two files that include it. Read at configure time it went stale: an
# incremental build after a commit recorded the commit the build folder was configured at.
# "unknown" outside a git checkout; "<commit>-dirty" when tracked files differ from that commit,
# since the binary is then not that commit's code.
# Only SRC's own repository: a source tree unpacked inside another checkout is "unknown", not
# that checkout's commit. --no-optional-locks: never take the index lock of a tree being edited.
set(git git --no-optional-locks -c core.fileMode=false)
execute_process(COMMAND ${git} rev-parse --show-toplevel WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(commit "unknown")
if(rc EQUAL 0 AND top)
  file(REAL_PATH "${top}" top)
  file(REAL_PATH "${SRC}" src_real)
endif()
if(rc EQUAL 0 AND top AND top STREQUAL src_real)
  execute_process(COMMAND ${git} rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND head)
    set(commit "${head}")
    execute_process(COMMAND ${git} diff --quiet HEAD -- . WORKING_DIRECTORY "${SRC}" RESULT_VARIABLE dirty ERROR_QUIET)
    if(dirty EQUAL 1)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "// Generated on each build by cmake/git_commit.cmake. Do not edit.\n#pragma once\n#define TRAINSCOPE_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
