// Sorting more event records than memory may hold, for analyze_trace's bounded memory
// (include/trainscope/trace_analysis.h, AnalyzeOptions::memory_budget_bytes): an external merge
// sort (Knuth, TAOCP vol. 3, section 5.4.1). Records are buffered up to a cap; a full buffer is
// sorted and written to a temporary file as a run; reading merges the runs, at most kFanIn at a
// time (longer run lists are first merged into longer runs, appended to the same file). A sorter
// that never fills its buffer never touches the disk.
//
// Records held in memory by a sorter, at any moment: at most its cap while records are added,
// at most max(cap, kFanIn) + max(1, cap / kFanIn) while it is read; every sorter of an analysis
// counts them in one HeldCount.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <type_traits>
#include <vector>

namespace trainscope::trace {

/// Records held in memory at once by the sorters of one analysis (now, and the most so far).
struct HeldCount {
  int64_t now = 0, peak = 0;
  void add(int64_t n) {
    now += n;
    peak = std::max(peak, now);
  }
};

/// An unnamed temporary file in $TMPDIR (or /tmp): created with mkstemp and unlinked at once, so
/// the system removes it however the process ends. Throws Error(kIo) naming the folder and the
/// fix (free space there, or set TMPDIR) when it cannot be created, written or read.
class SpillFile {
 public:
  SpillFile();
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  /// Appends `bytes` and returns the offset they were written at.
  uint64_t append(const void* data, size_t bytes);
  void read(uint64_t offset, void* data, size_t bytes) const;

 private:
  [[noreturn]] void fail(const char* what) const;
  int fd_ = -1;
  std::string dir_;
  uint64_t size_ = 0;
};

/// Sorts records of trivially copyable type T by Less (a strict weak order; keys should be
/// unique, e.g. end in a sequence number, for a defined order of equal records: runs are merged
/// in the order they were written, so equal records keep the order they were added in).
template <class T, class Less>
class Sorter {
  static_assert(std::is_trivially_copyable_v<T>, "records are written to disk as bytes");

 public:
  static constexpr size_t kFanIn = 16;

  Sorter(size_t cap, HeldCount& held) : cap_(std::max<size_t>(cap, 1)), held_(&held) {}
  ~Sorter() { held_->add(-static_cast<int64_t>(buf_.size())); }
  Sorter(const Sorter&) = delete;
  Sorter& operator=(const Sorter&) = delete;

  void add(const T& r) {
    if (buf_.size() == buf_.capacity()) buf_.reserve(std::min(cap_, std::max<size_t>(64, 2 * buf_.size())));
    buf_.push_back(r);
    held_->add(1);
    ++count_;
    if (buf_.size() >= cap_) spill();
  }
  uint64_t size() const { return count_; }

  /// Reads the records in order; a reader per pass, so a sorter can be read again. The first
  /// reader ends the adding.
  class Reader;
  Reader read();

 private:
  struct Run {
    uint64_t offset = 0, count = 0;
  };
  void spill() {
    std::stable_sort(buf_.begin(), buf_.end(), Less{});
    if (!file_) file_ = std::make_unique<SpillFile>();
    runs_.push_back(Run{file_->append(buf_.data(), buf_.size() * sizeof(T)), buf_.size()});
    held_->add(-static_cast<int64_t>(buf_.size()));
    std::vector<T>().swap(buf_);
  }
  void finish();
  Run merge(const std::vector<Run>& runs);
  size_t run_buffer() const { return std::max<size_t>(1, cap_ / kFanIn); }

  size_t cap_;
  HeldCount* held_;
  uint64_t count_ = 0;
  bool finished_ = false;
  std::vector<T> buf_;  // records not yet in a run; all of them when nothing was spilled
  std::vector<Run> runs_;
  std::unique_ptr<SpillFile> file_;
};

template <class T, class Less>
class Sorter<T, Less>::Reader {
 public:
  /// Reads the in-memory buffer (runs empty) or merges `runs` of `file`.
  Reader(const std::vector<T>& mem, const std::vector<Run>& runs, const SpillFile* file, size_t run_buffer,
         HeldCount& held)
      : mem_(&mem), file_(file), held_(&held) {
    for (const Run& r : runs) cursors_.push_back(Cursor{r.offset, r.count, {}, 0});
    for (size_t i = 0; i < cursors_.size(); ++i) {
      refill(i, run_buffer);
      push(i);
    }
  }
  ~Reader() {
    for (const Cursor& c : cursors_) held_->add(-static_cast<int64_t>(c.buf.size()));
  }
  Reader(Reader&& o) = default;
  Reader(const Reader&) = delete;

  /// The next record in order into `out`; false at the end.
  bool next(T& out) {
    if (cursors_.empty()) {
      if (pos_ >= mem_->size()) return false;
      out = (*mem_)[pos_++];
      return true;
    }
    if (heap_.empty()) return false;
    const size_t i = heap_.top().second;
    out = heap_.top().first;
    heap_.pop();
    if (++cursors_[i].pos == cursors_[i].buf.size()) refill(i, cursors_[i].buf.size());
    push(i);
    return true;
  }

 private:
  struct Cursor {
    uint64_t offset, left;
    std::vector<T> buf;
    size_t pos;
  };
  // The heap's order: the smallest record on top, ties to the earlier run.
  struct After {
    bool operator()(const std::pair<T, size_t>& a, const std::pair<T, size_t>& b) const {
      if (Less{}(b.first, a.first)) return true;
      return !Less{}(a.first, b.first) && b.second < a.second;
    }
  };
  void refill(size_t i, size_t n) {
    Cursor& c = cursors_[i];
    held_->add(-static_cast<int64_t>(c.buf.size()));
    c.buf.resize(static_cast<size_t>(std::min<uint64_t>(n, c.left)));
    file_->read(c.offset, c.buf.data(), c.buf.size() * sizeof(T));
    held_->add(static_cast<int64_t>(c.buf.size()));
    c.offset += c.buf.size() * sizeof(T), c.left -= c.buf.size(), c.pos = 0;
  }
  void push(size_t i) {
    if (cursors_[i].pos < cursors_[i].buf.size()) heap_.emplace(cursors_[i].buf[cursors_[i].pos], i);
  }

  const std::vector<T>* mem_;
  size_t pos_ = 0;
  const SpillFile* file_;
  HeldCount* held_;
  std::vector<Cursor> cursors_;
  std::priority_queue<std::pair<T, size_t>, std::vector<std::pair<T, size_t>>, After> heap_;
};

// Sorts what was never spilled; else spills the rest and merges runs in passes, each run of a
// pass made of kFanIn consecutive runs of the one before (so equal records keep their order),
// until at most kFanIn are left.
template <class T, class Less>
void Sorter<T, Less>::finish() {
  finished_ = true;
  if (runs_.empty()) {
    std::stable_sort(buf_.begin(), buf_.end(), Less{});
    return;
  }
  if (!buf_.empty()) spill();
  while (runs_.size() > kFanIn) {
    std::vector<Run> longer;
    for (size_t i = 0; i < runs_.size(); i += kFanIn)
      longer.push_back(merge(std::vector<Run>(runs_.begin() + i, runs_.begin() + std::min(i + kFanIn, runs_.size()))));
    runs_ = std::move(longer);
  }
}

// Merges `runs` into one run appended to the file, through a buffer of run_buffer() records.
template <class T, class Less>
typename Sorter<T, Less>::Run Sorter<T, Less>::merge(const std::vector<Run>& runs) {
  const std::vector<T> none;
  Reader in(none, runs, file_.get(), run_buffer(), *held_);
  Run merged;
  std::vector<T> out;
  auto flush = [&] {
    const uint64_t at = file_->append(out.data(), out.size() * sizeof(T));
    if (merged.count == 0) merged.offset = at;
    merged.count += out.size();
    held_->add(-static_cast<int64_t>(out.size()));
    out.clear();
  };
  for (T r{}; in.next(r);) {
    out.push_back(r);
    held_->add(1);
    if (out.size() >= run_buffer()) flush();
  }
  if (!out.empty()) flush();
  return merged;
}

template <class T, class Less>
typename Sorter<T, Less>::Reader Sorter<T, Less>::read() {
  if (!finished_) finish();
  return Reader(buf_, runs_, file_.get(), run_buffer(), *held_);
}

}  // namespace trainscope::trace
