// Helpers shared by the I/O tests: oracle records, hashing, and checks on thrown errors.
#pragma once

#include <QCryptographicHash>
#include <QtTest>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lorascope/error.h"
#include "test_env.h"

namespace lorascope::test {

inline std::string io_oracle_dir() { return oracle_dir() + "/io"; }

inline nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("oracle record missing: " + path + " (run the oracle_io step)");
    return nlohmann::json::parse(in);
}

inline std::string sha256_hex(const void* data, size_t size) {
    return QCryptographicHash::hash(QByteArrayView(static_cast<const char*>(data), static_cast<qsizetype>(size)),
                                    QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

inline void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs fn, which must throw lorascope::Error of `kind` whose message contains every needle.
// Returns the message (empty when the check failed; QTest records the failure).
inline std::string expect_error(const std::function<void()>& fn, ErrorKind kind,
                                const std::vector<std::string>& needles, const char* label) {
    try {
        fn();
    } catch (const Error& e) {
        const std::string what = e.what();
        if (e.kind() != kind) {
            QTest::qFail(qPrintable(QString("%1: wrong error kind '%2' (want '%3'): %4")
                                        .arg(label, to_string(e.kind()), to_string(kind), what.c_str())),
                         __FILE__, __LINE__);
            return {};
        }
        for (const auto& needle : needles) {
            if (what.find(needle) == std::string::npos) {
                QTest::qFail(qPrintable(QString("%1: message lacks '%2': %3").arg(label, needle.c_str(), what.c_str())),
                             __FILE__, __LINE__);
                return {};
            }
        }
        return what;
    } catch (const std::exception& e) {
        QTest::qFail(qPrintable(QString("%1: not a lorascope::Error: %2").arg(label, e.what())), __FILE__, __LINE__);
        return {};
    }
    QTest::qFail(qPrintable(QString("%1: no error thrown").arg(label)), __FILE__, __LINE__);
    return {};
}

}  // namespace lorascope::test
