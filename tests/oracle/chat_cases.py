"""The inputs of the chat-template oracle (chat_oracle.py): conversations, tools, and which
template takes which, plus the special tokens each model's tokenizer_config.json declares.

Nothing here is an expected output: chat_oracle.py renders every case with transformers' own
apply_chat_template and records what it returns (or the error it raises).
"""

# bos/eos as each model's tokenizer_config.json on the Hugging Face hub declares them (the models
# of ../shared/chat-templates/SOURCES.md; a null token is absent, so the template sees it undefined).
SPECIAL_TOKENS = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": {"eos_token": "<|im_end|>"},
    "Qwen-Qwen3-0.6B.jinja": {"eos_token": "<|im_end|>"},
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": {"bos_token": "<｜begin▁of▁sentence｜>",
                                                       "eos_token": "<｜end▁of▁sentence｜>"},
    "google-gemma-2-2b-it.jinja": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "ibm-granite-granite-3.3-2B-Instruct.jinja": {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"},
    "meta-llama-Llama-3.1-8B-Instruct.jinja": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "meta-llama-Llama-3.2-3B-Instruct.jinja": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "microsoft-Phi-3.5-mini-instruct.jinja": {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": {"bos_token": "<s>", "eos_token": "</s>"},
}

# Templates that lay out tools (the others ignore them).
TOOL_TEMPLATES = {
    "Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "meta-llama-Llama-3.2-3B-Instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "ibm-granite-granite-3.3-2B-Instruct.jinja",
}

# strftime_now's clock while recording (a Saturday): the C++ tests pass the same.
FIXED_NOW = (2026, 12, 5, 9, 30, 0)

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"},
                                      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                       "required": ["city"]},
        "return": {"type": "object", "description": "temperature and sky"}}},
    {"type": "function", "function": {
        "name": "search_notes",
        "description": "Full-text search over the user's notes — returns titles «quoted».",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                       "required": ["query"]}}},
]

TOOL_CALL = {"id": "abcDEF123", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}

SYSTEM = {"role": "system", "content": "You are a terse assistant. Answer in one line."}
USER_1 = {"role": "user", "content": "What's 2+2?"}
ASSISTANT_1 = {"role": "assistant", "content": "4."}
USER_2 = {"role": "user", "content": "And 3+3? Quote: \"x\" \\ path {{ not a tag }} 100% </s>"}
ASSISTANT_2 = {"role": "assistant", "content": "6, as \"asked\"."}

# name -> (messages, tools, variables, which templates: "all" | "tools" | a set of file names)
CONVERSATIONS = {
    "single_user": ([USER_1], None, None, "all"),
    "system_single": ([SYSTEM, USER_1], None, None, "all"),
    "multi_turn": ([USER_1, ASSISTANT_1, USER_2], None, None, "all"),
    "system_multi_turn_ends_assistant": ([SYSTEM, USER_1, ASSISTANT_1, USER_2, ASSISTANT_2], None, None, "all"),
    "unicode_and_whitespace": ([{"role": "user", "content": "  Ünïcödé 中文 🙂\tand a tab \n\n"},
                                {"role": "assistant", "content": "\n Noted: ½ · ‘quotes’ \u2028 end  "},
                                {"role": "user", "content": "Thanks\u00a0!"}], None, None, "all"),
    "empty_contents": ([{"role": "user", "content": ""}, {"role": "assistant", "content": ""},
                        {"role": "user", "content": " "}], None, None, "all"),
    # Content templates treat specially: DeepSeek-R1 drops what precedes </think>, Qwen3 moves it
    # into a <think> block for turns after the last user query.
    "assistant_thinks": ([USER_1, {"role": "assistant", "content": "<think>\nadd two and two\n</think>\n\nIt is 4."},
                          USER_2], None, None, "all"),
    "assistant_thinks_last": ([SYSTEM, USER_1, {"role": "assistant", "content": "<think>\nsimple sum\n</think>\n\n4."}],
                              None, None, "all"),
    "reasoning_content": ([USER_1, {"role": "assistant", "content": "4.", "reasoning_content": "two plus two"}],
                          None, None, {"Qwen-Qwen3-0.6B.jinja"}),
    "thinking_disabled": ([USER_1], None, {"enable_thinking": False}, {"Qwen-Qwen3-0.6B.jinja"}),
    "roles_do_not_alternate": ([USER_1, USER_2], None, None, "all"),
    "tools_question": ([USER_1], TOOLS, None, "tools"),
    "tools_system_question": ([SYSTEM, USER_2], TOOLS, None, "tools"),
    "tool_call_and_result": ([SYSTEM, {"role": "user", "content": "Weather in Paris?"},
                              {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
                              {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather",
                               "content": "{\"temperature\": 18, \"sky\": \"clear\"}"}],
                             TOOLS, None, "tools"),
    "tool_call_then_answer": ([{"role": "user", "content": "Weather in Paris?"},
                               {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
                               {"role": "tool", "tool_call_id": "abcDEF123", "content": "18 degrees, clear"},
                               {"role": "assistant", "content": "It is 18 °C and clear in Paris."},
                               {"role": "user", "content": "Thanks"}],
                              TOOLS, None, "tools"),
    "llama_builtin_tools": ([{"role": "user", "content": "Search the web for llamas."},
                             {"role": "assistant", "content": None,
                              "tool_calls": [{"type": "function", "function": {"name": "brave_search",
                                                                               "arguments": {"query": "llamas"}}}]}],
                            None, {"builtin_tools": ["brave_search", "code_interpreter"]},
                            {"meta-llama-Llama-3.1-8B-Instruct.jinja"}),
    "llama_tools_in_system": ([SYSTEM, USER_1], TOOLS, {"tools_in_user_message": False, "date_string": "01 Jan 2025"},
                              {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja"}),
    "granite_documents": ([USER_1], None, {"documents": [{"doc_id": 1, "text": "Paris is in France."},
                                                         {"doc_id": "b2", "text": "Two plus two is four."}],
                                           "controls": {"citations": True, "length": "short"}},
                          {"ibm-granite-granite-3.3-2B-Instruct.jinja"}),
    "granite_thinking": ([USER_1], None, {"thinking": True}, {"ibm-granite-granite-3.3-2B-Instruct.jinja"}),
}


def applies(which, template):
    if which == "all":
        return True
    if which == "tools":
        return template in TOOL_TEMPLATES
    return template in which
