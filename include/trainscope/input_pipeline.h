// The streaming input pipeline (docs/input-pipeline.md): image-folder indexing, decoding
// (JPEG through libjpeg-turbo, PNG/BMP through stb_image), seeded training transforms and a
// pool of worker threads that assembles batches ahead of the trainer through a bounded queue.
//
// Shapes and units: images are decoded to uint8 H x W x C (row-major, C = 1 grey or 3 RGB);
// transformed samples are float32 C x size x size, normalised as (x/255 - mean_c) / std_c with
// mean/std in [0,1] pixel units (the same convention as trainscope/dataset.h). Times are
// seconds of the host steady clock; CPU times come from CLOCK_THREAD_CPUTIME_ID (clock_gettime(2)).
//
// Errors: an image that cannot be read or decoded throws Error(kDataFormat) (kIo for a file
// that cannot be opened) naming the file; ImageStream::next() rethrows a worker's failure
// naming the file and the --on-bad-image flag. Nothing here needs LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace trainscope {

/// A decoded image: uint8 pixels, height x width x channels, row-major.
struct DecodedImage {
  int64_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

/// The fix an in-memory decode's error message ends with ("; " + this): only a streamed training
/// set can skip bad images. The stream replaces it with its own (docs/input-pipeline.md).
inline constexpr const char* kBadImageFix =
    "replace or remove the file, or stream the training set and skip bad images (--cache-data off "
    "--on-bad-image skip; the test set is always decoded in memory)";

/// Decodes a JPEG (libjpeg-turbo; files starting FF D8 FF) or PNG/BMP (stb_image) image to
/// `channels` (1 or 3) channels. JPEG only: when min_side > 0 the image is decoded at the
/// smallest DCT scale (1/8, 1/4, 1/2 or 1) whose shorter side is still >= min_side, as PIL's
/// draft mode does; the result is then smaller than the file's dimensions. Refuses images over
/// 8192 x 8192 pixels and truncated JPEGs. Throws Error(kDataFormat) naming `name`.
/// Whether JPEG goes through libjpeg-turbo (CMake found it; cmake/Dependencies.cmake) rather than stb_image.
bool jpeg_through_libjpeg();

DecodedImage decode_pixels(std::span<const uint8_t> bytes, const std::string& name, int64_t channels,
                           int64_t min_side = 0);

/// Which transform a sample gets (docs/input-pipeline.md#transforms).
enum class Augment {
  kRandomResizedCrop,  // training: crop of 8-100 % of the area, aspect 3/4..4/3 (torchvision's
                       // RandomResizedCrop defaults), resized to size x size, then a random flip
  kPadCrop,            // training: resize to size x size, pad 4 px with black, random size x size crop, flip
  kNone,               // resize the whole image to size x size (the in-memory path's transform)
  kEval,               // test set: resize the shorter side to size, centre crop size x size
};
Augment augment_from_string(const std::string& s);  // "random-resized-crop" | "pad-crop" | "none"; throws kInvalidArgument
std::string to_string(Augment a);

struct TransformSpec {
  int64_t size = 32, channels = 3;
  Augment augment = Augment::kNone;
  std::vector<float> mean, std;  // per channel, [0,1] pixel units; empty = 0 and 1
};

/// The seed of one sample's transform: a SplitMix64 mix (Steele et al. 2014) of the run seed,
/// the epoch and the sample's index in the data set, so a sample's crop and flip do not depend on
/// which worker handled it or when.
uint64_t sample_seed(uint64_t run_seed, int64_t epoch, int64_t index);

/// Applies `spec` to a decoded image, writing channels x size x size floats to `out`.
/// Bilinear sampling (pixel centres aligned, no antialiasing); pixels outside the image are black.
void transform_sample(const DecodedImage& img, const TransformSpec& spec, uint64_t seed, float* out);

/// One image of a folder data set: path, class index, and the size/mtime seen when indexed
/// (used to detect a folder that changes during an epoch).
struct ImageFile {
  std::string path;
  int64_t label = 0;
  int64_t size_bytes = 0;
  int64_t mtime_ns = 0;
};

/// Lists <root>/<class>/<image> (classes sorted by name, files sorted by path; extensions .png
/// .jpg .jpeg .bmp, case-insensitive) without decoding anything. Throws Error(kIo) when root is
/// not a folder and Error(kDataFormat) when it holds no class folders or no images.
std::vector<ImageFile> index_image_folder(const std::string& root, std::vector<std::string>* class_names);

/// Reads and decodes one indexed image and applies `spec` (seeded with `seed`), writing
/// channels x size x size floats to `out`. Sets *changed when the file's size or mtime differ
/// from the index. Throws Error(kIo/kDataFormat) naming the path.
void load_sample(const ImageFile& f, const TransformSpec& spec, uint64_t seed, float* out, bool* changed = nullptr);

/// Where a worker writes one batch: x holds batch_size x C x size x size floats, y batch_size labels.
struct BatchSlot {
  float* x = nullptr;
  int64_t* y = nullptr;
};

struct StreamOptions {
  int64_t workers = 1;           // decoding threads
  int64_t prefetch_batches = 4;  // the queue's bound: finished plus building batches
  int64_t hold_batches = 1;      // batches the trainer may still be reading (released at later next() calls)
  int64_t batch_size = 64;
  bool skip_bad_images = false;  // --on-bad-image skip: leave a bad image out of its batch and count it
  TransformSpec transform;
  uint64_t seed = 0;
};

/// What a stream measured since it was made. Per worker: busy_s (wall time spent reading,
/// decoding and transforming), cpu_s (thread CPU time), images. Queue depth: finished batches
/// waiting, sampled at every next() call (depth_t_s: seconds since the stream started).
struct StreamStats {
  int64_t workers = 0, prefetch_batches = 0;
  std::vector<double> worker_busy_s, worker_cpu_s;
  std::vector<int64_t> worker_images;
  int64_t images = 0, bad_images = 0, changed_files = 0, batches = 0;
  int64_t max_depth = 0;             // the most finished batches ever waiting (<= prefetch_batches)
  std::vector<std::string> problems; // "path: what" for bad and changed files (first 20)
  std::vector<double> depth_t_s;
  std::vector<int64_t> depth;
  double wait_s = 0;                 // the consumer's total time blocked in next()
  double wall_s = 0;                 // since the stream was made
};

/// A finished batch: the slot it is in and the number of samples (fewer than planned when
/// images were skipped).
struct StreamBatch {
  int slot = 0;
  int64_t count = 0;
};

/// A pool of workers that turns an epoch's sample order into batches. Batch j holds the samples
/// order[j*B .. (j+1)*B) (B = batch_size) in that order and is delivered by the j-th next() call
/// of the epoch, whatever the number of workers; workers fill batches in chunks of samples
/// (src/data/stream_defaults.h). Requires slots.size() >= prefetch_batches + hold_batches.
class ImageStream {
 public:
  ImageStream(std::vector<ImageFile> files, StreamOptions opt, std::vector<BatchSlot> slots);
  ~ImageStream();  // stops and joins the workers
  ImageStream(const ImageStream&) = delete;
  ImageStream& operator=(const ImageStream&) = delete;
  /// Starts an epoch (indices into the files); what is outstanding from the previous one is dropped.
  void begin_epoch(int64_t epoch, std::vector<int64_t> order);
  /// The epoch's next batch (blocks). Releases the slot handed out hold_batches calls ago.
  /// Throws Error(kDataFormat) naming the bad image and --on-bad-image when a worker failed,
  /// and Error(kInvalidArgument) past the epoch's last batch.
  StreamBatch next();
  StreamStats stats() const;
  /// Lists the folder again and says how it differs from the index ("" when it does not).
  std::string folder_changes(const std::string& root) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope
