// Names of error codes, for messages and JSON records.
#include "runtime/core/status.hpp"

namespace tl {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok: return "ok";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::io: return "io";
    case ErrorCode::parse: return "parse";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::no_device: return "no_device";
    case ErrorCode::cuda: return "cuda";
    case ErrorCode::compile: return "compile";
    case ErrorCode::fault: return "fault";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

}  // namespace tl
