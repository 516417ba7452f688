// `lorascope --screenshot DIR`: loads the model and adapters, sends the prompts (the demo pack's
// examples compared across every target, then all of them on all targets; or --prompt), lets them
// stream, renders the views to PNGs (shell/screenshot.h), with --lab also runs the lab's preset at
// full speed and renders it, and exits. A model, adapter, request or lab policy that failed still
// gets its screenshots (they show the error state) but the exit status is 1: scripts and tests must
// not mistake them for the real views.
#pragma once

namespace lorascope::ui {

class MainWindow;
struct LaunchOptions;

// Returns the process's exit status; prints each file written to stdout, problems to stderr.
int runScreenshots(MainWindow& window, const LaunchOptions& options);

}  // namespace lorascope::ui
