// Adapters named by path (adapter_source "local"), confined to the directory the operator allows:
// paths below it resolve (directly, absolutely, through links that stay inside); "..", absolute
// paths elsewhere, links leaving it (for the directory or for the files the loader opens), empty
// and NUL-holding paths are refused without saying where a link points; load_local_adapter
// registers an adapter once under a name derived from its path.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>

#include "lorascope/error.h"
#include "lorascope/local_adapters.h"

namespace fs = std::filesystem;
using lorascope::AdapterDirectory;
using lorascope::ErrorKind;

namespace {

void touch(const fs::path& p) { std::ofstream(p) << "{}"; }

void make_adapter_dir(const fs::path& dir) {
    fs::create_directories(dir);
    touch(dir / "adapter_config.json");
    touch(dir / "adapter_model.safetensors");
}

// Only what load_local_adapter calls does anything.
class RecordingEngine final : public lorascope::Engine {
public:
    std::vector<std::pair<std::string, std::string>> loads;
    lorascope::RequestId submit(lorascope::Request, std::shared_ptr<lorascope::RequestSink>) override { return 0; }
    void cancel(lorascope::RequestId) override {}
    void cancel_all() override {}
    lorascope::AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        loads.emplace_back(name, dir);
        return adapters().back();
    }
    void unload_adapter(const std::string&) override {}
    std::vector<lorascope::AdapterInfo> adapters() const override {
        std::vector<lorascope::AdapterInfo> out;
        for (const auto& [name, dir] : loads) {
            lorascope::AdapterInfo info;
            info.name = name;
            info.path = dir;
            out.push_back(std::move(info));
        }
        return out;
    }
    void set_stats_listener(std::function<void(const lorascope::StepStats&)>) override {}
    void set_paused(bool) override {}
    void step_once() override {}
    void wait_idle() override {}
    const lorascope::ModelConfig& model_config() const override { return config_; }
    const lorascope::GenerationConfig& generation_config() const override { return generation_; }

private:
    lorascope::ModelConfig config_;
    lorascope::GenerationConfig generation_;
};

}  // namespace

class TestLocalAdapters : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    fs::path root_, outside_;

    ErrorKind refusal(const AdapterDirectory& dir, const std::string& requested, std::string* message = nullptr) {
        try {
            dir.resolve(requested);
        } catch (const lorascope::Error& e) {
            if (message) *message = e.what();
            return e.kind();
        }
        return ErrorKind::Internal;   // not refused
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        const fs::path base = tmp_.path().toStdString();
        root_ = base / "root";
        outside_ = base / "outside";
        make_adapter_dir(root_ / "a");
        make_adapter_dir(root_ / "nested" / "b");
        make_adapter_dir(outside_);
        fs::create_directory_symlink(outside_, root_ / "out_link");
        // A link to a directory outside without the loader's files: only the directory's own
        // check can refuse it.
        fs::create_directories(base / "outside_empty");
        fs::create_directory_symlink(base / "outside_empty", root_ / "out_empty_link");
        fs::create_directory_symlink(root_ / "a", root_ / "in_link");
        fs::create_directories(root_ / "c");
        fs::create_symlink(outside_ / "adapter_config.json", root_ / "c" / "adapter_config.json");
        fs::create_directories(root_ / "d");
        fs::create_symlink("../a/adapter_model.safetensors", root_ / "d" / "adapter_model.safetensors");
        fs::create_directory_symlink(root_, base / "root_link");
    }

    void paths_below_the_root_resolve() {
        const AdapterDirectory dir(root_.string());
        const std::string a = fs::canonical(root_ / "a").string();
        QCOMPARE(dir.resolve("a"), a);
        QCOMPARE(dir.resolve("./a/"), a);
        QCOMPARE(dir.resolve((root_ / "a").string()), a);
        QCOMPARE(dir.resolve("in_link"), a);   // a link that stays inside
        QCOMPARE(dir.resolve("d"), fs::canonical(root_ / "d").string());
        QCOMPARE(dir.adapter_name(a), std::string("local:a"));
        QCOMPARE(dir.adapter_name(dir.resolve("nested/b")), std::string("local:nested/b"));
        // The root may itself be given through a link: what it resolves to is the boundary.
        const AdapterDirectory via_link((root_.parent_path() / "root_link").string());
        QCOMPARE(via_link.root(), fs::canonical(root_).string());
        QCOMPARE(via_link.resolve("a"), a);
    }

    void paths_leaving_the_root_are_refused() {
        const AdapterDirectory dir(root_.string());
        std::map<std::string, std::string> says = {
            {"../outside", "'..'"},
            {"a/../a", "'..'"},
            {outside_.string(), "outside the allowed"},
            {"/etc", "outside the allowed"},
            {"out_link", "symbolic link"},
            {"out_empty_link", "the adapter path leaves"},
            {"c", "adapter_config.json"},
            {"", "empty"},
            {std::string("a\0b", 3), "NUL"},
            {std::string(5000, 'x'), "too long"},
        };
        for (const auto& [requested, why] : says) {
            std::string message;
            QCOMPARE(refusal(dir, requested, &message), ErrorKind::Unsafe);
            QVERIFY2(message.find(why) != std::string::npos, message.c_str());
            QVERIFY2(message.find(outside_.string()) == std::string::npos || requested == outside_.string(),
                     ("a refusal shows where a link points: " + message).c_str());
        }
        QCOMPARE(refusal(dir, "missing"), ErrorKind::NotFound);
        QCOMPARE(refusal(dir, "a/adapter_config.json"), ErrorKind::NotFound);   // not a directory
    }

    void the_root_must_be_a_directory() {
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, AdapterDirectory((root_ / "nope").string()));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, AdapterDirectory((root_ / "a" / "adapter_config.json").string()));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, AdapterDirectory(""));
    }

    void load_local_adapter_registers_once() {
        const AdapterDirectory dir(root_.string());
        RecordingEngine engine;
        QCOMPARE(lorascope::load_local_adapter(engine, dir, "a"), std::string("local:a"));
        QCOMPARE(lorascope::load_local_adapter(engine, dir, "in_link"), std::string("local:a"));
        QCOMPARE(engine.loads.size(), size_t(1));
        QCOMPARE(engine.loads[0].second, fs::canonical(root_ / "a").string());
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::load_local_adapter(engine, dir, "out_link"));
        QCOMPARE(engine.loads.size(), size_t(1));   // a refused path never reaches the engine
    }
};

QTEST_GUILESS_MAIN(TestLocalAdapters)
#include "test_local_adapters.moc"
