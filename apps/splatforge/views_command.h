// `splatforge views`: render a training dataset (NeRF-synthetic folder) of a glTF model from the article's
// orbit cameras (src/train/views.h). Its options are declared here; main.cpp, the one file that includes
// CLI11, registers them and dispatches the command.
#pragma once

#include <memory>
#include <string>

#include "train/views.h"

namespace CLI {
class App;
}

namespace sf::cli {

// "MIN,MAX" in degrees with -90 <= MIN < MAX <= 90 (the --belt option); false otherwise.
bool parseBelt(const std::string& text, float& lo, float& hi);

class ViewsCommand {
 public:
  explicit ViewsCommand(CLI::App& app);
  ~ViewsCommand();
  ViewsCommand(const ViewsCommand&) = delete;
  ViewsCommand& operator=(const ViewsCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, 1 with "splatforge views: error: ..." on stderr, or 2 for a usage error.
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::string input;
    std::string output;
    std::string belt = std::to_string(static_cast<int>(train::kBeltMin)) + "," +
                       std::to_string(static_cast<int>(train::kBeltMax));
    std::string lighting = "ao";
    bool json = false;
    train::ViewsOptions views;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
