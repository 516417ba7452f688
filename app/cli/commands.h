// Subcommands of lorascope-cli. Each returns the process exit status; user errors are thrown
// as lorascope::Error and printed by main() as one line.
#pragma once

namespace lorascope::cli {

int cmd_info(int argc, char** argv);      // cmd_info.cpp
int cmd_tokenize(int argc, char** argv);  // cmd_tokenize.cpp
int cmd_generate(int argc, char** argv);  // cmd_generate.cpp
int cmd_score(int argc, char** argv);     // cmd_score.cpp
int cmd_bench(int argc, char** argv);     // cmd_bench.cpp
int cmd_serve(int argc, char** argv);     // cmd_serve.cpp
int cmd_chat_template(int argc, char** argv);  // cmd_chat_template.cpp

}  // namespace lorascope::cli
