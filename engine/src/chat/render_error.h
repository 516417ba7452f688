// The failure of one operation while a chat template renders (a type error, a refused construct,
// a limit reached), before it is known where in the template it happened: the evaluator catches it
// at the enclosing expression or statement and rethrows it as a lorascope::Error naming the
// template's origin and line.
#pragma once

#include <stdexcept>
#include <string>

#include "lorascope/error.h"

namespace lorascope::chat {

class RenderError : public std::runtime_error {
public:
    RenderError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

// What Python raises as TypeError/ValueError/... for the template's own mistakes.
[[noreturn]] inline void fail_type(const std::string& message) { throw RenderError(ErrorKind::InvalidArgument, message); }
// A construct of Jinja or Python that this engine does not implement.
[[noreturn]] inline void fail_unsupported(const std::string& message) { throw RenderError(ErrorKind::Unsupported, message); }

}  // namespace lorascope::chat
