// `--demo [--demo-model KEY] [--demo-dir DIR]`: runs a command on the trained demo pack
// (resources/demo, see lorascope/demo_pack.h) instead of a model the user names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lorascope/demo_pack.h"

namespace lorascope::cli {

std::vector<std::string> demo_option_names();   // demo-model, demo-dir ("demo" is a flag)

struct DemoSelection {
    DemoPack pack;
    std::string model_key;
    const DemoModel& model() const { return pack.model(model_key); }
};

// Command lines after expansion: with --demo, `--model DIR` and one `--adapter NAME=DIR` per demo
// adapter are appended so that the command's ordinary option handling loads them.
struct ExpandedArgs {
    std::vector<std::string> storage;
    std::vector<char*> argv;
    std::optional<DemoSelection> demo;
    int argc() const { return static_cast<int>(argv.size()); }
};

// Throws lorascope::Error when --demo is combined with --model, when --demo-model/--demo-dir come
// without --demo, or when the pack is missing or malformed (the message says how to get it).
ExpandedArgs expand_demo_args(int argc, char** argv);

}  // namespace lorascope::cli
