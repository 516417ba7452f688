// Small filesystem helpers shared by the file-format readers.
#pragma once

#include <string>

namespace lorascope::paths {

std::string join(const std::string& dir, const std::string& name);
bool is_regular_file(const std::string& path);
bool is_directory(const std::string& path);

}  // namespace lorascope::paths
