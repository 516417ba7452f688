#include "chat/lexer.h"

#include "chat/py_text.h"
#include "lorascope/error.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace lorascope::chat {

namespace {

// jinja2 splits the source on \r\n, \r and \n, drops one trailing empty line (keep_trailing_newline
// is off) and joins the lines with \n.
std::string normalize_newlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

class Lexer {
public:
    Lexer(const std::string& source, const std::string& origin) : s_(normalize_newlines(source)), origin_(origin) {}

    std::vector<Token> run() {
        while (pos_ < s_.size() && root()) {
        }
        Token end;
        end.type = TokenType::End;
        end.line = line_;
        out_.push_back(end);
        return std::move(out_);
    }

private:
    [[noreturn]] void fail(ErrorKind kind, const std::string& message) const {
        throw Error(kind, origin_, "line " + std::to_string(line_) + ": " + message);
    }

    void emit(TokenType type, std::string text = {}, int line = 0) {
        Token t;
        t.type = type;
        t.text = std::move(text);
        t.line = line ? line : line_;
        out_.push_back(std::move(t));
    }

    void count_lines(size_t from, size_t to) { line_ += static_cast<int>(std::count(s_.begin() + from, s_.begin() + to, '\n')); }

    // The end of the run of (Unicode) whitespace starting at `pos`.
    size_t skip_space(size_t pos) const {
        while (pos < s_.size()) {
            size_t len = 0;
            if (!py_isspace(tokenizer::utf8_next(s_, pos, &len))) break;
            pos += len;
        }
        return pos;
    }

    bool starts(size_t pos, const char* text) const { return s_.compare(pos, std::char_traits<char>::length(text), text) == 0; }

    // Text up to the next tag; false at the end of the source.
    bool root() {
        size_t p = pos_;
        while (true) {
            p = s_.find('{', p);
            if (p == std::string::npos || p + 1 >= s_.size()) {
                if (pos_ < s_.size()) emit(TokenType::Data, s_.substr(pos_));
                pos_ = s_.size();
                return false;
            }
            if (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#') break;
            ++p;
        }
        const char kind = s_[p + 1];
        size_t q = p + 2;
        char sign = 0;
        if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) sign = s_[q++];
        emit_text_before_tag(p, kind, sign);
        if (kind == '%') refuse_raw(q);
        pos_ = q;
        line_starting_ = false;
        if (kind == '#') comment();
        else tag(kind);
        return true;
    }

    void emit_text_before_tag(size_t tag_at, char kind, char sign) {
        std::string text = s_.substr(pos_, tag_at - pos_);
        const int line = line_;
        count_lines(pos_, tag_at);
        if (sign == '-') {
            text = py_strip(text, std::nullopt, false, true);
        } else if (sign != '+' && kind != '{') {
            // lstrip_blocks: whitespace between the line's start and a block or comment tag.
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
                py_strip(std::string_view(text).substr(l_pos), std::nullopt, true, false).empty())
                text.resize(l_pos);
        }
        if (!text.empty()) emit(TokenType::Data, std::move(text), line);
    }

    void refuse_raw(size_t q) const {
        size_t r = skip_space(q);
        if (!starts(r, "raw")) return;
        r = skip_space(r + 3);
        if (starts(r, "-%}") || starts(r, "%}")) fail(ErrorKind::Unsupported, "{% raw %} blocks are not supported");
    }

    void comment() {
        for (size_t q = pos_; q < s_.size(); ++q) {
            size_t end = 0;
            if (starts(q, "+#}")) end = q + 3;
            else if (starts(q, "-#}")) end = skip_space(q + 3);
            else if (starts(q, "#}")) end = q + 2 + (q + 2 < s_.size() && s_[q + 2] == '\n' ? 1 : 0);
            else continue;
            count_lines(pos_, end);
            line_starting_ = s_[end - 1] == '\n';
            pos_ = end;
            return;
        }
        fail(ErrorKind::Format, "missing end of comment tag");
    }

    // The tag's end at pos_, or 0.
    size_t tag_end(char kind) const {
        if (kind == '%') {
            if (starts(pos_, "+%}")) return pos_ + 3;
            if (starts(pos_, "-%}")) return skip_space(pos_ + 3);
            if (starts(pos_, "%}")) return pos_ + 2 + (pos_ + 2 < s_.size() && s_[pos_ + 2] == '\n' ? 1 : 0);
            return 0;
        }
        if (starts(pos_, "-}}")) return skip_space(pos_ + 3);
        if (starts(pos_, "}}")) return pos_ + 2;
        return 0;
    }

    void tag(char kind) {
        emit(kind == '%' ? TokenType::BlockBegin : TokenType::VariableBegin);
        std::vector<char> balance;  // closing brackets expected, innermost last
        while (true) {
            if (balance.empty()) {
                if (const size_t end = tag_end(kind)) {
                    emit(kind == '%' ? TokenType::BlockEnd : TokenType::VariableEnd);
                    count_lines(pos_, end);
                    line_starting_ = s_[end - 1] == '\n';
                    pos_ = end;
                    return;
                }
            }
            if (pos_ >= s_.size()) fail(ErrorKind::Format, "unexpected end of template inside a tag");
            const size_t space_end = skip_space(pos_);
            if (space_end > pos_) {
                count_lines(pos_, space_end);
                pos_ = space_end;
                continue;
            }
            const char c = s_[pos_];
            if (is_digit(c)) number();
            else if (is_name_start(c)) name();
            else if (c == '\'' || c == '"') string_literal();
            else op(balance);
        }
    }

    // (\d+_)*\d+ at pos: its end, or npos.
    size_t digits(size_t pos) const {
        if (pos >= s_.size() || !is_digit(s_[pos])) return std::string::npos;
        while (true) {
            while (pos < s_.size() && is_digit(s_[pos])) ++pos;
            if (pos + 1 < s_.size() && s_[pos] == '_' && is_digit(s_[pos + 1])) ++pos;
            else return pos;
        }
    }

    size_t exponent(size_t pos) const {
        if (pos >= s_.size() || (s_[pos] != 'e' && s_[pos] != 'E')) return std::string::npos;
        ++pos;
        if (pos < s_.size() && (s_[pos] == '+' || s_[pos] == '-')) ++pos;
        return digits(pos);
    }

    // jinja2's float_re (fraction and/or exponent, not right after a dot), then its integer_re.
    void number() {
        const size_t start = pos_;
        size_t end = std::string::npos;
        if (start == 0 || s_[start - 1] != '.') {
            const size_t whole = digits(start);
            const size_t fraction = (whole < s_.size() && s_[whole] == '.') ? digits(whole + 1) : std::string::npos;
            if (fraction != std::string::npos) {
                const size_t e = exponent(fraction);
                end = e != std::string::npos ? e : fraction;
            } else {
                end = exponent(whole);
            }
        }
        if (end != std::string::npos) {
            std::string text = s_.substr(start, end - start);
            text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
            Token t;
            t.type = TokenType::Float;
            t.line = line_;
            std::from_chars(text.data(), text.data() + text.size(), t.real);
            t.text = text;
            out_.push_back(std::move(t));
            pos_ = end;
            return;
        }
        integer();
    }

    void integer() {
        const size_t start = pos_;
        int base = 10;
        size_t p = start;
        if (s_[p] == '0' && p + 1 < s_.size()) {
            const char b = s_[p + 1];
            base = (b == 'b' || b == 'B') ? 2 : (b == 'o' || b == 'O') ? 8 : (b == 'x' || b == 'X') ? 16 : 10;
        }
        auto digit_ok = [&](char c, int b) { const int v = hex_value(c); return v >= 0 && v < b && (b == 16 || is_digit(c)); };
        std::string digits_text;
        if (base != 10) {
            p = start + 2;
            while (p < s_.size()) {
                if (digit_ok(s_[p], base)) digits_text += s_[p++];
                else if (s_[p] == '_' && p + 1 < s_.size() && digit_ok(s_[p + 1], base)) ++p;
                else break;
            }
            if (digits_text.empty()) base = 10;  // "0b" without digits: the literal is just 0
        }
        if (base == 10) {
            const bool zero = s_[start] == '0';
            p = start;
            digits_text.clear();
            while (p < s_.size()) {
                const char c = s_[p];
                const bool ok = zero ? c == '0' : is_digit(c);
                if (ok) digits_text += s_[p++];
                else if (c == '_' && p + 1 < s_.size() && (zero ? s_[p + 1] == '0' : is_digit(s_[p + 1]))) ++p;
                else break;
            }
        }
        Token t;
        t.type = TokenType::Integer;
        t.line = line_;
        const auto r = std::from_chars(digits_text.data(), digits_text.data() + digits_text.size(), t.integer, base);
        if (r.ec != std::errc()) fail(ErrorKind::Unsupported, "integer literal " + s_.substr(start, p - start) + " is too large");
        t.text = s_.substr(start, p - start);
        out_.push_back(std::move(t));
        pos_ = p;
    }

    void name() {
        size_t p = pos_;
        while (p < s_.size() && is_name_char(s_[p])) ++p;
        if (p < s_.size() && static_cast<unsigned char>(s_[p]) >= 0x80)
            fail(ErrorKind::Unsupported, "names with non-ASCII characters are not supported");
        emit(TokenType::Name, s_.substr(pos_, p - pos_));
        pos_ = p;
    }

    void string_literal() {
        const char quote = s_[pos_];
        size_t p = pos_ + 1;
        while (p < s_.size() && s_[p] != quote) p += (s_[p] == '\\') ? 2 : 1;
        if (p >= s_.size()) fail(ErrorKind::Format, "unterminated string literal");
        const int line = line_;
        std::string value = unescape(s_.substr(pos_ + 1, p - pos_ - 1));
        emit(TokenType::String, std::move(value), line);
        count_lines(pos_, p);
        pos_ = p + 1;
    }

    // Python's unicode_escape decoding of the literal after backslashreplace, as jinja2 does.
    std::string unescape(const std::string& raw) const {
        std::string out;
        size_t i = 0;
        while (i < raw.size()) {
            if (raw[i] != '\\') {
                out += raw[i++];
                continue;
            }
            const char c = raw[i + 1];  // a backslash is always followed by a character here
            i += 2;
            switch (c) {
                case '\n': break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x': append_code_point(out, hex_escape(raw, i, 2)); break;
                case 'u': append_code_point(out, hex_escape(raw, i, 4)); break;
                case 'U': append_code_point(out, hex_escape(raw, i, 8)); break;
                case 'N': fail(ErrorKind::Unsupported, "\\N{...} escapes in string literals are not supported");
                default:
                    if (c >= '0' && c <= '7') {
                        char32_t cp = static_cast<char32_t>(c - '0');
                        for (int k = 0; k < 2 && i < raw.size() && raw[i] >= '0' && raw[i] <= '7'; ++k) cp = cp * 8 + (raw[i++] - '0');
                        append_code_point(out, cp);
                    } else if (static_cast<unsigned char>(c) >= 0x80) {
                        // backslashreplace turned the character into \xHH / \uHHHH / \UHHHHHHHH, whose
                        // own backslash this one escaped: the text of that escape remains.
                        size_t len = 0;
                        const char32_t cp = tokenizer::utf8_next(raw, i - 1, &len);
                        char buf[16];
                        std::snprintf(buf, sizeof buf, cp <= 0xFF ? "\\x%02x" : cp <= 0xFFFF ? "\\u%04x" : "\\U%08x",
                                      static_cast<unsigned>(cp));
                        out += buf;
                        i += len - 1;
                    } else {
                        out += '\\';
                        out += c;
                    }
            }
        }
        return out;
    }

    char32_t hex_escape(const std::string& raw, size_t& i, int n) const {
        char32_t cp = 0;
        for (int k = 0; k < n; ++k) {
            const int v = i < raw.size() ? hex_value(raw[i]) : -1;
            if (v < 0) fail(ErrorKind::Format, "truncated \\" + std::string(1, n == 2 ? 'x' : n == 4 ? 'u' : 'U') + " escape");
            cp = cp * 16 + static_cast<char32_t>(v);
            ++i;
        }
        return cp;
    }

    void append_code_point(std::string& out, char32_t cp) const {
        if (cp > 0x10FFFF) fail(ErrorKind::Format, "illegal Unicode character in a string literal");
        if (cp >= 0xD800 && cp <= 0xDFFF) fail(ErrorKind::Unsupported, "surrogate code points in string literals are not supported");
        tokenizer::utf8_append(out, cp);
    }

    void op(std::vector<char>& balance) {
        static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
        for (const char* two : kTwo) {
            if (starts(pos_, two)) {
                emit(TokenType::Operator, two);
                pos_ += 2;
                return;
            }
        }
        const char c = s_[pos_];
        if (std::string("+-/*%~[](){}><=.:|,;").find(c) == std::string::npos) {
            if (static_cast<unsigned char>(c) >= 0x80) fail(ErrorKind::Unsupported, "non-ASCII characters are not supported inside tags");
            fail(ErrorKind::Format, std::string("unexpected character '") + c + "'");
        }
        if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        if (c == ')' || c == ']' || c == '}') {
            if (balance.empty()) fail(ErrorKind::Format, std::string("unexpected '") + c + "'");
            if (balance.back() != c) fail(ErrorKind::Format, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
            balance.pop_back();
        }
        emit(TokenType::Operator, std::string(1, c));
        ++pos_;
    }

    std::string s_;
    std::string origin_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& origin) { return Lexer(source, origin).run(); }

const char* describe(TokenType type) {
    switch (type) {
        case TokenType::Data: return "template data";
        case TokenType::VariableBegin: return "'{{'";
        case TokenType::VariableEnd: return "'}}'";
        case TokenType::BlockBegin: return "'{%'";
        case TokenType::BlockEnd: return "'%}'";
        case TokenType::Name: return "name";
        case TokenType::String: return "string";
        case TokenType::Integer: return "integer";
        case TokenType::Float: return "float";
        case TokenType::Operator: return "operator";
        case TokenType::End: return "end of template";
    }
    return "token";
}

}  // namespace lorascope::chat
