// What the chat-template engine refuses, and how: constructs outside the subset and syntax errors
// at load (naming the construct, the file and the line), runtime-only refusals at render, and the
// limits that make every hostile template or input end with Error(Unsafe) instead of running long,
// growing large or overflowing the stack. Also: concurrent renders of one parsed template, model
// directories without a (usable) template, and malformed conversations.
#include "lorascope/chat.h"
#include "lorascope/error.h"

#include <QtTest/QtTest>
#include <QTemporaryDir>

#include <fstream>
#include <functional>
#include <thread>

using lorascope::ChatTemplate;
using lorascope::Conversation;
using lorascope::Error;
using lorascope::ErrorKind;

namespace {

Conversation hello() {
    Conversation c;
    c.messages = {{"user", "Hello", ""}};
    return c;
}

std::string render(const std::string& source, const lorascope::ChatRenderOptions& options = {}) {
    return ChatTemplate::parse(source, "t.jinja").render(hello(), options);
}

// `run` must throw Error(kind) naming t.jinja and containing every one of `parts`.
void expect_error(const std::function<void()>& run, ErrorKind kind, std::initializer_list<const char*> parts,
                  const std::string& path = "t.jinja") {
    try {
        run();
    } catch (const Error& e) {
        const std::string what = e.what();
        QVERIFY2(e.kind() == kind, qPrintable(QString("kind %1: %2").arg(lorascope::to_string(e.kind())).arg(what.c_str())));
        QVERIFY2(e.path() == path, qPrintable(QString("path %1: %2").arg(e.path().c_str()).arg(what.c_str())));
        for (const char* part : parts) QVERIFY2(what.find(part) != std::string::npos, qPrintable(QString("'%1' not in: %2").arg(part).arg(what.c_str())));
        return;
    }
    QFAIL("no error");
}

void expect_load_error(const std::string& source, ErrorKind kind, std::initializer_list<const char*> parts) {
    expect_error([&] { ChatTemplate::parse(source, "t.jinja"); }, kind, parts);
}

void expect_render_error(const std::string& source, ErrorKind kind, std::initializer_list<const char*> parts,
                         const lorascope::ChatRenderOptions& options = {}) {
    const ChatTemplate t = ChatTemplate::parse(source, "t.jinja");  // loads: the refusal is the render's
    expect_error([&] { t.render(hello(), options); }, kind, parts);
}

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

void write_file(const QString& path, const std::string& content) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << content;
}

}  // namespace

class TestChatTemplateLimits : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void constructs_outside_the_subset_fail_to_load() {
        expect_load_error("a\nb\n{% include 'other.jinja' %}", ErrorKind::Unsupported, {"line 3", "include"});
        expect_load_error("{% extends 'base.jinja' %}", ErrorKind::Unsupported, {"line 1", "extends"});
        expect_load_error("x\n{% raw %}{{ x }}{% endraw %}", ErrorKind::Unsupported, {"line 2", "raw"});
        expect_load_error("{% macro m() %}{{ caller() }}{% endmacro %}\n{% call m() %}x{% endcall %}", ErrorKind::Unsupported,
                          {"line 2", "call"});
        expect_load_error("{% for x in y recursive %}{{ loop(x) }}{% endfor %}", ErrorKind::Unsupported, {"line 1", "recursive"});
        expect_load_error("\n\n\n{{ messages|wordwrap(20) }}", ErrorKind::Unsupported, {"line 4", "filter 'wordwrap'"});
        expect_load_error("{{ messages|dictsort }}", ErrorKind::Unsupported, {"filter 'dictsort'"});
        expect_load_error("{% if x is sameas y %}{% endif %}", ErrorKind::Unsupported, {"test 'sameas'"});
        expect_load_error("{{ f(*args) }}", ErrorKind::Unsupported, {"*args"});
        expect_load_error("{{ x[1, 2] }}", ErrorKind::Unsupported, {"subscripts with commas"});
        expect_load_error("{{ '\\N{BULLET}' }}", ErrorKind::Unsupported, {"\\N{...}"});
        expect_load_error("{% block body %}x{% endblock %}", ErrorKind::Unsupported, {"block"});
        expect_load_error("{% from 'x' import y %}", ErrorKind::Unsupported, {"from"});
        expect_load_error("{{ 99999999999999999999 }}", ErrorKind::Unsupported, {"integer literal"});
        expect_load_error("{{ café }}", ErrorKind::Unsupported, {"non-ASCII"});
        expect_load_error("{% set ns = namespace(n=0) %}\n{% for m in messages if ns.n < 1 %}{% if true %}{% set ns.n = 1 %}{% endif %}"
                          "{% endfor %}", ErrorKind::Unsupported, {"line 2", "`if` filter"});
    }

    void syntax_errors_fail_to_load() {
        expect_load_error("{% if x %}\nno end", ErrorKind::Format, {"line 2", "unexpected end of template", "'endif'"});
        expect_load_error("{{ x | }}", ErrorKind::Format, {"line 1", "expected a name"});
        expect_load_error("a\n{% endfor %}", ErrorKind::Format, {"line 2", "unknown tag 'endfor'"});
        expect_load_error("{% do x.append(1) %}", ErrorKind::Format, {"unknown tag 'do'"});
        expect_load_error("{{ x|no_such_filter }}", ErrorKind::Format, {"no filter named 'no_such_filter'"});
        expect_load_error("{% if x is no_such_test %}{% endif %}", ErrorKind::Format, {"no test named"});
        expect_load_error("{% break %}", ErrorKind::Format, {"'break' outside a loop"});
        expect_load_error("{{ 'unterminated }}", ErrorKind::Format, {"unterminated string"});
        expect_load_error("{# never closed", ErrorKind::Format, {"missing end of comment"});
        expect_load_error("{{ (1 }}", ErrorKind::Format, {"unexpected '}'"});
        expect_load_error("{% macro m(a=1, b) %}{% endmacro %}", ErrorKind::Format, {"non-default argument"});
        expect_load_error(std::string("{{ 'a") + "\xff" + "' }}", ErrorKind::Format, {"not valid UTF-8"});
    }

    // Cases only a render can see: Python has the method, the engine refuses it, naming it.
    void runtime_refusals_name_the_construct_and_line() {
        expect_render_error("x\n{{ '{}'.format(1) }}", ErrorKind::Unsupported, {"line 2", "'format'"});
        expect_render_error("{{ '%s' % 1 }}", ErrorKind::Unsupported, {"printf-style"});
        expect_render_error("{{ 'Ärger'|upper }}", ErrorKind::Unsupported, {"non-ASCII"});
        expect_render_error("{{ 2 ** 70 }}", ErrorKind::Unsupported, {"64 bits"});
        expect_render_error("{{ messages.append(1) }}", ErrorKind::Unsupported, {"'append'"});
        expect_render_error("{{ ''.__class__ }}", ErrorKind::Unsupported, {"unsafe"});
        expect_render_error("{{ cycler(1, 2) }}", ErrorKind::Unsupported, {"'cycler'"});
        expect_render_error("{{ strftime_now('%G') }}", ErrorKind::Unsupported, {"%G"});
    }

    void hostile_templates_end_at_a_limit() {
        // 10^9 iterations: the loop limit ends it.
        expect_render_error("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}"
                            "{% endfor %}{% endfor %}{% endfor %}", ErrorKind::Unsafe, {"iterations"});
        // Few iterations, much work each: the step budget ends it.
        expect_render_error("{% set s = 'x' * 100000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}", ErrorKind::Unsafe,
                            {"steps"});
        expect_render_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", ErrorKind::Unsafe, {"output"});
        expect_render_error("{{ 'x' * 100000000 }}", ErrorKind::Unsafe, {"string longer"});
        expect_render_error("{{ [1] * 100000000 }}", ErrorKind::Unsafe, {"list longer"});
        expect_render_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                            ErrorKind::Unsafe, {"string longer"});
        expect_render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ErrorKind::Unsafe, {"nested deeper"});
        expect_render_error("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}",
                            ErrorKind::Unsafe, {"nested deeper"});
        expect_render_error("{{ range(1000000) }}", ErrorKind::Unsafe, {"Range too big"});
    }

    void deep_or_large_sources_fail_to_load() {
        expect_load_error("{{ " + repeat("(", 5000) + "1" + repeat(")", 5000) + " }}", ErrorKind::Unsafe, {"nested deeper"});
        expect_load_error("{{ 1" + repeat(" + 1", 100000) + " }}", ErrorKind::Unsafe, {"nested deeper"});
        expect_load_error(repeat("{% if true %}", 2000) + "x" + repeat("{% endif %}", 2000), ErrorKind::Unsafe, {"nested deeper"});
        expect_load_error("{{ " + repeat("not ", 5000) + "x }}", ErrorKind::Unsafe, {"nested deeper"});
        expect_load_error(repeat("x", (1 << 20) + 1), ErrorKind::Unsafe, {"over the limit"});
    }

    void limits_are_the_callers_to_choose() {
        const std::string loop = "{% for i in range(50) %}{{ i }}{% endfor %}";
        QCOMPARE(QString::fromStdString(render(loop)).size(), 90);
        lorascope::ChatRenderOptions tight;
        tight.limits.max_loop_iterations = 10;
        expect_render_error(loop, ErrorKind::Unsafe, {"iterations"}, tight);
        tight = {};
        tight.limits.max_steps = 20;
        expect_render_error(loop, ErrorKind::Unsafe, {"steps"}, tight);
        tight = {};
        tight.limits.max_output_bytes = 50;
        expect_render_error(loop, ErrorKind::Unsafe, {"output"}, tight);
    }

    void hostile_conversations_are_refused() {
        const ChatTemplate t = ChatTemplate::parse("{{ messages|tojson }}", "t.jinja");
        Conversation deep = hello();
        deep.messages[0].extra_json = "{\"x\": " + repeat("[", 100000) + repeat("]", 100000) + "}";
        expect_error([&] { t.render(deep, {}); }, ErrorKind::Unsafe, {"nested deeper"}, "conversation");
        Conversation bad_utf8 = hello();
        bad_utf8.messages[0].content = std::string("caf\xc3");
        expect_error([&] { t.render(bad_utf8, {}); }, ErrorKind::InvalidArgument, {"message 0", "UTF-8"}, "conversation");
        Conversation reserved = hello();
        reserved.variables_json = "{\"messages\": []}";
        expect_error([&] { t.render(reserved, {}); }, ErrorKind::InvalidArgument, {"messages"}, "conversation");
        expect_error([] { lorascope::parse_conversation_json("[{\"role\": \"user\"}]", "", "in.json"); }, ErrorKind::InvalidArgument,
                     {"message 0", "content"}, "in.json");
        expect_error([] { lorascope::parse_conversation_json("[{\"role\": \"user\", \"content\": 5}]", "", "in.json"); },
                     ErrorKind::InvalidArgument, {"string or null"}, "in.json");
        expect_error([] { lorascope::parse_conversation_json("[{\"content\": \"x\"}]", "", "in.json"); }, ErrorKind::InvalidArgument,
                     {"role"}, "in.json");
        expect_error([] { lorascope::parse_conversation_json("[1, 2", "", "in.json"); }, ErrorKind::InvalidArgument, {"malformed JSON"},
                     "in.json");
        expect_error([] { lorascope::parse_conversation_json("[{\"role\": \"user\", \"content\": \"x\", \"n\": 123456789012345678901}]", "", "in.json"); },
                     ErrorKind::Unsupported, {"64 bits"}, "in.json");
    }

    // messages_to_json writes what parse_conversation_json reads, extra fields in their order.
    void messages_round_trip_through_json() {
        const std::vector<lorascope::ChatMessage> messages = {
            {"system", "Be brief.", ""},
            {"assistant", std::nullopt, "{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"b\":1,\"a\":2}}}],\"name\":\"x\"}"},
            {"user", "caf\u00e9 \"quoted\"", ""}};
        const std::string json = lorascope::messages_to_json(messages);
        QCOMPARE(QString::fromStdString(json),
                 QString("[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"assistant\",\"content\":null,"
                         "\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"b\":1,\"a\":2}}}],\"name\":\"x\"},"
                         "{\"role\":\"user\",\"content\":\"caf\u00e9 \\\"quoted\\\"\"}]"));
        const Conversation back = lorascope::parse_conversation_json(json, "", "round trip");
        QCOMPARE(back.messages.size(), messages.size());
        for (size_t i = 0; i < messages.size(); ++i) {
            QCOMPARE(back.messages[i].role, messages[i].role);
            QVERIFY(back.messages[i].content == messages[i].content);
            QCOMPARE(back.messages[i].extra_json, messages[i].extra_json);
        }
    }

    // One parsed template renders on several threads at once, each render as it does alone.
    void concurrent_renders_agree() {
        const ChatTemplate t = ChatTemplate::parse(
            "{% macro line(m) %}{{ m.role }}: {{ m.content|trim }}\n{% endmacro %}{% set ns = namespace(n=0) %}"
            "{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ line(m) }}{% endfor %}{{ ns.n }}",
            "t.jinja");
        Conversation c;
        for (int i = 0; i < 50; ++i) c.messages.push_back({i % 2 ? "assistant" : "user", " turn " + std::to_string(i) + " ", ""});
        const std::string alone = t.render(c, {});
        std::vector<std::string> results(8);
        std::vector<std::thread> threads;
        for (size_t i = 0; i < results.size(); ++i)
            threads.emplace_back([&, i] {
                for (int k = 0; k < 20; ++k) results[i] = t.render(c, {});
            });
        for (auto& th : threads) th.join();
        for (const auto& r : results) QCOMPARE(QString::fromStdString(r), QString::fromStdString(alone));
        QVERIFY(alone.size() > 500);
    }

    void model_directories_without_a_usable_template() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        expect_error([&] { lorascope::ModelChatTemplates::load(d); }, ErrorKind::NotFound, {"no chat template"},
                     d + "/tokenizer_config.json");
        write_file(dir.filePath("tokenizer_config.json"), "{\"chat_template\": 42}");
        expect_error([&] { lorascope::ModelChatTemplates::load(d); }, ErrorKind::Format, {"chat_template"}, d + "/tokenizer_config.json");
        write_file(dir.filePath("tokenizer_config.json"),
                   "{\"eos_token\": \"</s>\", \"chat_template\": [{\"name\": \"rag\", \"template\": \"{{ eos_token }}r\"},"
                   " {\"name\": \"tool_use\", \"template\": \"t{{ tools|length }}\"}, {\"name\": \"broken\", \"template\": \"{% if %}\"}]}");
        const auto templates = lorascope::ModelChatTemplates::load(d);
        QCOMPARE(templates.names().size(), size_t(3));
        expect_error([&] { templates.render(hello(), {}); }, ErrorKind::NotFound, {"none is named 'default'", "rag, tool_use, broken"},
                     d + "/tokenizer_config.json");
        Conversation with_tools = hello();
        with_tools.tools_json = "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]";
        QCOMPARE(QString::fromStdString(templates.render(with_tools, {})), QString("t1"));
        QCOMPARE(QString::fromStdString(templates.render(hello(), {}, "rag")), QString("</s>r"));
        expect_error([&] { templates.render(hello(), {}, "broken"); }, ErrorKind::Format, {"line 1"},
                     d + "/tokenizer_config.json (template 'broken')");
        // Newer transformers save the template beside the config.
        write_file(dir.filePath("tokenizer_config.json"), "{\"bos_token\": \"<s>\"}");
        write_file(dir.filePath("chat_template.jinja"), "{{ bos_token }}{{ messages[0].content }}\n");
        const auto beside = lorascope::ModelChatTemplates::load(d);
        QCOMPARE(QString::fromStdString(beside.render(hello(), {})), QString("<s>Hello"));
        QCOMPARE(QString::fromStdString(beside.origin()), dir.filePath("chat_template.jinja"));
    }

    void strftime_now_reads_the_local_clock_unless_fixed() {
        const std::string year = render("{{ strftime_now('%Y') }}");
        QCOMPARE(int(year.size()), 4);
        lorascope::ChatRenderOptions fixed;
        fixed.now = lorascope::ChatClock{2024, 2, 29, 23, 5, 9};
        QCOMPARE(QString::fromStdString(render("{{ strftime_now('%d %b %Y %a %I:%M %p %j') }}", fixed)), QString("29 Feb 2024 Thu 11:05 PM 060"));
    }
};

QTEST_APPLESS_MAIN(TestChatTemplateLimits)
#include "test_chat_template_limits.moc"
