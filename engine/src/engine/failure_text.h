// The text a failure puts in a request's FinishEvent::error: one line, without LibTorch's C++
// backtrace (c10::Error::what() appends one, with source paths), and bounded in length. The
// request's client sees it; `lorascope-cli serve` sent a 424 carrying the whole backtrace
// (issue 26).
#pragma once

#include <exception>
#include <string>

namespace lorascope::engine_detail {

std::string failure_text(const std::exception& e);

}  // namespace lorascope::engine_detail
