// Differential test of the safetensors reader: on every file of the corruption corpus that the
// oracle step writes (tests/oracle/safetensors_corpus_oracle.py), our accept/refuse decision is the
// `safetensors` library's. A file the library accepts we accept too, with the same tensors, dtypes
// and shapes, or refuse as ErrorKind::Unsupported (a valid dtype we do not load: U16, F8...); a file
// it refuses we refuse as ErrorKind::Format, naming the file.
#include <QtTest>

#include <map>

#include "io/safetensors.h"
#include "io_test_util.h"
#include "lorascope/error.h"

using namespace lorascope;

class TestSafetensorsDifferential : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void every_corpus_file_decided_as_the_library_decides() {
        const std::string corpus_path = test::oracle_dir() + "/safetensors_corpus/corpus.json";
        const nlohmann::json corpus = test::read_json_file(corpus_path);
        const auto& files = corpus.at("files");
        QVERIFY2(files.size() >= 100, "the corpus is smaller than the oracle writes: stale oracle output?");
        int accepted = 0, refused = 0, unsupported = 0;
        QStringList mismatches;
        for (const auto& [name, record] : files.items()) {
            const std::string path = record.at("file").get<std::string>();
            const bool valid = record.at("valid").get<bool>();
            const QString label = QString::fromStdString(name);
            try {
                const auto file = io::SafetensorsFile::open(path);
                if (!valid) {
                    mismatches << label + ": we accept it, safetensors refuses it (" +
                                      QString::fromStdString(record.at("error").get<std::string>()) + ")";
                    continue;
                }
                // Same tensors, dtypes and shapes as the library lists.
                std::map<std::string, nlohmann::json> ours;
                for (const auto& t : file->tensors())
                    ours[t.name] = {{"dtype", io::to_string(t.dtype)}, {"shape", t.shape}};
                std::map<std::string, nlohmann::json> theirs;
                for (const auto& [tname, t] : record.at("tensors").items()) {
                    const std::string dtype = t.at("dtype").get<std::string>();
                    theirs[tname] = {{"dtype", dtype}, {"shape", t.at("shape")}};
                }
                if (nlohmann::json(ours) != nlohmann::json(theirs))
                    mismatches << label + ": tensors differ: ours " + QString::fromStdString(nlohmann::json(ours).dump()) +
                                      ", safetensors' " + QString::fromStdString(nlohmann::json(theirs).dump());
                ++accepted;
            } catch (const Error& e) {
                const std::string what = e.what();
                if (what.find(path) == std::string::npos)
                    mismatches << label + ": the error does not name the file: " + QString::fromStdString(what);
                if (valid && e.kind() != ErrorKind::Unsupported)
                    mismatches << label + ": we refuse it (" + QString::fromStdString(what) + "), safetensors accepts it";
                else if (!valid && e.kind() != ErrorKind::Format)
                    mismatches << label + ": refused as " + to_string(e.kind()) + ", not Format: " + QString::fromStdString(what);
                (valid ? unsupported : refused) += 1;
            }
        }
        qInfo("%d files: %d accepted, %d refused as safetensors refuses them, %d valid but of an unsupported dtype",
              static_cast<int>(files.size()), accepted, refused, unsupported);
        QVERIFY2(mismatches.isEmpty(), qPrintable(mismatches.join("\n")));
        QVERIFY(accepted > 20 && refused > 50);
    }
};

QTEST_APPLESS_MAIN(TestSafetensorsDifferential)
#include "test_safetensors_differential.moc"
