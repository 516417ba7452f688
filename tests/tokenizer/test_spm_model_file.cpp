// Our spiece.model reader against SentencePiece itself (tests/oracle/spm_model_oracle.py): every
// piece, score and type and the trainer/normalizer fields of trained models and the real T5 file;
// every prefix of a tiny model accepted or refused exactly as SentencePiece does; single-byte
// mutations and hand-made malformed files refused with an error naming the file, never a crash.
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"
#include "shared_skip.h"
#include "test_env.h"
#include "tokenizer/spm_model_file.h"

#include <QtTest/QtTest>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using lorascope::Error;
using lorascope::ErrorKind;
using lorascope::tokenizer::SpmModelFile;
using lorascope::tokenizer::SpmNormalizerSpec;
using nlohmann::json;

namespace {

std::string spm_dir() { return lorascope::test::oracle_dir() + "/spm_model"; }

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

json read_record(const std::string& name) {
    const std::string path = spm_dir() + "/" + name + ".json";
    if (!lorascope::test::exists(path)) return json();
    return json::parse(read_bytes(path));
}

std::string base64(const std::string& bytes) {
    static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
        for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
    }
    if (i + 1 == bytes.size()) {
        const uint32_t v = uint8_t(bytes[i]) << 16;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == bytes.size()) {
        const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

void compare_normalizer(const SpmNormalizerSpec& ours, const json& expected, const char* which) {
    const QString where = QString("%1: ").arg(which);
    QCOMPARE(where + QString::fromStdString(ours.name), where + QString::fromStdString(expected["name"]));
    QCOMPARE(ours.add_dummy_prefix, expected["add_dummy_prefix"].get<bool>());
    QCOMPARE(ours.remove_extra_whitespaces, expected["remove_extra_whitespaces"].get<bool>());
    QCOMPARE(ours.escape_whitespaces, expected["escape_whitespaces"].get<bool>());
    QCOMPARE(ours.normalization_rule_tsv, expected["normalization_rule_tsv"].get<std::string>());
    QVERIFY2(base64(ours.precompiled_charsmap) == expected["precompiled_charsmap_b64"].get<std::string>(),
             qPrintable(where + QString("precompiled_charsmap differs (%1 bytes)").arg(ours.precompiled_charsmap.size())));
}

// Outcome of parsing bytes: accepted, or refused with an Error that names the file. Anything else
// (another exception type, an error without the path) fails the test.
struct Outcome {
    bool accepted = false;
    SpmModelFile file;
    std::string error;
};

Outcome parse_outcome(const std::string& bytes, const std::string& path) {
    Outcome out;
    try {
        out.file = SpmModelFile::parse(bytes, path);
        out.accepted = true;
    } catch (const Error& e) {
        out.error = e.what();
        if (e.kind() != ErrorKind::Format || out.error.find(path) == std::string::npos)
            out.error = "BAD ERROR (" + std::string(lorascope::to_string(e.kind())) + "): " + out.error;
    }
    return out;
}

// Invariants every accepted model keeps, whatever bytes it came from.
bool consistent(const SpmModelFile& f) {
    if (f.pieces.empty() || f.types.size() != f.pieces.size()) return false;
    if (f.unk_id < 0 || static_cast<size_t>(f.unk_id) >= f.pieces.size() || f.types[f.unk_id] != SpmModelFile::Unknown) return false;
    for (const auto& p : f.pieces)
        if (p.first.empty()) return false;
    return true;
}

// Protobuf wire-format writer for hand-made malformed files.
struct Proto {
    std::string bytes;
    Proto& varint(uint64_t v) {
        while (v >= 0x80) {
            bytes += char((v & 0x7F) | 0x80);
            v >>= 7;
        }
        bytes += char(v);
        return *this;
    }
    Proto& key(uint32_t field, int wire) { return varint((uint64_t(field) << 3) | uint32_t(wire)); }
    Proto& field_varint(uint32_t field, uint64_t v) { return key(field, 0).varint(v); }
    Proto& field_bytes(uint32_t field, const std::string& payload) {
        key(field, 2).varint(payload.size());
        bytes += payload;
        return *this;
    }
    Proto& field_float(uint32_t field, float f) {
        key(field, 5);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        for (int i = 0; i < 4; ++i) bytes += char((bits >> (8 * i)) & 0xFF);
        return *this;
    }
    Proto& raw(const std::string& b) {
        bytes += b;
        return *this;
    }
};

std::string piece(const std::string& text, float score, int type) {
    return Proto().field_bytes(1, text).field_float(2, score).field_varint(3, uint64_t(type)).bytes;
}

// <unk>, </s> and two normal pieces: the smallest model SentencePiece loads.
Proto minimal_pieces() {
    Proto p;
    p.field_bytes(1, piece("<unk>", 0, SpmModelFile::Unknown));
    p.field_bytes(1, piece("</s>", 0, SpmModelFile::Control));
    p.field_bytes(1, piece("\xE2\x96\x81" "a", -1.5f, SpmModelFile::Normal));
    p.field_bytes(1, piece("b", -2.5f, SpmModelFile::Normal));
    return p;
}

}  // namespace

class TestSpmModelFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matches_sentencepiece_data() {
        QTest::addColumn<QString>("name");
        for (const char* name : {"unigram_nfkc", "unigram_bytes", "bpe", "tiny", "t5"}) QTest::newRow(name) << QString(name);
    }

    void matches_sentencepiece() {
        QFETCH(QString, name);
        const json r = read_record(name.toStdString());
        if (r.is_null()) {
            if (name == "t5" && !lorascope::test::exists(lorascope::test::shared_tokenizers() + "/t5/spiece.model"))
                LORASCOPE_SKIP_SHARED("shared tokenizer folder absent: the real T5 spiece.model is not checked");
            QFAIL(qPrintable("oracle record " + name + " missing (run the oracle_spm_model step)"));
        }
        const SpmModelFile f = SpmModelFile::load(r["path"].get<std::string>());
        const json& pieces = r["pieces"];
        QCOMPARE(f.pieces.size(), pieces.size());
        QCOMPARE(f.types.size(), pieces.size());
        for (size_t i = 0; i < pieces.size(); ++i) {
            if (f.pieces[i].first != pieces[i][0].get<std::string>() || f.pieces[i].second != pieces[i][1].get<double>() ||
                f.types[i] != pieces[i][2].get<int>())
                QFAIL(qPrintable(QString("piece %1: ours ('%2', %3, %4), SentencePiece ('%5', %6, %7)")
                                     .arg(i)
                                     .arg(QString::fromStdString(f.pieces[i].first))
                                     .arg(f.pieces[i].second, 0, 'g', 17)
                                     .arg(f.types[i])
                                     .arg(QString::fromStdString(pieces[i][0].get<std::string>()))
                                     .arg(pieces[i][1].get<double>(), 0, 'g', 17)
                                     .arg(pieces[i][2].get<int>())));
        }
        QCOMPARE(f.unk_id, r["unk_id"].get<int>());
        QCOMPARE(f.has_trainer_spec, r["has_trainer_spec"].get<bool>());
        QCOMPARE(f.has_normalizer_spec, r["has_normalizer_spec"].get<bool>());

        const json& t = r["trainer"];
        QCOMPARE(f.trainer.model_type, t["model_type"].get<int>());
        QCOMPARE(f.trainer.vocab_size, t["vocab_size"].get<int32_t>());
        QCOMPARE(f.trainer.unk_id, t["unk_id"].get<int32_t>());
        QCOMPARE(f.trainer.bos_id, t["bos_id"].get<int32_t>());
        QCOMPARE(f.trainer.eos_id, t["eos_id"].get<int32_t>());
        QCOMPARE(f.trainer.pad_id, t["pad_id"].get<int32_t>());
        QCOMPARE(f.trainer.unk_piece, t["unk_piece"].get<std::string>());
        QCOMPARE(f.trainer.bos_piece, t["bos_piece"].get<std::string>());
        QCOMPARE(f.trainer.eos_piece, t["eos_piece"].get<std::string>());
        QCOMPARE(f.trainer.pad_piece, t["pad_piece"].get<std::string>());
        QCOMPARE(f.trainer.unk_surface, t["unk_surface"].get<std::string>());
        QCOMPARE(f.trainer.byte_fallback, t["byte_fallback"].get<bool>());
        QCOMPARE(f.trainer.treat_whitespace_as_suffix, t["treat_whitespace_as_suffix"].get<bool>());
        QCOMPARE(f.trainer.allow_whitespace_only_pieces, t["allow_whitespace_only_pieces"].get<bool>());
        QCOMPARE(f.trainer.split_digits, t["split_digits"].get<bool>());
        QCOMPARE(f.trainer.control_symbols, t["control_symbols"].get<std::vector<std::string>>());
        QCOMPARE(f.trainer.user_defined_symbols, t["user_defined_symbols"].get<std::vector<std::string>>());

        compare_normalizer(f.normalizer, r["normalizer"], "normalizer_spec");
        QCOMPARE(f.denormalizer.has_value(), !r["denormalizer"].is_null());
        if (f.denormalizer) compare_normalizer(*f.denormalizer, r["denormalizer"], "denormalizer_spec");
    }

    void every_prefix_is_judged_as_sentencepiece_does() {
        const json r = read_record("tiny_prefixes");
        if (r.is_null()) QFAIL("oracle record tiny_prefixes missing (run the oracle_spm_model step)");
        const std::string path = spm_dir() + "/tiny.model";
        const std::string bytes = read_bytes(path);
        QCOMPARE(bytes.size(), r["size"].get<size_t>());
        int accepted = 0;
        for (size_t n = 0; n < bytes.size(); ++n) {
            const Outcome o = parse_outcome(bytes.substr(0, n), path);
            const bool spm_ok = r["spm_ok"][n].get<bool>();
            const QString where = QString("prefix of %1 bytes: ").arg(n);
            QVERIFY2(o.error.rfind("BAD ERROR", 0) != 0, qPrintable(where + QString::fromStdString(o.error)));
            QVERIFY2(o.accepted == spm_ok, qPrintable(where + (spm_ok ? "SentencePiece loads it, we refuse: " + QString::fromStdString(o.error)
                                                                      : QString("SentencePiece refuses it, we accept it"))));
            if (o.accepted) {
                ++accepted;
                QVERIFY2(consistent(o.file), qPrintable(where + "inconsistent model"));
                QCOMPARE(static_cast<int>(o.file.pieces.size()), r["piece_size"][n].get<int>());
            }
        }
        QVERIFY2(accepted > 0, "no prefix is a loadable model: the comparison is vacuous");
    }

    void single_byte_mutations_never_crash() {
        const json r = read_record("tiny_mutations");
        if (r.is_null()) QFAIL("oracle record tiny_mutations missing (run the oracle_spm_model step)");
        const std::string path = spm_dir() + "/tiny.model";
        const std::string bytes = read_bytes(path);
        QCOMPARE(bytes.size(), r["size"].get<size_t>());
        int refused = 0;
        for (const json& m : r["mutations"]) {
            const size_t offset = m[0].get<size_t>();
            std::string mutated = bytes;
            mutated[offset] = char(uint8_t(mutated[offset]) ^ m[1].get<uint8_t>());
            const Outcome o = parse_outcome(mutated, path);
            const QString where = QString("byte %1 ^ 0x%2: ").arg(offset).arg(m[1].get<int>(), 0, 16);
            QVERIFY2(o.error.rfind("BAD ERROR", 0) != 0, qPrintable(where + QString::fromStdString(o.error)));
            // Where the wire format itself is broken, protobuf refuses it and so must we. (We refuse
            // more than SentencePiece: a known field with the wrong wire type, non-UTF-8 text.)
            if (!m[2].get<bool>()) QVERIFY2(!o.accepted, qPrintable(where + "protobuf refuses it, we accept it"));
            if (o.accepted) QVERIFY2(consistent(o.file), qPrintable(where + "inconsistent model"));
            else ++refused;
        }
        QVERIFY(refused > 0);
    }

    void malformed_files_name_the_file_and_problem_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("problem");
        const std::string full = minimal_pieces().bytes;
        auto row = [](const char* name, const std::string& b, const char* problem) {
            QTest::newRow(name) << QByteArray(b.data(), int(b.size())) << QString(problem);
        };
        row("empty file", "", "no pieces");
        row("truncated key", "\x80", "truncated varint (field key)");
        row("truncated length", "\x0A", "truncated varint (pieces)");
        row("length past end", Proto().key(1, 2).varint(127).raw("abc").bytes, "pieces claims 127 bytes but only 3 remain");
        row("length near 2^64", Proto().key(1, 2).varint(~uint64_t(0)).raw("abc").bytes, "remain");
        row("varint of 11 bytes", Proto().key(99, 0).raw(std::string(10, '\xFF')).raw("\x01").bytes, "varint longer");
        row("field number 0", Proto().key(0, 0).varint(1).bytes, "field number 0 is invalid");
        row("start group", Proto().key(1, 3).bytes, "start-group");
        row("wire type 7", Proto().key(9, 7).bytes, "wire type 7");
        row("pieces as varint", Proto().field_varint(1, 3).bytes, "field 1 (pieces) has wire type varint, expected length-delimited");
        row("score as varint", full + Proto().field_bytes(1, Proto().field_bytes(1, "c").field_varint(2, 1).bytes).bytes,
            "field 2 (score) has wire type varint, expected fixed32");
        row("truncated score", full + Proto().field_bytes(1, Proto().field_bytes(1, "c").key(2, 5).raw("\x01\x02").bytes).bytes,
            "truncated float (score)");
        row("piece string overruns its piece", full + Proto().key(1, 2).varint(3).raw("\x0A\x05" "c").raw("defgh").bytes,
            "piece claims 5 bytes but only 1 remain in its enclosing message");
        row("trainer_spec as fixed32", full + Proto().key(2, 5).raw("abcd").bytes, "field 2 (trainer_spec) has wire type fixed32");
        row("normalizer flag as bytes", full + Proto().field_bytes(3, Proto().field_bytes(3, "x").bytes).bytes,
            "field 3 (add_dummy_prefix) has wire type length-delimited, expected varint");
        row("vocab_size past int32", full + Proto().field_bytes(2, Proto().field_varint(4, uint64_t(1) << 40).bytes).bytes,
            "does not fit int32");
        row("unknown model_type", full + Proto().field_bytes(2, Proto().field_varint(3, 9).bytes).bytes, "unknown model_type 9");
        row("unknown piece type", full + Proto().field_bytes(1, piece("c", 0, 9)).bytes, "unknown piece type 9");
        row("non-UTF-8 piece", full + Proto().field_bytes(1, piece("c\xFF", 0, 1)).bytes, "piece is not valid UTF-8");
        row("overlong UTF-8 piece", full + Proto().field_bytes(1, piece("\xC0\xAF", 0, 1)).bytes, "piece is not valid UTF-8");
        row("non-finite score", full + Proto().field_bytes(1, piece("c", std::numeric_limits<float>::infinity(), 1)).bytes,
            "is not finite");
        row("no pieces", Proto().field_bytes(2, Proto().field_varint(4, 8).bytes).bytes, "no pieces");
        row("empty piece", full + Proto().field_bytes(1, piece("", 0, 1)).bytes, "piece 4 is empty");
        row("NUL in piece", full + Proto().field_bytes(1, piece(std::string("c\0d", 3), 0, 1)).bytes, "NUL");
        row("duplicate piece", full + Proto().field_bytes(1, piece("b", 0, 1)).bytes, "piece 4 ('b') is already defined");
        row("no unknown piece",
            Proto().field_bytes(1, piece("a", 0, 1)).field_bytes(1, piece("b", 0, 1)).bytes, "no piece has type UNKNOWN");
        row("second unknown piece", full + Proto().field_bytes(1, piece("<unk2>", 0, 2)).bytes, "second unknown piece");
        row("only special pieces",
            Proto().field_bytes(1, piece("<unk>", 0, 2)).field_bytes(1, piece("</s>", 0, 3)).bytes, "no normal");
        row("byte piece without byte_fallback", full + Proto().field_bytes(1, piece("<0x41>", 0, 6)).bytes,
            "byte piece although byte_fallback is false");
        row("malformed byte piece", full + Proto().field_bytes(1, piece("<0x4g>", 0, 6)).field_bytes(2, Proto().field_varint(35, 1).bytes).bytes,
            "is not a valid byte piece");
        row("byte_fallback without byte pieces", full + Proto().field_bytes(2, Proto().field_varint(35, 1).bytes).bytes,
            "byte piece 0 is missing");
        row("self_test_data as varint", full + Proto().field_varint(4, 1).bytes, "field 4 (self_test_data)");
        row("not a model at all", "not a sentencepiece model", "malformed SentencePiece model");
    }

    void malformed_files_name_the_file_and_problem() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, problem);
        const std::string path = "/nowhere/model dir/spiece.model";
        try {
            SpmModelFile::parse(std::string(bytes.constData(), size_t(bytes.size())), path);
        } catch (const Error& e) {
            const QString what = QString::fromStdString(e.what());
            QVERIFY2(e.kind() == ErrorKind::Format, qPrintable(what));
            QVERIFY2(what.startsWith(QString::fromStdString(path) + ": "), qPrintable(what));
            QVERIFY2(what.contains(problem), qPrintable("expected '" + problem + "' in: " + what));
            return;
        }
        QFAIL("accepted");
    }

    void well_formed_extras_are_read() {
        // Unknown fields of every wire type are skipped; a repeated message field merges; pad_id -1
        // arrives as a ten-byte varint.
        const std::string path = "/nowhere/spiece.model";
        Proto p = minimal_pieces();
        p.field_bytes(2, Proto().field_varint(43, uint64_t(int64_t(-1))).field_varint(41, 7).field_bytes(1, "corpus.txt").bytes);
        p.key(99, 1).raw("12345678").key(98, 5).raw("1234").field_varint(97, 5).field_bytes(96, "xyz");
        p.field_bytes(2, Proto().field_varint(42, 9).bytes);
        p.field_bytes(3, Proto().field_bytes(1, "identity").field_varint(3, 0).bytes);
        p.field_bytes(5, Proto().field_bytes(1, "denorm").bytes);
        const SpmModelFile f = SpmModelFile::parse(p.bytes, path);
        QCOMPARE(f.pieces.size(), size_t(4));
        QCOMPARE(f.pieces[2].first, std::string("\xE2\x96\x81" "a"));
        QCOMPARE(f.pieces[3].second, -2.5);
        QCOMPARE(f.unk_id, 0);
        QCOMPARE(f.trainer.pad_id, -1);
        QCOMPARE(f.trainer.bos_id, 7);
        QCOMPARE(f.trainer.eos_id, 9);
        QCOMPARE(f.trainer.unk_id, 0);  // proto default
        QCOMPARE(f.normalizer.name, std::string("identity"));
        QCOMPARE(f.normalizer.add_dummy_prefix, false);
        QCOMPARE(f.normalizer.remove_extra_whitespaces, true);  // proto default
        QVERIFY(f.denormalizer.has_value());
        QCOMPARE(f.denormalizer->name, std::string("denorm"));
    }

    void missing_file_is_not_found() {
        try {
            SpmModelFile::load("/nowhere/at/all/spiece.model");
        } catch (const Error& e) {
            QCOMPARE(e.kind(), ErrorKind::NotFound);
            QVERIFY(QString(e.what()).contains("/nowhere/at/all/spiece.model"));
            return;
        }
        QFAIL("no error");
    }

    void bpe_spiece_model_loads_as_a_bpe_tokenizer() {
        // transformers' converters turn a BPE model file into a BPE tokenizer (merges generated
        // from the pieces and scores); NLLB's and Mistral's parity records check that against HF.
        const std::string bpe = spm_dir() + "/bpe.model";
        if (!lorascope::test::exists(bpe)) QFAIL("oracle file bpe.model missing (run the oracle_spm_model step)");
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        {
            std::ofstream out(dir + "/spiece.model", std::ios::binary);
            out << read_bytes(bpe);
        }
        std::unique_ptr<lorascope::Tokenizer> tok;
        try {
            tok = lorascope::load_tokenizer(dir);
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        QCOMPARE(tok->kind(), lorascope::TokenizerKind::SentencePieceBpe);
        const auto file = SpmModelFile::load(bpe);
        const std::string text = "the quick brown fox jumps over the lazy dog";
        const auto ids = tok->encode(text, false);
        QVERIFY(!ids.empty());
        for (int64_t id : ids) QVERIFY(id >= 0 && id < static_cast<int64_t>(file.pieces.size()));
        QCOMPARE(QString::fromStdString(tok->decode(ids)), QString::fromStdString(text));
    }

    void trained_unigram_loads_as_a_tokenizer() {
        // A charsmap, user-defined and control symbols and moved special ids, read by our reader,
        // must make a working tokenizer whose ids are the file's pieces (its encodings are checked
        // against HF on the real T5 file in test_tokenizer_parity).
        const json r = read_record("unigram_nfkc");
        if (r.is_null()) QFAIL("oracle record unigram_nfkc missing (run the oracle_spm_model step)");
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        {
            std::ofstream out(dir + "/spiece.model", std::ios::binary);
            out << read_bytes(r["path"].get<std::string>());
        }
        const auto tok = lorascope::load_tokenizer(dir);
        const json& pieces = r["pieces"];
        std::optional<int64_t> sep;
        for (size_t i = 0; i < pieces.size(); ++i)
            if (pieces[i][0] == "<sep>") sep = int64_t(i);
        QVERIFY(sep.has_value());
        QCOMPARE(tok->token_to_id("<sep>"), sep);
        const std::vector<int64_t> ids = tok->encode("Hello <sep> world", false);
        QVERIFY(std::find(ids.begin(), ids.end(), *sep) != ids.end());
        for (int64_t id : ids) {
            QVERIFY(id >= 0 && size_t(id) < pieces.size());
            QCOMPARE(tok->id_to_token(id), pieces[size_t(id)][0].get<std::string>());
        }
    }
};

LORASCOPE_QTEST_APPLESS_MAIN(TestSpmModelFile)
#include "test_spm_model_file.moc"
