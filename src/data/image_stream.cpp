// The worker pool of the streaming input pipeline (trainscope/input_pipeline.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "data/file_stat.h"
#include "data/stream_defaults.h"
#include "trainscope/error.h"
#include "trainscope/input_pipeline.h"

namespace trainscope {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxImageBytes = int64_t{256} << 20;
constexpr size_t kMaxProblems = 20;
constexpr size_t kMaxDepthSamples = 4096;

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The file's bytes; *changed when its size or mtime differ from the index.
std::vector<uint8_t> read_indexed(const ImageFile& f, bool* changed) {
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_error(ErrorKind::kIo, fmt::format("{}: cannot open: {}", f.path, std::strerror(errno)));
  struct stat st {};
  std::vector<uint8_t> bytes;
  std::string err;
  if (::fstat(fd, &st) != 0) err = std::strerror(errno);
  else if (st.st_size > kMaxImageBytes) err = fmt::format("{} bytes, more than the 256 MiB an image may have", st.st_size);
  else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? std::strerror(errno) : "the file ended early";
        break;
      }
      got += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  if (!err.empty()) throw_error(ErrorKind::kIo, fmt::format("{}: cannot read: {}", f.path, err));
  if (changed) *changed = st.st_size != f.size_bytes || mtime_ns(st) != f.mtime_ns;
  return bytes;
}

}  // namespace

void load_sample(const ImageFile& f, const TransformSpec& spec, uint64_t seed, float* out, bool* changed) {
  const auto bytes = read_indexed(f, changed);
  // DCT scaling keeps the shorter side >= size: enough pixels for every transform's output.
  const auto img = decode_pixels(bytes, f.path, spec.channels, spec.size);
  transform_sample(img, spec, seed, out);
}

// ------------------------------------------------------------------------------ the pool

struct ImageStream::Impl {
  struct Ready {
    int slot = 0;
    int64_t count = 0;
    std::string error;
  };
  // A batch being filled: its samples order[first, first + size) are handed out in chunks of
  // kStreamChunk; the worker that finishes the last chunk closes it (compacts, queues it).
  struct Building {
    uint64_t gen = 0;
    int64_t j = 0, first = 0, size = 0, handed = 0, chunks_left = 0;
    int slot = 0;
    std::vector<char> ok;  // per sample: decoded (written by the chunk's worker only)
    std::string error;     // the first failure under the fail policy
  };
  struct Chunk {
    Building* b = nullptr;
    int64_t begin = 0, end = 0, epoch = 0;  // positions in the batch
    std::vector<int64_t> idx;               // the samples' indices
  };
  std::vector<ImageFile> files;
  StreamOptions opt;
  std::vector<BatchSlot> slots;
  int64_t sample_numel = 0;
  Clock::time_point start = Clock::now();

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  uint64_t generation = 0;
  int64_t epoch = 0;
  std::vector<int64_t> order;
  int64_t num_batches = 0, next_batch = 0, next_take = 0, building_now = 0;
  std::list<Building> building;   // stable addresses; entries of abandoned epochs finish and go
  Building* open = nullptr;       // the batch whose chunks are being handed out
  std::vector<int> free_slots;
  std::map<int64_t, Ready> ready;
  std::deque<int> held;
  StreamStats st;
  std::vector<std::thread> threads;

  void worker(size_t w);
  bool can_claim() const;
  bool claim(Chunk& c);
  void fill(size_t w, Chunk& c);
  void finish(Chunk& c);
  void problem(std::string what);
};

void ImageStream::Impl::problem(std::string what) {
  std::lock_guard lk(mu);
  if (st.problems.size() < kMaxProblems) st.problems.push_back(std::move(what));
}

// A chunk of the open batch is left, or a new batch may start: a free slot and fewer than
// prefetch_batches finished plus building batches (the queue's bound).
bool ImageStream::Impl::can_claim() const {
  if (open) return true;
  return next_batch < num_batches && !free_slots.empty() &&
         static_cast<int64_t>(ready.size()) + building_now < opt.prefetch_batches;
}

// Waits for work; false when stopping. Copies the chunk's sample indices out under the lock.
bool ImageStream::Impl::claim(Chunk& c) {
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return stop || can_claim(); });
  if (stop) return false;
  if (!open) {
    const int64_t j = next_batch++, B = opt.batch_size, n = static_cast<int64_t>(order.size());
    Building& b = building.emplace_back();
    b.gen = generation;
    b.j = j;
    b.first = j * B;
    b.size = std::min(B, n - j * B);
    b.chunks_left = (b.size + kStreamChunk - 1) / kStreamChunk;
    b.slot = free_slots.back();
    free_slots.pop_back();
    b.ok.assign(static_cast<size_t>(b.size), 0);
    ++building_now;
    open = &b;
  }
  c.b = open;
  c.epoch = epoch;
  c.begin = open->handed;
  c.end = std::min(open->size, c.begin + kStreamChunk);
  open->handed = c.end;
  c.idx.assign(order.begin() + open->first + c.begin, order.begin() + open->first + c.end);
  if (open->handed == open->size) open = nullptr;
  return true;
}

// Decodes the chunk's samples into their places in the batch slot.
void ImageStream::Impl::fill(size_t w, Chunk& c) {
  const BatchSlot& out = slots[static_cast<size_t>(c.b->slot)];
  int64_t done = 0, bad = 0, changed_n = 0;
  std::string error;
  for (int64_t k = c.begin; k < c.end; ++k) {
    const int64_t i = c.idx[static_cast<size_t>(k - c.begin)];
    const ImageFile& f = files[static_cast<size_t>(i)];
    bool changed = false;
    try {
      load_sample(f, opt.transform, sample_seed(opt.seed, c.epoch, i), out.x + k * sample_numel, &changed);
      out.y[k] = f.label;
      c.b->ok[static_cast<size_t>(k)] = 1;
      ++done;
    } catch (const std::exception& e) {
      ++bad;
      problem(e.what());
      if (!opt.skip_bad_images) {
        error = e.what();
        break;
      }
    }
    if (changed) {
      ++changed_n;
      problem(fmt::format("{}: changed since the folder was indexed (size or modification time differ)", f.path));
    }
  }
  std::lock_guard lk(mu);
  st.worker_images[w] += done;
  st.images += done;
  st.bad_images += bad;
  st.changed_files += changed_n;
  if (!error.empty() && c.b->error.empty()) c.b->error = std::move(error);
}

// Counts the chunk done; the last one compacts the batch (skipped samples leave no gaps) and
// queues it, or frees its slot when its epoch was abandoned.
void ImageStream::Impl::finish(Chunk& c) {
  Building* b = c.b;
  {
    std::lock_guard lk(mu);
    if (--b->chunks_left > 0) return;
  }
  const BatchSlot& out = slots[static_cast<size_t>(b->slot)];
  int64_t count = 0;
  for (int64_t k = 0; k < b->size; ++k) {
    if (!b->ok[static_cast<size_t>(k)]) continue;
    if (count != k) {
      std::copy_n(out.x + k * sample_numel, sample_numel, out.x + count * sample_numel);
      out.y[count] = out.y[k];
    }
    ++count;
  }
  std::lock_guard lk(mu);
  if (b->gen != generation) free_slots.push_back(b->slot);
  else {
    ready[b->j] = {b->slot, count, std::move(b->error)};
    --building_now;
    st.max_depth = std::max<int64_t>(st.max_depth, static_cast<int64_t>(ready.size()));
  }
  building.remove_if([b](const Building& x) { return &x == b; });
  cv.notify_all();
}

void ImageStream::Impl::worker(size_t w) {
  Chunk c;
  for (;;) {
    if (!claim(c)) return;
    const auto t0 = Clock::now();
    try {
      fill(w, c);
    } catch (const std::exception& e) {  // never die silently: the trainer gets it with the batch
      std::lock_guard lk(mu);
      if (c.b->error.empty()) c.b->error = fmt::format("input worker {} failed: {}", w, e.what());
    } catch (...) {
      std::lock_guard lk(mu);
      if (c.b->error.empty()) c.b->error = fmt::format("input worker {} failed with an unknown exception", w);
    }
    {
      std::lock_guard lk(mu);
      st.worker_busy_s[w] += std::chrono::duration<double>(Clock::now() - t0).count();
      st.worker_cpu_s[w] = thread_cpu_s();
    }
    finish(c);
  }
}

ImageStream::ImageStream(std::vector<ImageFile> files, StreamOptions opt, std::vector<BatchSlot> slots)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  if (opt.workers < 1 || opt.prefetch_batches < 1 || opt.hold_batches < 1 || opt.batch_size < 1)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("ImageStream: workers ({}), prefetch ({}), hold ({}) and batch size ({}) must be >= 1",
                            opt.workers, opt.prefetch_batches, opt.hold_batches, opt.batch_size));
  if (static_cast<int64_t>(slots.size()) < opt.prefetch_batches + opt.hold_batches)
    throw_error(ErrorKind::kInvalidArgument, fmt::format("ImageStream: {} batch slots for a prefetch of {} + hold of {}",
                                                         slots.size(), opt.prefetch_batches, opt.hold_batches));
  m.files = std::move(files);
  m.opt = std::move(opt);
  m.slots = std::move(slots);
  m.sample_numel = m.opt.transform.channels * m.opt.transform.size * m.opt.transform.size;
  for (int k = static_cast<int>(m.slots.size()) - 1; k >= 0; --k) m.free_slots.push_back(k);
  const auto W = static_cast<size_t>(m.opt.workers);
  m.st.workers = m.opt.workers;
  m.st.prefetch_batches = m.opt.prefetch_batches;
  m.st.worker_busy_s.assign(W, 0.0);
  m.st.worker_cpu_s.assign(W, 0.0);
  m.st.worker_images.assign(W, 0);
  for (size_t w = 0; w < W; ++w) m.threads.emplace_back([this, w] { impl_->worker(w); });
}

ImageStream::~ImageStream() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  for (auto& t : impl_->threads) t.join();
}

void ImageStream::begin_epoch(int64_t epoch, std::vector<int64_t> order) {
  auto& m = *impl_;
  for (int64_t i : order)
    if (i < 0 || i >= static_cast<int64_t>(m.files.size()))
      throw_error(ErrorKind::kInvalidArgument,
                  fmt::format("ImageStream: sample index {} outside the {} files", i, m.files.size()));
  std::lock_guard lk(m.mu);
  ++m.generation;
  for (auto& [j, r] : m.ready) m.free_slots.push_back(r.slot);
  m.ready.clear();
  if (Impl::Building* b = m.open) {  // its chunks not handed out yet never will be
    b->chunks_left -= (b->size - b->handed + kStreamChunk - 1) / kStreamChunk;
    m.open = nullptr;
    if (b->chunks_left == 0) {  // no chunk of it in flight either
      m.free_slots.push_back(b->slot);
      m.building.remove_if([b](const Impl::Building& x) { return &x == b; });
    }
  }
  m.building_now = 0;  // batches still building belong to the old generation
  m.epoch = epoch;
  m.order = std::move(order);
  m.num_batches = (static_cast<int64_t>(m.order.size()) + m.opt.batch_size - 1) / m.opt.batch_size;
  m.next_batch = m.next_take = 0;
  m.cv.notify_all();
}

StreamBatch ImageStream::next() {
  auto& m = *impl_;
  std::unique_lock lk(m.mu);
  if (m.next_take >= m.num_batches)
    throw_error(ErrorKind::kInvalidArgument,
                fmt::format("ImageStream: batch {} asked for, but the epoch has {}", m.next_take, m.num_batches));
  if (static_cast<int64_t>(m.held.size()) >= m.opt.hold_batches) {
    m.free_slots.push_back(m.held.front());
    m.held.pop_front();
    m.cv.notify_all();
  }
  const auto t0 = Clock::now();
  if (m.st.depth.size() < kMaxDepthSamples) {
    m.st.depth_t_s.push_back(std::chrono::duration<double>(t0 - m.start).count());
    m.st.depth.push_back(static_cast<int64_t>(m.ready.size()));
  }
  m.cv.wait(lk, [&] { return m.ready.count(m.next_take) > 0; });
  m.st.wait_s += std::chrono::duration<double>(Clock::now() - t0).count();
  Impl::Ready r = std::move(m.ready[m.next_take]);
  m.ready.erase(m.next_take++);
  ++m.st.batches;
  m.cv.notify_all();
  if (!r.error.empty()) {
    m.free_slots.push_back(r.slot);
    std::string why = r.error;  // the decoder's message ends with the in-memory fix: this one replaces it
    if (auto at = why.rfind(std::string("; ") + kBadImageFix); at != std::string::npos) why.resize(at);
    throw_error(ErrorKind::kDataFormat,
                fmt::format("{} (streaming epoch {}); fix or remove the file, or pass --on-bad-image skip to leave bad "
                            "images out and count them",
                            why, m.epoch));
  }
  m.held.push_back(r.slot);
  return {r.slot, r.count};
}

StreamStats ImageStream::stats() const {
  std::lock_guard lk(impl_->mu);
  StreamStats s = impl_->st;
  s.wall_s = std::chrono::duration<double>(Clock::now() - impl_->start).count();
  return s;
}

std::string ImageStream::folder_changes(const std::string& root) const {
  std::vector<ImageFile> now;
  try {
    now = index_image_folder(root, nullptr);
  } catch (const std::exception& e) {
    return fmt::format("the folder can no longer be listed: {}", e.what());
  }
  std::map<std::string, const ImageFile*> before;
  for (const auto& f : impl_->files) before[f.path] = &f;
  int64_t added = 0, modified = 0;
  for (const auto& f : now) {
    auto it = before.find(f.path);
    if (it == before.end()) ++added;
    else if (it->second->size_bytes != f.size_bytes || it->second->mtime_ns != f.mtime_ns) ++modified;
  }
  const int64_t removed = static_cast<int64_t>(before.size()) - (static_cast<int64_t>(now.size()) - added);
  if (added == 0 && removed == 0 && modified == 0) return "";
  return fmt::format("image folder '{}' changed since it was indexed: {} file(s) added, {} removed, {} modified "
                     "({} indexed, {} now); the run keeps the files it indexed",
                     root, added, removed, modified, before.size(), now.size());
}

}  // namespace trainscope
