// Python's datetime.strftime in the C locale (what transformers' strftime_now produces: English
// month and day names whatever the user's locale), for the directives date lines in chat
// templates use. An unknown directive is a RenderError (Unsupported), never a guess.
#pragma once

#include <string>

#include "lorascope/chat.h"

namespace lorascope::chat {

std::string py_strftime(const std::string& format, const ChatClock& clock);
ChatClock local_now();  // the local time, as datetime.now() reads it

}  // namespace lorascope::chat
