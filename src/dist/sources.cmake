# dist: data-parallel training on c10d (docs/distributed.md). env.cpp needs no LibTorch.
target_sources(trainscope_core PRIVATE dist/env.cpp dist/rank_table.cpp)
if(TRAINSCOPE_WITH_TORCH)
  target_sources(trainscope PRIVATE dist/context.cpp dist/rank_setup.cpp dist/summary.cpp dist/grad_sync.cpp dist/comm_timer.cpp dist/stop_vote.cpp
                                    dist/launch.cpp dist/stall.cpp)
  # c10d's headers compile their Gloo/NCCL parts only with these macros (torch's CMake config
  # does not define them): Gloo where its headers are installed (Debian: libgloo-dev), NCCL in
  # CUDA builds. Target-wide, so the precompiled torch header stays valid for every file.
  find_path(TRAINSCOPE_GLOO_INCLUDE gloo/algorithm.h)
  find_library(TRAINSCOPE_GLOO_LIBRARY gloo)
  if(TRAINSCOPE_GLOO_INCLUDE)
    target_compile_definitions(trainscope PRIVATE USE_C10D_GLOO)
    if(TRAINSCOPE_GLOO_LIBRARY)
      target_link_libraries(trainscope PUBLIC ${TRAINSCOPE_GLOO_LIBRARY})
    endif()
  endif()
  if(TRAINSCOPE_WITH_CUDA)
    target_compile_definitions(trainscope PRIVATE USE_C10D_NCCL)
  endif()
endif()
