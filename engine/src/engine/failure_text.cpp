#include "engine/failure_text.h"

#include <c10/util/Exception.h>

namespace lorascope::engine_detail {

namespace {

constexpr size_t kMaxFailureChars = 300;

}  // namespace

std::string failure_text(const std::exception& e) {
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    std::string text = torch_error ? torch_error->what_without_backtrace() : e.what();
    text = text.substr(0, text.find('\n'));
    if (text.size() > kMaxFailureChars) text = text.substr(0, kMaxFailureChars) + "...";
    return text;
}

}  // namespace lorascope::engine_detail
