target_sources(trainscope PRIVATE
  workload/models.cpp
  workload/aoti_model.cpp
  workload/gpt.cpp
  workload/fused_lm_loss.cpp
  workload/gpt_decoder.cpp
  workload/gpt_decode_ops.cpp
  workload/gpt_slot_decoder.cpp
  workload/recompute_decoder.cpp
  workload/vit.cpp
  workload/model_check.cpp
  train/device.cpp
  # train_run: its loop (train/train_loop.h) in one file per idea
  train/trainer.cpp
  train/lm_task.cpp
  train/train_step.cpp
  train/graph_replay.cpp
  train/measurement.cpp
  train/run_figures.cpp
  train/evaluation.cpp
  train/grad_accum.cpp
  train/lr_schedule.cpp
  train/peak_rss.cpp
  train/batch_source.cpp
  train/optimizer.cpp
  train/min_time.cpp
  # execution variants (trainscope/variants.h)
  train/variant_exec.cpp
  train/step_sums.cpp)
# CUDA graphs (graph_step.h): the capture in CUDA builds, a stub that always falls back elsewhere.
if(TRAINSCOPE_WITH_CUDA)
  target_sources(trainscope PRIVATE train/device_cuda.cpp train/graph_step_cuda.cpp)
  # The fused step-sums kernel (step_sums_kernel.h): its own library, so that nvcc sees neither
  # the host flags nor the precompiled <torch/torch.h>.
  add_library(trainscope_cuda_kernels STATIC train/step_sums_kernel.cu)
  target_include_directories(trainscope_cuda_kernels PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  set_target_properties(trainscope_cuda_kernels PROPERTIES CUDA_STANDARD 17)
  if(TRAINSCOPE_CUDA_ARCHITECTURES)  # e.g. -DCMAKE_CUDA_ARCHITECTURES=90 (cmake/Dependencies.cmake)
    set_target_properties(trainscope_cuda_kernels PROPERTIES CUDA_ARCHITECTURES "${TRAINSCOPE_CUDA_ARCHITECTURES}")
  endif()
  target_link_libraries(trainscope PRIVATE trainscope_cuda_kernels)
else()
  target_sources(trainscope PRIVATE train/graph_step_stub.cpp)
endif()
