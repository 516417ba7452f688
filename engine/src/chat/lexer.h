// The first pass over a chat template's source: text and tags, with jinja2's whitespace control
// as transformers configures it (trim_blocks: the newline after a block or comment tag goes;
// lstrip_blocks: spaces before a block or comment tag at the start of a line go; `-` strips all
// whitespace on its side, `+` keeps it), newlines normalised to \n and one trailing newline dropped.
// Inside tags: names, numbers, string literals (Python escapes) and operators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lorascope::chat {

enum class TokenType { Data, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
    TokenType type = TokenType::End;
    std::string text;          // Data, Name, String (unescaped), Operator
    int64_t integer = 0;
    double real = 0;
    int line = 1;
};

// Throws lorascope::Error (Format, or Unsupported for constructs left out) naming origin and line.
std::vector<Token> tokenize(const std::string& source, const std::string& origin);

const char* describe(TokenType type);

}  // namespace lorascope::chat
