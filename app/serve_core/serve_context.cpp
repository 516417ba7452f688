#include "serve_context.h"

#include <algorithm>

namespace lorascope::serve {

ServingSlot& ServingSlot::operator=(ServingSlot&& other) noexcept {
    if (this != &other) {
        release();
        context_ = other.context_;
        other.context_ = nullptr;
    }
    return *this;
}

void ServingSlot::release() {
    if (context_) context_->release_slot();
    context_ = nullptr;
}

ServingSlot ServeContext::try_take_slot() {
    int64_t now = serving_.load();
    while (now < options.limits.max_connections)
        if (serving_.compare_exchange_weak(now, now + 1)) {
            metrics->set_connections(now + 1);
            return ServingSlot(this);
        }
    return ServingSlot();
}

void ServeContext::release_slot() { metrics->set_connections(--serving_); }

bool ServeContext::try_reserve_reading(int64_t bytes) {
    int64_t now = reading_bytes_.load();
    while (now + bytes <= options.limits.max_reading_bytes)
        if (reading_bytes_.compare_exchange_weak(now, now + bytes)) return true;
    return false;
}

void ServeContext::release_reading(int64_t bytes) { reading_bytes_ -= bytes; }

void ServeContext::prepare_request(ParsedRequest& request) {
    if (request.local_adapter) {
        std::lock_guard<std::mutex> lock(local_adapters_mutex_);
        request.request.adapter = load_local_adapter_for(*request.local_adapter,
                                                         adapter_directory ? &*adapter_directory : nullptr, engine);
    }
    fit_to_budget(request, model, tokenizer);
}

int64_t ServeContext::requests_in_flight() const { return std::max<int64_t>(open_requests, metrics->requests_in_engine()); }

}  // namespace lorascope::serve
