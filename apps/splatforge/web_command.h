// `splatforge export-web` and `splatforge serve`: the web page (web/, docs/web.md) as a self-contained static
// folder holding one scene (a splat file, or a scene JSON and the splat files it names), and a small HTTP
// server to look at such a folder locally. Their options are declared here; main.cpp, the one file that
// includes CLI11, registers them and dispatches the commands.
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace sf::cli {

class ExportWebCommand {
 public:
  explicit ExportWebCommand(CLI::App& app);
  ~ExportWebCommand();
  ExportWebCommand(const ExportWebCommand&) = delete;
  ExportWebCommand& operator=(const ExportWebCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0; 1 with "splatforge export-web: error: ..." on stderr (an input the web build cannot open, a
  // scene naming objects the page cannot draw, the page's WebAssembly not built, a file that cannot be
  // written); 2 for a usage error.
  int run() const;

  struct Options {
    std::string input;  // a splat file or a scene JSON
    std::string output;
    std::string
        web_build;  // folder holding sf_decode.js and sf_decode.wasm (default: the source tree's build/web)
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

class ServeCommand {
 public:
  explicit ServeCommand(CLI::App& app);
  ~ServeCommand();
  ServeCommand(const ServeCommand&) = delete;
  ServeCommand& operator=(const ServeCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Serves until SIGINT or SIGTERM, then exit code 0; 1 with "splatforge serve: error: ..." when the folder
  // or the address cannot be used.
  int run() const;

  struct Options {
    std::string dir;
    int port = 8080;  // 0: any free port (the line on stdout names it)
    std::string bind = "127.0.0.1";
    bool quiet = false;  // no line per request on stderr
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
