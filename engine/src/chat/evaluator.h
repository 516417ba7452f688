// Runs a parsed chat template (ast.h) over a context of variables, with jinja2's runtime semantics
// as transformers sets it up (an ImmutableSandboxedEnvironment: no attribute starting with '_', no
// method that changes a list or dict). Scopes follow jinja2: a for loop's body gets a fresh scope
// per iteration, a macro sees the scope it was defined in, `if` opens none.
//
// Every evaluation step, loop iteration and byte built is counted against the limits, and nesting
// (statements, expressions and macro calls) against four times max_depth, so that no template and
// no input can make a render run long, grow large or exhaust the stack: each limit ends the render
// with Error(Unsafe) naming the line.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "chat/builtins.h"
#include "chat/render_error.h"
#include "chat/value.h"
#include "lorascope/chat.h"
#include "lorascope/error.h"

namespace lorascope::chat {

struct Scope {
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Value>> vars;
    Value* find_local(const std::string& name);
    void set(const std::string& name, Value value);
};

class Evaluator {
public:
    Evaluator(const ast::Body& program, const std::string& origin, const ChatTemplateLimits& limits,
              std::vector<std::pair<std::string, Value>> context, std::optional<ChatClock> clock);

    std::string render();

    // For builtins (filters, tests, methods, globals).
    Value eval(const ast::Expr& e);
    Value getattr(const Value& object, const std::string& name);
    Value getitem(const Value& object, const Value& key);
    Value call(const Value& callee, CallArgs& args);
    std::vector<Value> iterate(const Value& value);  // consumes iterators
    Value apply_filter_chain(const ast::Expr& filter, const Value& subject);
    void charge(int64_t units);                       // RenderError(Unsafe) past max_steps
    void charge_bytes(size_t bytes) { charge(static_cast<int64_t>(bytes / 16) + 1); }
    void check_string(const std::string& s) const;    // no string larger than max_output_bytes
    Value make_sequence(std::vector<Value> items, SeqKind kind = SeqKind::List);
    Value make_dict(std::vector<std::pair<Value, Value>> items);  // merges duplicate keys
    const ChatTemplateLimits& limits() const { return limits_; }
    const std::optional<ChatClock>& clock() const { return clock_; }
    const std::string& origin() const { return origin_; }
    [[noreturn]] void fail(ErrorKind kind, int line, const std::string& message) const;

    // Macros (macro.cpp) run a body in a scope of their own.
    enum class Flow { Normal, Break, Continue };
    Flow exec_body(const ast::Body& body);
    std::string capture(const ast::Body& body, const std::shared_ptr<Scope>& scope);
    Value eval_in(const ast::Expr& e, const std::shared_ptr<Scope>& scope);
    std::shared_ptr<Scope> scope() const { return scope_; }

private:
    struct DepthGuard {
        DepthGuard(Evaluator& ev, int line);
        ~DepthGuard() { --ev.depth_; }
        Evaluator& ev;
    };
    // Runs one statement or expression at `line`: one step, one level of nesting, and the
    // RenderErrors of what it runs placed at that line.
    template <class Run>
    auto at_line(int line, Run&& run) -> decltype(run()) {
        DepthGuard guard(*this, line);
        try {
            charge(1);
            return run();
        } catch (const RenderError& e) {
            fail(e.kind(), line, e.what());
        }
    }

    Flow exec(const ast::Stmt& s);
    Flow exec_inner(const ast::Stmt& s);
    Flow exec_for(const ast::Stmt& s);
    void exec_set(const ast::Stmt& s);
    void exec_set_attribute(const std::string& name, const std::string& attribute, Value value, int line);
    void exec_set_block(const ast::Stmt& s);
    void exec_with(const ast::Stmt& s);
    std::vector<Value> loop_items(const ast::Stmt& s, const Value& iterable);
    void bind_targets(const std::vector<std::string>& targets, bool tuple_target, const Value& value);
    void write(const std::string& text, int line);

    Value eval_inner(const ast::Expr& e);
    Value eval_name(const ast::Expr& e);
    Value eval_literal_container(const ast::Expr& e);
    Value eval_slice(const ast::Expr& e);
    Value eval_call(const ast::Expr& e);
    Value eval_filter(const ast::Expr& e, const Value* subject_override);
    bool eval_test(const ast::Expr& e);
    Value eval_compare(const ast::Expr& e);
    Value eval_concat(const ast::Expr& e);
    CallArgs eval_args(const ast::Expr& e, size_t first);

    const ast::Body& program_;
    std::string origin_;
    ChatTemplateLimits limits_;
    std::vector<std::pair<std::string, Value>> context_;  // the render's variables (messages, tools, ...)
    std::optional<ChatClock> clock_;
    std::shared_ptr<Scope> scope_;
    std::string* out_ = nullptr;
    int depth_ = 0;
    int64_t steps_ = 0;
    int64_t loop_iterations_ = 0;
};

}  // namespace lorascope::chat
