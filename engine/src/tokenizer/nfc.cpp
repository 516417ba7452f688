#include "tokenizer/nfc.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <vector>

namespace lorascope::tokenizer {

namespace {

struct CombiningClassRange {
    char32_t first, last;
    int ccc;
};
struct Decomposition {
    char32_t cp;
    int offset, length;
};
struct Composition {
    char32_t first, second, composite;
};
#include "tokenizer/nfc_tables.inc"

// Hangul syllables are decomposed and composed arithmetically (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

int combining_class(char32_t cp) {
    if (cp < 0x300) return 0;
    const CombiningClassRange* end = std::end(kCombiningClasses);
    const CombiningClassRange* it = std::upper_bound(std::begin(kCombiningClasses), end, cp,
        [](char32_t value, const CombiningClassRange& r) { return value < r.first; });
    return (it != std::begin(kCombiningClasses) && cp <= (it - 1)->last) ? (it - 1)->ccc : 0;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
    if (cp >= kSBase && cp < kSBase + static_cast<char32_t>(kSCount)) {
        const int s = static_cast<int>(cp - kSBase);
        out.push_back(kLBase + static_cast<char32_t>(s / kNCount));
        out.push_back(kVBase + static_cast<char32_t>((s % kNCount) / kTCount));
        if (s % kTCount != 0) out.push_back(kTBase + static_cast<char32_t>(s % kTCount));
        return;
    }
    const Decomposition* end = std::end(kDecompositions);
    const Decomposition* it = std::lower_bound(std::begin(kDecompositions), end, cp,
        [](const Decomposition& d, char32_t value) { return d.cp < value; });
    if (it == end || it->cp != cp) {
        out.push_back(cp);
        return;
    }
    out.insert(out.end(), kDecompositionData + it->offset, kDecompositionData + it->offset + it->length);
}

char32_t compose(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + static_cast<char32_t>(((a - kLBase) * kVCount + (b - kVBase)) * kTCount);
    if (a >= kSBase && a < kSBase + static_cast<char32_t>(kSCount) && (a - kSBase) % kTCount == 0 && b > kTBase &&
        b < kTBase + kTCount)
        return a + (b - kTBase);
    const Composition* end = std::end(kCompositions);
    const Composition* it = std::lower_bound(std::begin(kCompositions), end, std::make_pair(a, b),
        [](const Composition& c, const std::pair<char32_t, char32_t>& v) {
            return c.first != v.first ? c.first < v.first : c.second < v.second;
        });
    return (it != end && it->first == a && it->second == b) ? it->composite : 0;
}

// NFC of a run of code points (valid text between ill-formed bytes).
void nfc_run(std::vector<char32_t>& cps, std::string& out) {
    std::vector<char32_t> d;
    d.reserve(cps.size());
    for (char32_t cp : cps) decompose(cp, d);
    // Canonical ordering: each run of non-starters sorted by class, stably.
    for (size_t i = 0; i < d.size();) {
        if (combining_class(d[i]) == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < d.size() && combining_class(d[j]) != 0) ++j;
        std::stable_sort(d.begin() + static_cast<long>(i), d.begin() + static_cast<long>(j),
                         [](char32_t x, char32_t y) { return combining_class(x) < combining_class(y); });
        i = j;
    }
    // Canonical composition: a character combines with the last starter unless a character
    // between them has a class >= its own (or it follows a non-combined starter).
    std::vector<char32_t> c;
    c.reserve(d.size());
    size_t starter = std::string::npos;
    int last_class = -1;  // class of the last character after the starter; -1 when adjacent
    for (char32_t ch : d) {
        const int cc = combining_class(ch);
        if (starter != std::string::npos && !(last_class != -1 && last_class >= cc)) {
            if (const char32_t composite = compose(c[starter], ch)) {
                c[starter] = composite;
                continue;
            }
        }
        if (cc == 0) {
            starter = c.size();
            last_class = -1;
        } else {
            last_class = cc;
        }
        c.push_back(ch);
    }
    for (char32_t cp : c) utf8_append(out, cp);
    cps.clear();
}

}  // namespace

std::string nfc(std::string_view text) {
    // ASCII text is its own NFC (no decompositions; every class is 0 and no pair composes).
    if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
        return std::string(text);
    std::string out;
    out.reserve(text.size());
    std::vector<char32_t> run;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len;
        const char32_t cp = utf8_next(text, pos, &len);
        const bool ill_formed = cp == 0xFFFD && text.compare(pos, len, "\xEF\xBF\xBD") != 0;
        if (ill_formed) {
            nfc_run(run, out);
            out.append(text.substr(pos, len));
        } else {
            run.push_back(cp);
        }
        pos += len;
    }
    nfc_run(run, out);
    return out;
}

}  // namespace lorascope::tokenizer
