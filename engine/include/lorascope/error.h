// Errors a user can cause: values that name the file and the problem. Never abort the process.
#pragma once

#include <stdexcept>
#include <string>

namespace lorascope {

enum class ErrorKind {
    InvalidArgument,  // bad parameter, bad request field
    NotFound,         // missing file, directory, tensor, adapter
    Format,           // malformed JSON, corrupt safetensors, shape mismatch
    Unsupported,      // a valid file using a feature we do not implement (DoRA, unknown model_type)
    Unsafe,           // refused on purpose (pickled checkpoints)
    Cancelled,
    Internal,
};

const char* to_string(ErrorKind kind);

// what() reads "<path>: <message>" when a path is known, so that every message names the file.
class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, std::string path, const std::string& message);
    Error(ErrorKind kind, const std::string& message);

    ErrorKind kind() const noexcept { return kind_; }
    const std::string& path() const noexcept { return path_; }
    const std::string& message() const noexcept { return message_; }

private:
    ErrorKind kind_;
    std::string path_;
    std::string message_;
};

}  // namespace lorascope
