// What one Submit or Compare sends: every prompt aimed at every chosen target (the base model
// and/or adapters), each request carrying the parameters panel's values with the prompt's own
// overrides on top. A prompt that names its adapter (a .jsonl line's "adapter") goes there alone,
// except in a comparison, which fans out to every target. Client ids of fanned-out prompts gain
// "@<target>" so that each row stays identifiable.
#pragma once

#include <QStringList>
#include <vector>

#include "lorascope/engine.h"
#include "requests/prompt_source.h"

namespace lorascope::ui {

// `targets`: adapter names, "" for the base model. `comparison`: one prompt under every target.
std::vector<Request> fanOutRequests(const std::vector<PromptItem>& prompts, const QStringList& targets,
                                    const GenerationParams& panel, bool comparison);

}  // namespace lorascope::ui
