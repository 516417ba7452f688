// The demo pack: tiny models trained by scripts/train-demo (T5, BART, BLOOM, Llama) with PEFT LoRA
// adapters, described by manifest.json, so that the app shows real adapter differences without
// downloading anything. Torch-free; shared by lorascope-cli and the GUI.
#pragma once

#include <string>
#include <vector>

namespace lorascope {

struct DemoAdapter {
    std::string name;          // as loaded into the engine ("reverse")
    std::string dir;           // absolute
    std::string task;
    std::string description;
    double heldout_accuracy = 0;   // measured by Hugging Face + PEFT when the pack was trained
};

struct DemoExample {           // one held-out prompt and the answer its task defines
    std::string adapter;       // "" for the base model
    std::string prompt;
    std::string expected;
};

struct DemoModel {
    std::string key;           // "t5", "bart", "bloom"
    std::string dir;           // absolute
    std::string family;
    std::string description;
    std::string task;          // the base model's task
    std::string prompt_format;
    std::vector<std::string> example_prompts;
    std::vector<DemoAdapter> adapters;
    std::vector<DemoExample> heldout;

    const DemoAdapter* find_adapter(const std::string& name) const;
};

struct DemoPack {
    std::string dir;           // absolute
    std::string default_model;
    std::vector<DemoModel> models;

    // Throws lorascope::Error(NotFound) naming the key and the keys the pack has.
    const DemoModel& model(const std::string& key) const;
};

// Where the demo pack is looked for, first match wins:
//   1. `explicit_dir` (e.g. --demo-dir), else the environment variable LORASCOPE_DEMO_DIR;
//      when either is given it is the only place tried, so a wrong value is reported, not masked;
//   2. <directory of the running executable>/../share/lorascope/demo (the installed layout);
//   3. the source tree's resources/demo (a development build).
std::vector<std::string> demo_pack_search_path(const std::string& explicit_dir = {});

// Finds and parses the pack. A missing or malformed pack is a lorascope::Error that names the
// path(s) tried and says how to (re)generate it with scripts/train-demo.
DemoPack load_demo_pack(const std::string& explicit_dir = {});
// Parses the pack in `dir` (manifest.json + the held-out file it names).
DemoPack read_demo_pack(const std::string& dir);

}  // namespace lorascope
