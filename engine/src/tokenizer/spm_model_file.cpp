#include "tokenizer/spm_model_file.h"

#include "lorascope/error.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

namespace lorascope::tokenizer {

namespace {

// Real spiece.model files are a few MB; anything far larger is not one, and reading it whole
// would only waste memory before the parse fails.
constexpr uint64_t kMaxFileBytes = 512ull << 20;
// SentencePiece refuses pieces of this many bytes or more.
constexpr size_t kMaxPieceBytes = 8000;

enum Wire { Varint = 0, Fixed64 = 1, Delimited = 2, StartGroup = 3, EndGroup = 4, Fixed32 = 5 };

const char* wire_name(int wire) {
    switch (wire) {
        case Varint: return "varint";
        case Fixed64: return "fixed64";
        case Delimited: return "length-delimited";
        case StartGroup: return "start-group";
        case EndGroup: return "end-group";
        case Fixed32: return "fixed32";
        default: return "invalid";
    }
}

// One protobuf message's bytes. Offsets in errors are from the start of the file so that a
// report can be checked with a hex dump.
class WireReader {
public:
    struct Key {
        uint64_t field;
        int wire;
        size_t at;  // file offset of the key
    };

    WireReader(std::string_view data, size_t base, const std::string& path, std::string context)
        : data_(data), base_(base), path_(path), context_(std::move(context)) {}

    bool done() const { return pos_ >= data_.size(); }

    Key key() {
        const size_t at = offset();
        const uint64_t k = varint("field key");
        Key key{k >> 3, static_cast<int>(k & 7), at};
        if (key.field == 0 || key.field > 0x1FFFFFFF) fail("field number " + std::to_string(key.field) + " is invalid", at);
        // SentencePiece's schema has no groups, and a stray end-group means the framing is lost.
        if (key.wire != Varint && key.wire != Fixed64 && key.wire != Delimited && key.wire != Fixed32)
            fail("field " + std::to_string(key.field) + " has " + wire_name(key.wire) + " wire type " +
                     std::to_string(key.wire) + ", which this format never uses",
                 at);
        return key;
    }

    // A known field must arrive with the wire type its declaration implies; protobuf would file a
    // mismatch under unknown fields and silently keep the default, hiding a corrupt file.
    void expect(const Key& key, int wire, const char* name) const {
        if (key.wire != wire)
            fail(std::string("field ") + std::to_string(key.field) + " (" + name + ") has wire type " + wire_name(key.wire) +
                     ", expected " + wire_name(wire),
                 key.at);
    }

    uint64_t varint(const char* what) {
        const size_t at = offset();
        uint64_t value = 0;
        for (int i = 0; i < 10; ++i) {
            if (pos_ >= data_.size()) fail(std::string("truncated varint (") + what + ")", at);
            const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
            // The tenth byte holds bit 63 only.
            if (i == 9 && b > 1) fail(std::string("varint longer than 64 bits (") + what + ")", at);
            value |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
            if (!(b & 0x80)) return value;
        }
        fail(std::string("varint longer than 10 bytes (") + what + ")", at);
    }

    int32_t int32(const Key& key, const char* name) {
        expect(key, Varint, name);
        // Negative int32 values are sign-extended to ten bytes on the wire.
        const int64_t v = static_cast<int64_t>(varint(name));
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
            fail(std::string(name) + " value " + std::to_string(v) + " does not fit int32", key.at);
        return static_cast<int32_t>(v);
    }

    bool boolean(const Key& key, const char* name) {
        expect(key, Varint, name);
        return varint(name) != 0;
    }

    float float32(const Key& key, const char* name) {
        expect(key, Fixed32, name);
        const size_t at = offset();
        if (data_.size() - pos_ < 4) fail(std::string("truncated float (") + name + ")", at);
        uint32_t bits = 0;
        for (int i = 0; i < 4; ++i) bits |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
        pos_ += 4;
        float value;
        std::memcpy(&value, &bits, sizeof(value));
        return value;
    }

    // The payload of a length-delimited field, with the file offset of its first byte.
    std::string_view delimited(const char* name, size_t* payload_at = nullptr) {
        const size_t at = offset();
        const uint64_t n = varint(name);
        if (n > data_.size() - pos_)
            fail(std::string(name) + " claims " + std::to_string(n) + " bytes but only " + std::to_string(data_.size() - pos_) +
                     " remain" + (context_ == "ModelProto" ? "" : " in its enclosing message"),
                 at);
        if (payload_at) *payload_at = offset();
        std::string_view out = data_.substr(pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return out;
    }

    std::string string(const Key& key, const char* name) {
        expect(key, Delimited, name);
        const size_t at = offset();
        std::string value(delimited(name));
        if (utf8_lossy(value) != value) fail(std::string(name) + " is not valid UTF-8", at);
        return value;
    }

    std::string bytes(const Key& key, const char* name) {
        expect(key, Delimited, name);
        return std::string(delimited(name));
    }

    WireReader message(const Key& key, const char* name, std::string context) {
        expect(key, Delimited, name);
        size_t payload_at = 0;
        const std::string_view payload = delimited(name, &payload_at);
        return WireReader(payload, payload_at, path_, std::move(context));
    }

    void skip(const Key& key) {
        const size_t at = offset();
        switch (key.wire) {
            case Varint: varint("unknown field"); break;
            case Fixed64: advance(8, at); break;
            case Delimited: delimited("unknown field"); break;
            case Fixed32: advance(4, at); break;
            default: fail("unknown wire type", key.at);
        }
    }

    size_t offset() const { return base_ + pos_; }

    [[noreturn]] void fail(const std::string& problem, size_t at) const {
        throw Error(ErrorKind::Format, path_,
                    "malformed SentencePiece model: " + problem + " (in " + context_ + ", byte " + std::to_string(at) + ")");
    }

private:
    void advance(size_t n, size_t at) {
        if (data_.size() - pos_ < n) fail("truncated fixed-width unknown field", at);
        pos_ += n;
    }

    std::string_view data_;
    size_t base_;
    const std::string& path_;
    std::string context_;
    size_t pos_ = 0;
};

void read_piece(WireReader& r, SpmModelFile& file) {
    std::string piece;
    float score = 0.0f;
    int type = SpmModelFile::Normal;
    while (!r.done()) {
        const auto key = r.key();
        switch (key.field) {
            case 1: piece = r.string(key, "piece"); break;
            case 2: score = r.float32(key, "score"); break;
            case 3: {
                const int32_t t = r.int32(key, "type");
                if (t < SpmModelFile::Normal || t > SpmModelFile::Byte) r.fail("unknown piece type " + std::to_string(t), key.at);
                type = t;
                break;
            }
            default: r.skip(key);
        }
    }
    if (!std::isfinite(score)) r.fail("score of piece '" + piece + "' is not finite", r.offset());
    file.pieces.emplace_back(std::move(piece), static_cast<double>(score));
    file.types.push_back(type);
}

// Training-only TrainerSpec fields are not kept, but a declared field must still have its declared
// wire type and its strings must be UTF-8 (protobuf refuses the file otherwise).
void check_training_option(WireReader& r, const WireReader::Key& key) {
    switch (key.field) {
        case 1: case 2: case 5: case 7: case 36: case 53: case 54:  // input, model_prefix, ... (strings)
            r.string(key, "training option");
            break;
        case 6: case 11: case 12: case 13: case 14: case 16: case 17: case 18: case 19: case 20: case 21:
        case 22: case 23: case 32: case 33: case 34: case 49: case 50: case 52:  // integers and flags
            r.expect(key, Varint, "training option");
            r.skip(key);
            break;
        case 10: case 15: case 51:  // character_coverage, shrinking_factor, noise level
            r.float32(key, "training option");
            break;
        default: r.skip(key);  // not in the schema: an extension or a newer field
    }
}

// SelfTestData { repeated Sample samples = 1 { string input = 1; string expected = 2; } }: only
// SentencePiece's own self-test reads it, but its strings must be UTF-8 like every other.
void check_self_test_data(WireReader& r) {
    while (!r.done()) {
        const auto key = r.key();
        if (key.field != 1) {
            r.skip(key);
            continue;
        }
        WireReader sample = r.message(key, "samples", "self_test_data.samples");
        while (!sample.done()) {
            const auto k = sample.key();
            if (k.field == 1 || k.field == 2) sample.string(k, k.field == 1 ? "input" : "expected");
            else sample.skip(k);
        }
    }
}

void read_trainer_spec(WireReader& r, SpmTrainerSpec& t) {
    while (!r.done()) {
        const auto key = r.key();
        switch (key.field) {
            case 3: {
                const int32_t type = r.int32(key, "model_type");
                if (type < SpmTrainerSpec::Unigram || type > SpmTrainerSpec::Char) r.fail("unknown model_type " + std::to_string(type), key.at);
                t.model_type = type;
                break;
            }
            case 4: t.vocab_size = r.int32(key, "vocab_size"); break;
            case 24: t.treat_whitespace_as_suffix = r.boolean(key, "treat_whitespace_as_suffix"); break;
            case 25: t.split_digits = r.boolean(key, "split_digits"); break;
            case 26: t.allow_whitespace_only_pieces = r.boolean(key, "allow_whitespace_only_pieces"); break;
            case 30: t.control_symbols.push_back(r.string(key, "control_symbols")); break;
            case 31: t.user_defined_symbols.push_back(r.string(key, "user_defined_symbols")); break;
            case 35: t.byte_fallback = r.boolean(key, "byte_fallback"); break;
            case 40: t.unk_id = r.int32(key, "unk_id"); break;
            case 41: t.bos_id = r.int32(key, "bos_id"); break;
            case 42: t.eos_id = r.int32(key, "eos_id"); break;
            case 43: t.pad_id = r.int32(key, "pad_id"); break;
            case 44: t.unk_surface = r.string(key, "unk_surface"); break;
            case 45: t.unk_piece = r.string(key, "unk_piece"); break;
            case 46: t.bos_piece = r.string(key, "bos_piece"); break;
            case 47: t.eos_piece = r.string(key, "eos_piece"); break;
            case 48: t.pad_piece = r.string(key, "pad_piece"); break;
            default: check_training_option(r, key);
        }
    }
}

void read_normalizer_spec(WireReader& r, SpmNormalizerSpec& n) {
    while (!r.done()) {
        const auto key = r.key();
        switch (key.field) {
            case 1: n.name = r.string(key, "name"); break;
            case 2: n.precompiled_charsmap = r.bytes(key, "precompiled_charsmap"); break;
            case 3: n.add_dummy_prefix = r.boolean(key, "add_dummy_prefix"); break;
            case 4: n.remove_extra_whitespaces = r.boolean(key, "remove_extra_whitespaces"); break;
            case 5: n.escape_whitespaces = r.boolean(key, "escape_whitespaces"); break;
            case 6: n.normalization_rule_tsv = r.string(key, "normalization_rule_tsv"); break;
            default: r.skip(key);
        }
    }
}

// <0x00> .. <0xFF> with upper-case hex digits, as SentencePiece names byte pieces; -1 otherwise.
int byte_piece_value(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
        const char c = piece[i];
        if (c >= '0' && c <= '9') value = value * 16 + (c - '0');
        else if (c >= 'A' && c <= 'F') value = value * 16 + (c - 'A' + 10);
        else return -1;
    }
    return value;
}

// What SentencePiece checks when it loads a model, so a file it would refuse is refused here.
void validate(SpmModelFile& file, const std::string& path) {
    auto fail = [&](const std::string& problem) {
        throw Error(ErrorKind::Format, path, "invalid SentencePiece model: " + problem);
    };
    if (file.pieces.empty()) fail("it has no pieces");
    std::set<std::string_view> seen;
    std::vector<bool> byte_found(256, false);
    file.unk_id = -1;
    for (size_t id = 0; id < file.pieces.size(); ++id) {
        const std::string& piece = file.pieces[id].first;
        const std::string where = "piece " + std::to_string(id);
        if (piece.empty()) fail(where + " is empty");
        if (piece.size() >= kMaxPieceBytes) fail(where + " is " + std::to_string(piece.size()) + " bytes long");
        if (piece.find('\0') != std::string::npos) fail(where + " contains a NUL character");
        if (!seen.insert(piece).second) fail(where + " ('" + piece + "') is already defined");
        const int type = file.types[id];
        if (type == SpmModelFile::Unknown) {
            if (file.unk_id >= 0) fail(where + " is a second unknown piece (the first is " + std::to_string(file.unk_id) + ")");
            file.unk_id = static_cast<int>(id);
        } else if (type == SpmModelFile::Byte) {
            if (!file.trainer.byte_fallback) fail(where + " ('" + piece + "') is a byte piece although byte_fallback is false");
            const int value = byte_piece_value(piece);
            if (value < 0) fail(where + " ('" + piece + "') is not a valid byte piece");
            byte_found[static_cast<size_t>(value)] = true;
        }
    }
    if (file.unk_id < 0) fail("no piece has type UNKNOWN");
    // SentencePiece's Unigram model builds its lattice from these and refuses a model without any.
    if (file.trainer.model_type == SpmTrainerSpec::Unigram &&
        std::none_of(file.types.begin(), file.types.end(), [](int t) {
            return t == SpmModelFile::Normal || t == SpmModelFile::UserDefined || t == SpmModelFile::Unused;
        }))
        fail("no normal, user-defined or unused piece for the Unigram model to emit");
    if (file.trainer.byte_fallback) {
        for (size_t b = 0; b < byte_found.size(); ++b)
            if (!byte_found[b]) fail("byte_fallback is true but byte piece " + std::to_string(b) + " is missing");
    }
}

std::string read_bounded_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw Error(ErrorKind::NotFound, path, "cannot open file");
    const std::streamoff size = in.tellg();
    if (size < 0) throw Error(ErrorKind::Format, path, "cannot determine the file size");
    if (static_cast<uint64_t>(size) > kMaxFileBytes)
        throw Error(ErrorKind::Format, path, "is " + std::to_string(size) + " bytes, too large for a SentencePiece model");
    std::string data(static_cast<size_t>(size), '\0');
    in.seekg(0);
    if (size > 0 && !in.read(&data[0], size)) throw Error(ErrorKind::Format, path, "read error");
    return data;
}

}  // namespace

SpmModelFile SpmModelFile::parse(std::string_view bytes, const std::string& path) {
    SpmModelFile file;
    WireReader model(bytes, 0, path, "ModelProto");
    while (!model.done()) {
        const auto key = model.key();
        switch (key.field) {
            case 1: {
                WireReader r = model.message(key, "pieces", "pieces[" + std::to_string(file.pieces.size()) + "]");
                read_piece(r, file);
                break;
            }
            case 2: {
                // A message field that appears twice is merged, as protobuf does.
                WireReader r = model.message(key, "trainer_spec", "trainer_spec");
                read_trainer_spec(r, file.trainer);
                file.has_trainer_spec = true;
                break;
            }
            case 3: {
                WireReader r = model.message(key, "normalizer_spec", "normalizer_spec");
                read_normalizer_spec(r, file.normalizer);
                file.has_normalizer_spec = true;
                break;
            }
            case 5: {
                WireReader r = model.message(key, "denormalizer_spec", "denormalizer_spec");
                if (!file.denormalizer) file.denormalizer.emplace();
                read_normalizer_spec(r, *file.denormalizer);
                break;
            }
            case 4: {
                WireReader r = model.message(key, "self_test_data", "self_test_data");
                check_self_test_data(r);
                break;
            }
            default: model.skip(key);  // extensions
        }
    }
    validate(file, path);
    return file;
}

SpmModelFile SpmModelFile::load(const std::string& path) { return parse(read_bounded_file(path), path); }

}  // namespace lorascope::tokenizer
