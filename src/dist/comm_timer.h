// Communication time of a step's gradient all-reduces measured on the device (NCCL ranks),
// where the host never sees a collective end: CUDA events on the compute stream, read a ring of
// steps later so the host never waits for the device (docs/distributed.md#what-is-measured).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "train/device.h"

namespace trainscope {
namespace dist {

/// Per step, three marks of a PhaseClock on the stream that computes the step:
///   mark 0 when bucket 0's all-reduce is launched (during backward),
///   mark 1 when backward() has returned,
///   mark 2 after the stream was made to wait for every all-reduce (it may go on from there).
/// overlap = mark 0 -> mark 1 (communication in flight while backward still computed),
/// exposed = mark 1 -> mark 2 (the stream waited for communication), comm = overlap + exposed
/// (an upper bound: a collective that ended before backward did still counts until mark 1).
/// Units: milliseconds. Steps before `warmup_steps` are marked but not counted.
class CommTimer {
 public:
  /// `clock`: a PhaseClock of at least `slots` slots (make_phase_clock); slots >= 1.
  CommTimer(std::unique_ptr<PhaseClock> clock, int64_t slots, int64_t warmup_steps);
  /// At the start of global step `step` (before its backward): reads the ring slot the step
  /// will use if an older step still holds it (blocking only until that step's last mark).
  void begin_step(int64_t step);
  void bucket0_launched();  ///< may run on the autograd engine's thread
  void backward_ended();
  void comm_done();

  struct Means {
    double comm_ms = 0, overlap_ms = 0;
    int64_t steps = 0;  ///< counted steps
  };
  /// Reads every slot still pending and returns the means over the counted steps that have all
  /// three marks; nullopt when there are none.
  std::optional<Means> finish();

 private:
  void read(int64_t slot);

  std::unique_ptr<PhaseClock> clock_;
  int64_t slots_, warmup_;
  int64_t slot_ = -1;                      // the current step's slot
  std::vector<int64_t> step_of_;           // per slot: its step, -1 when free
  std::vector<unsigned> marks_;            // per slot: bit k set when mark k was recorded
  double comm_ms_ = 0, overlap_ms_ = 0;
  int64_t counted_ = 0;
};

}  // namespace dist
}  // namespace trainscope
