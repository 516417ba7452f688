#include "tokenizer/metaspace_pipeline.h"

#include "lorascope/error.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

namespace lorascope::tokenizer {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581

std::string base64_decode(const std::string& in, const std::string& path) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(in.size() * 3 / 4);
    uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        if (c == '=') break;
        const int v = value(c);
        if (v < 0) throw Error(ErrorKind::Format, path, "precompiled_charsmap is not valid base64");
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xFF);
        }
    }
    return out;
}

// Byte length of the whitespace run that starts (forward) or ends (backward) the text.
size_t leading_whitespace(std::string_view s) {
    size_t pos = 0, len;
    while (pos < s.size() && is_whitespace(utf8_next(s, pos, &len))) pos += len;
    return pos;
}
size_t trailing_whitespace_start(std::string_view s) {
    size_t end = s.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t len;
        if (!is_whitespace(utf8_next(s, start, &len))) break;
        end = start;
    }
    return end;
}

PrependScheme parse_prepend(const nlohmann::json& config) {
    if (config.contains("prepend_scheme") && config["prepend_scheme"].is_string()) {
        const std::string s = config["prepend_scheme"].get<std::string>();
        return s == "never" ? PrependScheme::Never : s == "first" ? PrependScheme::First : PrependScheme::Always;
    }
    // Files written before prepend_scheme existed carry add_prefix_space.
    return config.value("add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
}

}  // namespace

std::string metaspace_to_spaces(std::string_view piece, bool drop) {
    std::string text;
    text.reserve(piece.size());
    for (size_t pos = 0; pos < piece.size();) {
        if (piece.compare(pos, kMetaspace.size(), kMetaspace) == 0) {
            if (!drop) text += ' ';
            pos += kMetaspace.size();
        } else {
            text += piece[pos++];
        }
    }
    return text;
}

void MetaspacePipeline::add_normalizer(const nlohmann::json& config, const std::string& path) {
    if (config.is_null()) return;
    const std::string type = config.value("type", "");
    if (type == "Sequence") {
        for (const auto& n : config.at("normalizers")) add_normalizer(n, path);
    } else if (type == "Precompiled") {
        const auto& blob = config.at("precompiled_charsmap");
        if (blob.is_null()) return;
        precompiled_ = std::make_shared<PrecompiledNormalizer>(base64_decode(blob.get<std::string>(), path), path);
        normalizer_.push_back(Step::Precompiled);
    } else if (type == "Strip") {
        if (config.value("strip_left", false)) normalizer_.push_back(Step::StripLeft);
        if (config.value("strip_right", false)) normalizer_.push_back(Step::StripRight);
    } else if (type == "Replace" && config.contains("pattern") && config["pattern"].value("Regex", "") == " {2,}" &&
               config.value("content", "") == kMetaspace) {
        normalizer_.push_back(Step::CollapseSpaces);
    } else if (type == "Replace" && config.contains("pattern") && config["pattern"].value("String", "") == " " &&
               config.value("content", "") == kMetaspace) {
        normalizer_.push_back(Step::ReplaceSpaces);
    } else if (type == "Prepend" && config.value("prepend", "") == kMetaspace) {
        normalizer_.push_back(Step::PrependMetaspace);
    } else {
        throw Error(ErrorKind::Unsupported, path, "normalizer " + (type == "Replace" || type == "Prepend" ? config.dump() : "of type '" + type + "'") +
                                                      " is not supported for a SentencePiece-style tokenizer");
    }
}

void MetaspacePipeline::add_pre_tokenizer(const nlohmann::json& config, const std::string& path) {
    if (config.is_null()) return;
    const std::string type = config.value("type", "");
    if (type == "Sequence") {
        for (const auto& p : config.at("pretokenizers")) add_pre_tokenizer(p, path);
    } else if (type == "WhitespaceSplit" && !metaspace_) {
        whitespace_split_ = true;
    } else if (type == "Metaspace" && !metaspace_) {
        if (config.value("replacement", kMetaspace) != kMetaspace)
            throw Error(ErrorKind::Unsupported, path, "Metaspace with a replacement other than U+2581 is not supported");
        metaspace_ = true;
        prepend_ = parse_prepend(config);
        split_ = config.value("split", true);
    } else {
        throw Error(ErrorKind::Unsupported, path, "pre_tokenizer of type '" + type + "' is not supported for a SentencePiece-style tokenizer");
    }
}

MetaspacePipeline MetaspacePipeline::from_json(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer,
                                               const std::string& path) {
    MetaspacePipeline p;
    p.add_normalizer(normalizer, path);
    p.add_pre_tokenizer(pre_tokenizer, path);
    // Without Metaspace, spaces reach the model as they are unless the normalizer replaced them.
    if (p.whitespace_split_ && !p.metaspace_)
        throw Error(ErrorKind::Unsupported, path, "pre_tokenizer WhitespaceSplit without Metaspace is not supported");
    return p;
}

MetaspacePipeline MetaspacePipeline::from_spm_converter(const std::string& precompiled_charsmap, PrependScheme prepend,
                                                        bool whitespace_split, const std::string& path) {
    MetaspacePipeline p;
    if (!precompiled_charsmap.empty()) {
        p.precompiled_ = std::make_shared<PrecompiledNormalizer>(precompiled_charsmap, path);
        p.normalizer_.push_back(Step::Precompiled);
    }
    p.normalizer_.push_back(Step::StripRight);
    p.normalizer_.push_back(Step::CollapseSpaces);
    p.metaspace_ = true;
    p.whitespace_split_ = whitespace_split;
    p.prepend_ = prepend;
    return p;
}

MetaspacePipeline MetaspacePipeline::llama(bool legacy, bool add_prefix_space) {
    MetaspacePipeline p;
    if (legacy) {
        if (add_prefix_space) p.normalizer_.push_back(Step::PrependMetaspace);
        p.normalizer_.push_back(Step::ReplaceSpaces);
        return p;
    }
    p.metaspace_ = true;
    p.split_ = false;
    p.prepend_ = add_prefix_space ? PrependScheme::First : PrependScheme::Never;
    return p;
}

std::string MetaspacePipeline::normalize(std::string_view text) const {
    std::string s(text);
    for (Step step : normalizer_) {
        switch (step) {
            case Step::Precompiled: s = precompiled_->normalize(s); break;
            case Step::StripLeft: s.erase(0, leading_whitespace(s)); break;
            case Step::StripRight: s.erase(trailing_whitespace_start(s)); break;
            case Step::PrependMetaspace:
                if (!s.empty()) s.insert(0, kMetaspace);
                break;
            case Step::ReplaceSpaces: {
                std::string out;
                out.reserve(s.size() + s.size() / 2);
                for (char c : s) {
                    if (c == ' ') out += kMetaspace;
                    else out += c;
                }
                s.swap(out);
                break;
            }
            case Step::CollapseSpaces: {
                std::string out;
                out.reserve(s.size());
                for (size_t i = 0; i < s.size();) {
                    size_t j = i;
                    while (j < s.size() && s[j] == ' ') ++j;
                    if (j - i >= 2) out += kMetaspace;
                    else if (j - i == 1) out += ' ';
                    if (j == i) out += s[j++];
                    i = j;
                }
                s.swap(out);
                break;
            }
        }
    }
    return s;
}

void MetaspacePipeline::words(std::string_view normalized, bool at_text_start, std::vector<std::string>& out) const {
    if (!metaspace_) {  // no pre-tokenizer: the normalized text is one word
        if (!normalized.empty()) out.emplace_back(normalized);
        return;
    }
    // WhitespaceSplit: words between runs of whitespace; each remembers whether it starts the input.
    std::vector<std::pair<std::string, bool>> pieces;
    if (whitespace_split_) {
        size_t pos = 0;
        while (pos < normalized.size()) {
            size_t len;
            if (is_whitespace(utf8_next(normalized, pos, &len))) {
                pos += len;
                continue;
            }
            size_t end = pos;
            while (end < normalized.size() && !is_whitespace(utf8_next(normalized, end, &len))) end += len;
            pieces.emplace_back(std::string(normalized.substr(pos, end - pos)), at_text_start && pos == 0);
            pos = end;
        }
    } else if (!normalized.empty()) {
        pieces.emplace_back(std::string(normalized), at_text_start);
    }
    for (auto& [piece, starts_input] : pieces) {
        std::string word;
        word.reserve(piece.size() + kMetaspace.size());
        for (char c : piece) {
            if (c == ' ') word += kMetaspace;
            else word += c;
        }
        const bool prepend = prepend_ == PrependScheme::Always || (prepend_ == PrependScheme::First && starts_input);
        if (prepend && word.compare(0, kMetaspace.size(), kMetaspace) != 0) word.insert(0, kMetaspace);
        if (!split_) {
            out.push_back(std::move(word));
            continue;
        }
        // Split before every U+2581 (MergedWithNext): each word but possibly the first starts with it.
        size_t start = 0;
        for (size_t pos = word.find(kMetaspace, 1); pos != std::string::npos; pos = word.find(kMetaspace, pos + 1)) {
            out.push_back(word.substr(start, pos - start));
            start = pos;
        }
        out.push_back(word.substr(start));
    }
}

std::string MetaspacePipeline::describe() const {
    std::string out = precompiled_ ? "Precompiled charsmap" : "no charsmap";
    for (Step step : normalizer_) {
        if (step == Step::PrependMetaspace) out += ", Prepend(\u2581)";
        if (step == Step::ReplaceSpaces) out += ", Replace(' ' -> \u2581)";
    }
    if (whitespace_split_) out += ", WhitespaceSplit";
    if (metaspace_) {
        out += prepend_ == PrependScheme::Always ? ", Metaspace(always" : prepend_ == PrependScheme::First ? ", Metaspace(first" : ", Metaspace(never";
        out += split_ ? ")" : ", no split)";
    }
    return out;
}

}  // namespace lorascope::tokenizer
