// Data sets: readers for IDX (MNIST family), CIFAR-10 binary, image folders and a seeded
// synthetic set. A set is decoded once and kept in memory as normalised float32 NCHW, so batch
// assembly is one gather per batch (no per-sample allocation), except the training set of an
// image folder too large to decode into memory (stream_folder below): that one is streamed,
// decoded by worker threads batch by batch (trainscope/input_pipeline.h).
//
// Errors: a missing/unreadable file throws Error(kIo); a corrupt, truncated or inconsistent
// file throws Error(kDataFormat) naming the file, the byte offset and the problem. Declared
// sizes are checked against the file size before anything is allocated.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainscope/config.h"
#include "trainscope/input_pipeline.h"

namespace trainscope {

/// Raw decoded images: uint8 pixels, layout N x C x H x W (row-major), labels in [0, classes).
struct RawImages {
  int64_t count = 0, channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;   // count*channels*height*width bytes
  std::vector<int64_t> labels;   // count entries
  int64_t sample_bytes() const { return channels * height * width; }
};

/// A normalised in-memory data set: float32 N x C x H x W, (x/255 - mean_c) / std_c.
/// A language-model set (is_tokens()) holds a token stream instead of images: channels = height
/// = 1, width = the sequence length T, num_classes = the vocabulary, count = the windows of T
/// tokens; window i is tokens[i*T, i*T+T) and its targets (the next tokens) tokens[i*T+1,
/// i*T+T+1), so tokens holds count*T + 1 ids (docs/language-models.md#data).
struct Dataset {
  std::string name;              // e.g. "fashion-mnist train"
  int64_t count = 0, channels = 0, height = 0, width = 0;
  int64_t num_classes = 0;
  std::vector<float> images;     // count*channels*height*width
  std::vector<int64_t> labels;   // count
  std::vector<std::string> class_names;  // may be empty (IDX, synthetic)
  std::vector<int64_t> tokens;   // language-model sets: count*width + 1 token ids in [0, num_classes)
  int64_t sample_numel() const { return channels * height * width; }
  bool is_tokens() const { return !tokens.empty(); }
};

/// How a training set is streamed from an image folder instead of decoded into memory
/// (data.cache_data; docs/input-pipeline.md). The training Dataset then holds all labels but
/// only the first `preview` decoded images (for model checks and statistics).
struct StreamPlan {
  std::string root;                  // the folder the files were indexed from
  std::vector<ImageFile> files;      // the training images, in sample-index order
  TransformSpec transform;           // the training transform (normalised with DatasetPair::mean/std)
  int64_t workers = 0;               // data.data_workers as set (0 = resolve from the cores)
  int64_t prefetch_batches = 0;      // 0 = default_prefetch_batches (src/data/stream_defaults.h)
  bool skip_bad_images = false;
  std::string cache_reason;          // why the set is streamed
  int64_t decoded_bytes = 0;         // float32 train + test sets, had they been decoded into memory
  int64_t budget_bytes = 0;          // data.cache_budget_gib in bytes
  int64_t preview = 0;               // decoded training images kept in memory
};

struct DatasetPair {
  Dataset train, test;
  std::shared_ptr<const StreamPlan> stream;  // set: the training set is streamed (see StreamPlan)
  std::string cache_reason;                  // folder: why the set is (not) streamed
  std::string format;            // "idx", "cifar10", "folder", "synthetic", "text", "tokens"
  std::string task = "classification";  // or "causal_lm" (text, tokens): trainscope/task.h
  std::string tokenizer;         // language models: "bytes" (text) or "uint16 token ids" (tokens)
  int64_t files = 0;             // language models: files read (train + validation)
  std::string source;            // folder or description
  /// What the user should know about how the files were read, one sentence each (the matrix
  /// prints them as notes): e.g. which of a raw and a .gz IDX file was read.
  std::vector<std::string> notes;
  std::vector<float> mean, std;  // per channel, computed on the training set (in [0,1] pixel units)
};

// --- parsers on memory buffers (fuzzable; `name` is used in error messages) ---

/// IDX images (magic 0x00000803, big-endian counts: N, rows, cols). LeCun et al.,
/// "THE MNIST DATABASE" file format description.
RawImages parse_idx_images(std::span<const uint8_t> bytes, const std::string& name);
/// IDX labels (magic 0x00000801, big-endian count N). Labels must be < max_classes.
std::vector<int64_t> parse_idx_labels(std::span<const uint8_t> bytes, const std::string& name,
                                      int64_t max_classes = 256);
/// CIFAR-10 binary batch: records of 1 label byte + 3072 pixel bytes (3x32x32, R then G then B
/// planes), Krizhevsky 2009 "Learning Multiple Layers of Features from Tiny Images", binary
/// version. Labels must be < 10.
RawImages parse_cifar10_batch(std::span<const uint8_t> bytes, const std::string& name);
/// Decodes one PNG/JPEG/BMP image (decode_pixels, trainscope/input_pipeline.h) and resizes the
/// whole image to size x size (bilinear) with `channels`, C x H x W.
/// Throws Error(kDataFormat) naming `name` when it cannot be decoded.
std::vector<uint8_t> decode_image(std::span<const uint8_t> bytes, const std::string& name, int64_t size,
                                  int64_t channels);

// --- loaders ---

RawImages read_idx(const std::string& images_path, const std::string& labels_path);
/// Number of classes K of an IDX train/test pair: K = largest training label + 1, and the
/// labels must be the classes 0..K-1 with every class present in the training labels (a stray
/// value such as 200 among 0..9 would otherwise add 190 empty classes); test labels must be
/// < K. Throws Error(kDataFormat) naming the labels file and the byte offset (8-byte header +
/// sample index; of the decompressed file for .gz) of the first offending label: the first
/// training label beyond a class that never occurs, or the first test label >= K.
int64_t idx_classes(const std::vector<int64_t>& train_labels, const std::string& train_name,
                    const std::vector<int64_t>& test_labels, const std::string& test_name);
/// Image folder: <root>/<class>/<file> (classes sorted by name). Files that are not images
/// (by extension .png .jpg .jpeg .bmp) are skipped; an image that fails to decode is an error.
RawImages read_image_folder(const std::string& root, int64_t size, int64_t channels,
                            std::vector<std::string>* class_names);
/// Seeded synthetic images whose class is recoverable from the pixels (a class-dependent
/// pattern plus noise), so a model can learn it: used for tests and smoke runs.
RawImages make_synthetic(int64_t count, int64_t channels, int64_t size, int64_t classes, uint64_t seed);

/// Streaming decision for an image folder of `images` images (train + test) decoded to
/// channels x size x size float32: returns true to stream, with the reason (data.cache_data,
/// data.cache_budget_gib). Throws Error(kInvalidArgument) for an unknown cache_data value.
bool stream_folder(const DataConfig& cfg, int64_t images, int64_t* decoded_bytes, std::string* reason);

/// An image folder with a streamed training set (stream_folder said so): indexes the files,
/// splits like read_image_folder's caller, decodes the test set into memory (eval transform: resize
/// the shorter side, centre crop) and a preview of the training set, and computes the
/// normalisation from that preview (up to 256 images).
DatasetPair load_streamed_folder(const DataConfig& cfg, uint64_t seed);

/// The default number of decode workers: the cores left after the trainer's intra-op threads,
/// at least 1; *reason says how it was chosen.
int64_t default_data_workers(int64_t cores, int64_t intra_op_threads, std::string* reason);

// --- language-model data (docs/language-models.md#data) ---

/// nanoGPT's token file (train.bin / val.bin written by its prepare.py): little-endian uint16
/// token ids, no header. Throws Error(kDataFormat) naming `name` for an empty file or an odd
/// byte count (the offset of the stray last byte).
std::vector<int64_t> parse_token_bin(std::span<const uint8_t> bytes, const std::string& name);

/// Throws Error(kDataFormat) naming `name` and the byte offset of the first byte that is not
/// part of a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
void check_utf8(std::span<const uint8_t> bytes, const std::string& name);

/// A text corpus split for training: bytes are the tokens (vocabulary 256).
struct TextSplit {
  std::vector<uint8_t> train, test;
  int64_t files = 0, test_files = 0;  // test_files 0: one file split by a contiguous range
};

/// Reads `path`, one UTF-8 text file or a folder of them (every regular file below it, in
/// sorted path order; empty files skipped). A folder of at least 2 files is split by whole files:
/// a seeded shuffle of the files, the first ones held out until they reach test_fraction of the
/// bytes. One file is split by one contiguous range of test_fraction of its bytes at a seeded
/// position. Never by interleaved bytes. Throws Error(kIo) for a missing path, Error(kDataFormat)
/// for a file that is not UTF-8 or a corpus without text.
TextSplit read_text_corpus(const std::string& path, double test_fraction, uint64_t seed);

/// A language-model data set from token streams: windows of seq_len (see Dataset). Throws
/// Error(kDataFormat) naming `what` when a stream holds fewer than seq_len + 1 tokens, with the fix.
Dataset make_token_dataset(std::vector<int64_t> stream, int64_t seq_len, int64_t vocab, const std::string& name,
                           const std::string& what);

/// True for the language-model data formats (text, tokens).
bool is_lm_data_format(const std::string& format);

/// Loads a language-model data set (format text or tokens): text from data.path (the
/// default data.path stands for Debian's python3-doc corpus), split by read_text_corpus with
/// data.test_fraction; tokens from data.path/train.bin and val.bin. Windows of data.seq_len,
/// limit_train / limit_test in windows. Throws as the readers above, and Error(kDataFormat) when a
/// token id is not below data.vocab_size.
DatasetPair load_lm_datasets(const DataConfig& cfg, uint64_t seed);

/// Loads train and test sets as configured and normalises both with the training set's
/// per-channel mean and standard deviation. Throws Error(kIo/kDataFormat/kInvalidArgument).
DatasetPair load_datasets(const DataConfig& cfg, uint64_t seed);

/// Normalisation used by load_datasets (exposed for tests and inference).
Dataset normalise(const RawImages& raw, const std::vector<float>& mean, const std::vector<float>& std,
                  const std::string& name, int64_t num_classes);
void channel_stats(const RawImages& raw, std::vector<float>& mean, std::vector<float>& std);

}  // namespace trainscope
