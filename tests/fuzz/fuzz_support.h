// Shared by the libFuzzer targets: a private scratch directory for the files a parser reads
// from disk, the split of one input into several files, and the rule for exceptions.
//
// The rule: a parser of user-controlled files may refuse an input only with a lorascope::Error
// that names the file (or, for request lines, the request) and the problem. Anything else that
// escapes (a std::out_of_range, a nlohmann::json::exception, a std::regex_error) is a finding:
// it is rethrown and libFuzzer reports it as an uncaught exception (a crash with an input).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lorascope/error.h"

namespace lorascope::fuzz {

// Where a file-backed input is written: one directory per fuzzing process, under $TMPDIR.
inline const std::string& scratch_dir() {
    // Never destroyed: the atexit handler below reads it after static destructors may have run.
    static const std::string* const dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/lorascope-fuzz-XXXXXX";
        std::vector<char> buf(templ.begin(), templ.end());
        buf.push_back('\0');
        if (!::mkdtemp(buf.data())) {
            std::perror("mkdtemp");
            std::abort();
        }
        auto* made = new std::string(buf.data());
        // Removed at exit (libFuzzer leaves main through exit()); files inside are few and known.
        std::atexit([] {
            const std::string cmd = "rm -rf '" + scratch_dir() + "'";
            if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", scratch_dir().c_str());
        });
        return made;
    }();
    return *dir;
}

inline std::string write_file(const std::string& name, std::string_view bytes) {
    const std::string path = scratch_dir() + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        std::perror(path.c_str());
        std::abort();
    }
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
    std::fclose(f);
    return path;
}

inline bool dir_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

inline void remove_file(const std::string& name) { ::unlink((scratch_dir() + "/" + name).c_str()); }

// One input holding several files, separated by this line. Seeds are made by joining real files
// with it (tests/fuzz/make_seeds.py); the dictionaries carry it so that mutations keep it.
constexpr std::string_view kPartSeparator = "\n@@lorascope-part@@\n";

inline std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t max_parts) {
    std::vector<std::string_view> parts;
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    while (parts.size() + 1 < max_parts) {
        const size_t at = rest.find(kPartSeparator);
        if (at == std::string_view::npos) break;
        parts.push_back(rest.substr(0, at));
        rest.remove_prefix(at + kPartSeparator.size());
    }
    parts.push_back(rest);
    return parts;
}

// Writes part i as names[i]; names beyond the parts (and, with empty_means_absent, empty parts)
// are removed, so that "file absent" is an input too. Returns the scratch directory.
inline std::string write_parts(const std::vector<std::string_view>& parts, const std::vector<std::string>& names,
                               bool empty_means_absent = false) {
    for (size_t i = 0; i < names.size(); ++i) {
        if (i < parts.size() && !(empty_means_absent && parts[i].empty())) write_file(names[i], parts[i]);
        else remove_file(names[i]);
    }
    return scratch_dir();
}

// A refusal must say which file (or request) and what is wrong.
inline void check_refusal(const Error& e) {
    if (e.path().empty() || e.message().empty()) {
        std::fprintf(stderr, "lorascope::Error without a file or message: '%s'\n", e.what());
        std::abort();
    }
}

}  // namespace lorascope::fuzz

// Runs body; a lorascope::Error is an accepted refusal (checked for a path), anything else escapes.
#define LORASCOPE_FUZZ_PARSE(body)                       \
    do {                                                 \
        try {                                            \
            body;                                        \
        } catch (const ::lorascope::Error& fuzz_error) { \
            ::lorascope::fuzz::check_refusal(fuzz_error); \
        }                                                \
    } while (0)
