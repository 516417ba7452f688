#include "serve_session.h"

#include "serve_chat.h"

#include <cstdio>
#include <ctime>

namespace lorascope::serve {

EventQueue::EventQueue(std::shared_ptr<Metrics> metrics, Clock::time_point received, std::function<void()> notify)
    : metrics_(std::move(metrics)), received_(received), notify_(std::move(notify)) {}

void EventQueue::on_token(const TokenEvent& event) { push(SinkEvent{false, event, {}}); }

void EventQueue::on_finish(const FinishEvent& event) {
    double validation_s = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        validation_s = validation_s_;
    }
    const double total_s = std::chrono::duration<double>(Clock::now() - received_).count();
    metrics_->on_finished(event, validation_s, total_s);
    push(SinkEvent{true, {}, event});
}

void EventQueue::set_validation_seconds(double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    validation_s_ = seconds;
}

void EventQueue::push(SinkEvent event) {
    bool call = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        events_.push_back(std::move(event));
        call = !notified_ && notify_;
        notified_ = true;
    }
    cv_.notify_all();
    if (call) notify_();
}

std::vector<SinkEvent> EventQueue::take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<SinkEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    notified_ = false;
    return out;
}

bool EventQueue::wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
}

Generation::Generation(ServeContext& context, ParsedRequest request, Dialect dialect, bool wrap_in_list,
                       Clock::time_point received)
    : context_(context),
      request_(std::move(request)),
      dialect_(dialect),
      wrap_in_list_(wrap_in_list),
      received_(received),
      completion_id_(dialect == Dialect::OpenAI
                         ? (request_.chat ? "chatcmpl-" : "cmpl-") + std::to_string(++context.completion_counter)
                         : std::string()),
      created_(static_cast<int64_t>(std::time(nullptr))),
      writer_(request_, dialect == Dialect::OpenAI, completion_id_, created_),
      open_(context.open_requests) {}

Generation::~Generation() {
    if (submitted_ && !finished_) cancel(false);
}

void Generation::start(std::function<void()> notify) {
    queue_ = std::make_shared<EventQueue>(context_.metrics, received_, std::move(notify));
    queue_->set_validation_seconds(std::chrono::duration<double>(Clock::now() - received_).count());
    context_.metrics->on_submitted();
    submitted_ = true;
    id_ = context_.engine.submit(request_.request, queue_);
}

void Generation::cancel(bool client_gone) {
    if (!submitted_ || finished_ || cancelled_) return;
    cancelled_ = true;
    context_.engine.cancel(id_);
    if (client_gone) context_.metrics->on_client_disconnect();
}

Generation::Progress Generation::advance() {
    Progress p;
    if (request_.stream && !began_) {
        began_ = true;
        p.events = writer_.begin();
    }
    if (!queue_) return p;
    for (auto& e : queue_->take()) {
        if (finished_) break;
        if (!e.finished) {
            if (request_.stream) p.events += writer_.token(e.token);
            else tokens_.push_back(std::move(e.token));
            continue;
        }
        finished_ = true;
        const FinishEvent& f = e.finish;
        if (f.reason == FinishReason::Error)   // the server's log keeps what the client is not told
            std::fprintf(stderr, "lorascope-cli serve: request %llu failed: %s\n", static_cast<unsigned long long>(id_),
                         f.error.c_str());
        if (request_.stream) p.events += writer_.finish(f);
        else if (dialect_ == Dialect::OpenAI && request_.chat)
            p.reply = openai_chat_whole_reply(request_, f, tokens_, completion_id_, created_);
        else if (dialect_ == Dialect::OpenAI) p.reply = openai_whole_reply(request_, f, tokens_, completion_id_, created_);
        else p.reply = lorax_whole_reply(request_, f, tokens_, context_.model, context_.tokenizer, wrap_in_list_);
    }
    p.finished = finished_;
    return p;
}

Generation::Progress Generation::run_to_end(std::chrono::milliseconds timeout) {
    Progress all;
    const auto deadline = Clock::now() + timeout;
    while (!all.finished && Clock::now() < deadline) {
        if (queue_) queue_->wait(std::chrono::milliseconds(20));
        Progress p = advance();
        all.events += p.events;
        if (p.reply) all.reply = std::move(p.reply);
        all.finished = p.finished;
    }
    return all;
}

}  // namespace lorascope::serve
