#include "commands.h"
#include "lorascope/error.h"

namespace lorascope::cli {

// Placeholder until its owner lands it: says so instead of pretending.
int cmd_info(int, char**) {
    throw Error(ErrorKind::Unsupported, "'info' is not implemented yet");
}

}  // namespace lorascope::cli
