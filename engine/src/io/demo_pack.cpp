#include "lorascope/demo_pack.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "lorascope/error.h"
#include "util/json_read.h"
#include "util/paths.h"

#ifndef LORASCOPE_SOURCE_DEMO_DIR
#define LORASCOPE_SOURCE_DEMO_DIR ""
#endif
#ifndef LORASCOPE_BUILD_TREE_DIR
#define LORASCOPE_BUILD_TREE_DIR ""
#endif

namespace lorascope {

namespace {

const char* const kHowToGet =
    "the demo pack is resources/demo/ in the source tree (regenerate it with scripts/train-demo) "
    "and share/lorascope/demo/ in an installation; --demo-dir DIR or LORASCOPE_DEMO_DIR points elsewhere";

std::string executable_dir() {
    std::string buf(4096, '\0');
    const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    if (n <= 0) return {};
    buf.resize(static_cast<size_t>(n));
    const auto slash = buf.rfind('/');
    return slash == std::string::npos ? std::string() : buf.substr(0, slash);
}

std::string absolute(const std::string& path) {
    if (!path.empty() && path.front() == '/') return path;
    std::string cwd(4096, '\0');
    if (!::getcwd(cwd.data(), cwd.size())) return path;
    cwd.resize(cwd.find('\0'));
    return paths::join(cwd, path);
}

// Inside the pack, entries name relative directories; "..", absolute paths would let a manifest
// point anywhere.
std::string pack_subdir(const std::string& pack, const std::string& rel, const json::ObjectReader& where,
                        const std::string& key) {
    if (rel.empty() || rel.front() == '/' || rel.find("..") != std::string::npos)
        where.fail_field(key, "must be a directory relative to the pack, got \"" + rel + "\"");
    const std::string dir = paths::join(pack, rel);
    if (!paths::is_directory(dir)) throw Error(ErrorKind::NotFound, dir, std::string("demo directory missing; ") + kHowToGet);
    return dir;
}

std::vector<std::string> string_list(const json::ObjectReader& r, const std::string& key) {
    const json::Json* v = r.find(key);
    if (!v) return {};
    if (!v->is_array()) r.fail_field(key, "must be a list of strings");
    std::vector<std::string> out;
    for (const auto& x : *v) {
        if (!x.is_string()) r.fail_field(key, "must be a list of strings");
        out.push_back(x.get<std::string>());
    }
    return out;
}

void read_heldout(DemoPack& pack, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::NotFound, path, std::string("cannot open the demo's held-out set; ") + kHowToGet);
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
        ++line_number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(line_number);
        const json::Json row = json::parse(line, where);
        if (!row.is_object()) throw Error(ErrorKind::Format, where, "expected a JSON object");
        json::ObjectReader r(row, where);
        const std::string key = r.get_string("model", "");
        DemoModel* model = nullptr;
        for (auto& m : pack.models)
            if (m.key == key) model = &m;
        if (!model) r.fail_field("model", "names no model of the manifest (\"" + key + "\")");
        DemoExample ex{r.get_string("adapter", ""), r.get_string("prompt", ""), r.get_string("expected", "")};
        if (!ex.adapter.empty() && !model->find_adapter(ex.adapter))
            r.fail_field("adapter", "names no adapter of model " + key + " (\"" + ex.adapter + "\")");
        if (ex.prompt.empty()) r.fail_field("prompt", "is missing");
        model->heldout.push_back(std::move(ex));
    }
}

}  // namespace

const DemoAdapter* DemoModel::find_adapter(const std::string& name) const {
    for (const auto& a : adapters)
        if (a.name == name) return &a;
    return nullptr;
}

const DemoModel& DemoPack::model(const std::string& key) const {
    std::string keys;
    for (const auto& m : models) {
        if (m.key == key) return m;
        keys += (keys.empty() ? "" : ", ") + m.key;
    }
    throw Error(ErrorKind::NotFound, paths::join(dir, "manifest.json"),
                "the demo pack has no model \"" + key + "\" (it has: " + keys + ")");
}

std::vector<std::string> demo_pack_search_path(const std::string& explicit_dir) {
    if (!explicit_dir.empty()) return {absolute(explicit_dir)};
    if (const char* env = std::getenv("LORASCOPE_DEMO_DIR"); env && *env) return {absolute(env)};
    std::vector<std::string> out;
    const std::string exe = executable_dir();
    if (!exe.empty()) out.push_back(exe + "/../share/lorascope/demo");
    // The source tree only for programs inside the build tree: an installed or packaged binary that
    // lacks its pack must say so, not quietly use the machine it was built on.
    const std::string build_tree = std::string(LORASCOPE_BUILD_TREE_DIR) + "/";
    if (*LORASCOPE_SOURCE_DEMO_DIR && build_tree.size() > 1 && exe.compare(0, build_tree.size(), build_tree) == 0)
        out.emplace_back(LORASCOPE_SOURCE_DEMO_DIR);
    return out;
}

DemoPack load_demo_pack(const std::string& explicit_dir) {
    const auto candidates = demo_pack_search_path(explicit_dir);
    // An explicit location is the only one tried: its errors (a malformed manifest) are the answer.
    if (!explicit_dir.empty() || candidates.size() == 1) return read_demo_pack(candidates.front());
    for (const auto& dir : candidates)
        if (paths::is_regular_file(paths::join(dir, "manifest.json"))) return read_demo_pack(dir);
    std::string tried;
    for (const auto& dir : candidates) tried += (tried.empty() ? "" : ", ") + dir;
    throw Error(ErrorKind::NotFound, tried, std::string("no demo pack (manifest.json) found; ") + kHowToGet);
}

DemoPack read_demo_pack(const std::string& dir_in) {
    const std::string dir = absolute(dir_in);
    const std::string manifest_path = paths::join(dir, "manifest.json");
    if (!paths::is_directory(dir))
        throw Error(ErrorKind::NotFound, dir, std::string("demo pack directory does not exist; ") + kHowToGet);
    if (!paths::is_regular_file(manifest_path))
        throw Error(ErrorKind::NotFound, manifest_path, std::string("demo pack manifest missing; ") + kHowToGet);
    const json::Json manifest = json::parse_file(manifest_path);
    if (!manifest.is_object()) throw Error(ErrorKind::Format, manifest_path, "expected a JSON object");
    json::ObjectReader top(manifest, manifest_path);

    DemoPack pack;
    pack.dir = dir;
    const json::Json* models = top.find("models");
    if (!models || !models->is_object() || models->empty()) top.fail_field("models", "must be a non-empty object");
    for (const auto& item : models->items()) {
        if (!item.value().is_object()) top.fail_field("models." + item.key(), "must be an object");
        json::ObjectReader r(item.value(), manifest_path, "models." + item.key() + ".");
        DemoModel m;
        m.key = item.key();
        m.dir = pack_subdir(dir, r.get_string("dir", m.key), r, "dir");
        m.family = r.get_string("family", "");
        m.description = r.get_string("description", "");
        m.task = r.get_string("task", "");
        m.prompt_format = r.get_string("prompt_format", "");
        m.example_prompts = string_list(r, "example_prompts");
        if (m.example_prompts.empty()) r.fail_field("example_prompts", "must list at least one prompt");
        const json::Json* adapters = r.find("adapters");
        if (adapters && !adapters->is_array()) r.fail_field("adapters", "must be a list");
        std::set<std::string> names;
        for (size_t i = 0; adapters && i < adapters->size(); ++i) {
            const std::string ctx = "models." + m.key + ".adapters[" + std::to_string(i) + "].";
            if (!(*adapters)[i].is_object()) r.fail_field("adapters", "entries must be objects");
            json::ObjectReader a(( *adapters)[i], manifest_path, ctx);
            DemoAdapter d;
            d.name = a.get_string("name", "");
            if (d.name.empty() || !names.insert(d.name).second) a.fail_field("name", "must be a unique non-empty name");
            d.dir = pack_subdir(dir, a.get_string("dir", ""), a, "dir");
            d.task = a.get_string("task", "");
            d.description = a.get_string("description", "");
            d.heldout_accuracy = a.get_double("heldout_accuracy", 0.0);
            m.adapters.push_back(std::move(d));
        }
        pack.models.push_back(std::move(m));
    }
    pack.default_model = top.get_string("default_model", pack.models.front().key);
    if (const auto heldout = top.get_string("heldout")) {
        if (heldout->empty() || heldout->front() == '/' || heldout->find("..") != std::string::npos)
            top.fail_field("heldout", "must be a file name relative to the pack");
        read_heldout(pack, paths::join(dir, *heldout));
    }
    return pack;
}

}  // namespace lorascope
