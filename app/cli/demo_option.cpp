#include "demo_option.h"

#include <cstring>

#include "lorascope/error.h"

namespace lorascope::cli {

namespace {

// The value of `--name VALUE` or `--name=VALUE`, and whether the option appears at all.
bool find_option(int argc, char** argv, const std::string& name, std::string* value) {
    const std::string flag = "--" + name;
    bool found = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == flag) {
            found = true;
            if (value && i + 1 < argc) *value = argv[i + 1];
        } else if (a.rfind(flag + "=", 0) == 0) {
            found = true;
            if (value) *value = a.substr(flag.size() + 1);
        }
    }
    return found;
}

}  // namespace

std::vector<std::string> demo_option_names() { return {"demo-model", "demo-dir"}; }

ExpandedArgs expand_demo_args(int argc, char** argv) {
    ExpandedArgs out;
    for (int i = 0; i < argc; ++i) out.storage.emplace_back(argv[i]);
    if (find_option(argc, argv, "demo", nullptr)) {
        if (find_option(argc, argv, "model", nullptr))
            throw Error(ErrorKind::InvalidArgument, "--demo loads the demo model: give either --demo or --model");
        std::string dir, key;
        find_option(argc, argv, "demo-dir", &dir);
        DemoSelection selection{load_demo_pack(dir), {}};
        selection.model_key = selection.pack.default_model;
        if (find_option(argc, argv, "demo-model", &key)) selection.model_key = key;
        const DemoModel& model = selection.pack.model(selection.model_key);   // names the keys it has
        out.storage.insert(out.storage.end(), {"--model", model.dir});
        for (const auto& a : model.adapters) out.storage.insert(out.storage.end(), {"--adapter", a.name + "=" + a.dir});
        out.demo = std::move(selection);
    } else {
        for (const auto& name : demo_option_names())
            if (find_option(argc, argv, name, nullptr))
                throw Error(ErrorKind::InvalidArgument, "--" + name + " needs --demo");
    }
    for (auto& s : out.storage) out.argv.push_back(s.data());
    return out;
}

}  // namespace lorascope::cli
