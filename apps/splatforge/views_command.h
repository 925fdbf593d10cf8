// `splatforge views`: render a training dataset (NeRF-synthetic folder) of a glTF model from the article's orbit cameras (src/train/views.h). Declared here so that
// main.cpp registers the command in one line and dispatches it in another, as for `hull`.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace sf::cli {

class ViewsCommand {
 public:
  explicit ViewsCommand(CLI::App& app);
  ~ViewsCommand();
  ViewsCommand(const ViewsCommand&) = delete;
  ViewsCommand& operator=(const ViewsCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0, or 1 with "splatforge views: error: ..." on stderr.
  int run() const;

  struct Options;

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
