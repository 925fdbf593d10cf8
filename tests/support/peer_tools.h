// Independent peer tools for interop tests: the npm packages under tools/interop/node_modules (installed by
// scripts/setup.sh) run with node. A test that needs one skips when it is absent, and fails under CI=true.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support.h"

namespace sf::test {

// The node executable found on PATH; empty when there is none.
std::string nodeExecutable();

// Full path of a file under tools/interop/node_modules (e.g. "splat-transform-3/bin/cli.mjs"); empty when
// it does not exist.
std::string peerToolPath(const std::string& relative);

// A finished command: its exit code (-1 when it could not run or was killed), stdout and stderr.
struct CommandResult {
  std::string command;  // as run, for messages
  int exit_code = -1;
  std::string out, err;
};

// Runs a program with arguments (no shell: each argument is passed as is) and waits for it.
CommandResult runCommand(const std::vector<std::string>& argv);

// Runs `node <peerToolPath(tool)> args...`; the tool must exist (see SF_REQUIRE_PEER_TOOL).
CommandResult runPeer(const std::string& tool, const std::vector<std::string>& args);

// Success when the command exited with 0; otherwise a failure naming the command, its exit code and its
// stderr (and stdout when stderr is empty). Use as EXPECT_TRUE(succeeded(result)).
::testing::AssertionResult succeeded(const CommandResult& result);

// Skips (fails under CI) the current test when node or the peer tool is missing; `var` becomes its path.
#define SF_REQUIRE_PEER_TOOL(var, relative)                                                    \
  const std::string var = ::sf::test::peerToolPath(relative);                                  \
  if (::sf::test::nodeExecutable().empty())                                                    \
    SF_SKIP_OR_FAIL("node is not on PATH (scripts/setup.sh installs it with the peer tools)"); \
  if (var.empty())                                                                             \
  SF_SKIP_OR_FAIL("peer tool tools/interop/node_modules/" << relative                          \
                                                          << " is missing (scripts/setup.sh installs it)")

}  // namespace sf::test
