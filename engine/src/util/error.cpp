#include "lorascope/error.h"

namespace lorascope {

const char* to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidArgument: return "invalid argument";
        case ErrorKind::NotFound: return "not found";
        case ErrorKind::Format: return "format error";
        case ErrorKind::Unsupported: return "unsupported";
        case ErrorKind::Unsafe: return "refused as unsafe";
        case ErrorKind::Cancelled: return "cancelled";
        case ErrorKind::Internal: return "internal error";
    }
    return "error";
}

Error::Error(ErrorKind kind, std::string path, const std::string& message)
    : std::runtime_error(path.empty() ? message : path + ": " + message),
      kind_(kind), path_(std::move(path)), message_(message) {}

Error::Error(ErrorKind kind, const std::string& message) : Error(kind, std::string(), message) {}

}  // namespace lorascope
