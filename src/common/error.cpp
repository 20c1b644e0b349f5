#include "trainscope/error.h"

namespace trainscope {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid_argument";
    case ErrorKind::kInvalidConfig: return "invalid_config";
    case ErrorKind::kDataFormat: return "data_format";
    case ErrorKind::kIo: return "io";
    case ErrorKind::kDevice: return "device";
    case ErrorKind::kModel: return "model";
    case ErrorKind::kCheckpoint: return "checkpoint";
    case ErrorKind::kNumerical: return "numerical";
    case ErrorKind::kOutOfMemory: return "out_of_memory";
    case ErrorKind::kInterrupted: return "interrupted";
    case ErrorKind::kInternal: return "internal";
    case ErrorKind::kDistributed: return "distributed";
  }
  return "unknown";
}

void throw_error(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

void check_failed(const char* expr, const char* file, int line, const std::string& message) {
  throw Error(ErrorKind::kInternal, std::string("internal error at ") + file + ":" + std::to_string(line) +
                                        ": check '" + expr + "' failed: " + message +
                                        " (this is a bug in trainscope; please report it)");
}

}  // namespace trainscope
