// smelt: the command-line tool for running, dumping and inspecting graphs.
#include "tools/smelt/commands.h"

#include <fmt/format.h>

#include <map>

namespace smelt::cli {

int fail(const std::string& message) {
  fmt::print(stderr, "smelt: error: {}\n", message);
  return 1;
}

}  // namespace smelt::cli

int main(int argc, char** argv) {
  using namespace smelt::cli;
  CLI::App app{"smelt: define, differentiate, compile and run tensor graphs"};
  app.require_subcommand(1);
  std::map<CLI::App*, Action> actions;
  auto add = [&](Action (*adder)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    Action action = adder(app);
    actions[app.get_subcommands({})[before]] = std::move(action);
  };
  add(addOpsCommand);
  add(addDumpCommand);
  add(addRunCommand);
  add(addGradCommand);
  add(addOptCommand);
  add(addInspectCommand);
  add(addCacheCommand);
  add(addKernelsCommand);
  add(addBenchCommand);
  add(addDevicesCommand);
  add(addTuneCommand);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) return action();
  }
  return fail("no command given");
}
