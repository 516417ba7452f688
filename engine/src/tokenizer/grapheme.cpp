#include "tokenizer/grapheme.h"

#include "tokenizer/unicode.h"

namespace lorascope::tokenizer {

namespace {

// Values of kGraphemeBreak (order of GCB_VALUES in gen_unicode_tables.py).
enum Gcb { Other = 0, CR, LF, Control, Extend, ZWJ, RegionalIndicator, Prepend, SpacingMark, L, V, T, LV, LVT };
// Values of kIndicConjunctBreak.
enum Incb { None = 0, Consonant, Linker, IncbExtend };

bool breaks_line(int g) { return g == CR || g == LF || g == Control; }

}  // namespace

size_t next_grapheme_end(std::string_view text, size_t pos) {
    size_t len;
    char32_t cp = utf8_next(text, pos, &len);
    size_t end = pos + len;
    int prev = grapheme_break_class(cp);
    int regional = prev == RegionalIndicator ? 1 : 0;       // consecutive RIs so far
    int emoji = is_extended_pictographic(cp) ? 1 : 0;       // 1: ExtPict Extend*, 2: ... ZWJ
    int conjunct = indic_conjunct_break_class(cp) == Consonant ? 1 : 0;  // 1: Consonant [Ext|Lnk]*, 2: a Linker seen
    while (end < text.size()) {
        cp = utf8_next(text, end, &len);
        const int cur = grapheme_break_class(cp);
        const int incb = indic_conjunct_break_class(cp);
        const bool pict = is_extended_pictographic(cp);
        bool join;
        if (prev == CR && cur == LF) join = true;                                          // GB3
        else if (breaks_line(prev) || breaks_line(cur)) join = false;                      // GB4, GB5
        else if (prev == L && (cur == L || cur == V || cur == LV || cur == LVT)) join = true;  // GB6
        else if ((prev == LV || prev == V) && (cur == V || cur == T)) join = true;        // GB7
        else if ((prev == LVT || prev == T) && cur == T) join = true;                     // GB8
        else if (cur == Extend || cur == ZWJ || cur == SpacingMark) join = true;          // GB9, GB9a
        else if (prev == Prepend) join = true;                                            // GB9b
        else if (conjunct == 2 && incb == Consonant) join = true;                         // GB9c
        else if (emoji == 2 && pict) join = true;                                         // GB11
        else if (prev == RegionalIndicator && cur == RegionalIndicator) join = regional % 2 == 1;  // GB12, GB13
        else join = false;                                                                // GB999
        if (!join) break;

        if (pict) emoji = 1;
        else if (emoji == 1 && cur == Extend) emoji = 1;
        else if (emoji == 1 && cur == ZWJ) emoji = 2;
        else emoji = 0;
        if (incb == Consonant) conjunct = 1;
        else if (conjunct >= 1 && incb == Linker) conjunct = 2;
        else if (!(conjunct >= 1 && incb == IncbExtend)) conjunct = 0;
        regional = cur == RegionalIndicator ? regional + 1 : 0;
        prev = cur;
        end += len;
    }
    return end;
}

}  // namespace lorascope::tokenizer
