// Viewer scripts (view/view_script.h): every command parses with its arguments, relative paths resolve
// against the script's directory, and every malformed line is refused with "<path>:<line>: <reason>".
#include "view/view_script.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace sf {
namespace {

using view::ScriptCommand;

TEST(ViewScript, ParsesEveryCommand) {
  const std::string text =
      "# a comment, then a blank line\n"
      "\n"
      "camera cam.json\n"
      "orbit 90 -20.5 3\n"
      "  KEY  Space  \n"
      "time 1.25\n"
      "wait 4\n"
      "wait Settled\n"
      "drop /abs/biker.spz\n"
      "screenshot out/a.png\n"
      "screenshot-ui b.png\n"
      "quit\n";
  const std::vector<ScriptCommand> s = view::parseViewerScript(text, "/scripts/run.txt");
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(s[0].kind, ScriptCommand::Kind::kCamera);
  EXPECT_EQ(s[0].path, "/scripts/cam.json");
  EXPECT_EQ(s[0].line, 3);
  EXPECT_EQ(s[1].kind, ScriptCommand::Kind::kOrbit);
  EXPECT_EQ(s[1].values[0], 90.0);
  EXPECT_EQ(s[1].values[1], -20.5);
  EXPECT_EQ(s[1].values[2], 3.0);
  EXPECT_EQ(s[2].kind, ScriptCommand::Kind::kKey);
  EXPECT_EQ(s[2].key, "space");
  EXPECT_EQ(s[3].kind, ScriptCommand::Kind::kTime);
  EXPECT_EQ(s[3].values[0], 1.25);
  EXPECT_EQ(s[4].kind, ScriptCommand::Kind::kWait);
  EXPECT_EQ(s[4].values[0], 4.0);
  EXPECT_TRUE(s[4].key.empty());
  EXPECT_EQ(s[5].kind, ScriptCommand::Kind::kWait);
  EXPECT_EQ(s[5].key, "settled");
  EXPECT_EQ(s[6].kind, ScriptCommand::Kind::kDrop);
  EXPECT_EQ(s[6].path, "/abs/biker.spz");
  EXPECT_EQ(s[7].kind, ScriptCommand::Kind::kScreenshot);
  EXPECT_EQ(s[7].path, "/scripts/out/a.png");
  EXPECT_FALSE(s[7].overlay);
  EXPECT_TRUE(s[8].overlay);
  EXPECT_EQ(s[9].kind, ScriptCommand::Kind::kQuit);
  EXPECT_EQ(s[9].line, 12);
  // Character commands; a morph target's name may hold spaces.
  const std::vector<ScriptCommand> c = view::parseViewerScript(
      "clip Walk\nexpression Key 1 0.75\nexpression jawOpen 1\nlook-at 12 34.5\nlook-at OFF\nresize "
      "200x150\n",
      "x.txt");
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[5].kind, ScriptCommand::Kind::kResize);
  EXPECT_EQ(c[5].values[0], 200.0);
  EXPECT_EQ(c[5].values[1], 150.0);
  EXPECT_EQ(c[0].kind, ScriptCommand::Kind::kClip);
  EXPECT_EQ(c[0].key, "Walk");
  EXPECT_EQ(c[1].kind, ScriptCommand::Kind::kExpression);
  EXPECT_EQ(c[1].key, "Key 1");
  EXPECT_EQ(c[1].values[0], 0.75);
  EXPECT_EQ(c[2].key, "jawOpen");
  EXPECT_EQ(c[3].kind, ScriptCommand::Kind::kLookAt);
  EXPECT_EQ(c[3].key, "");
  EXPECT_EQ(c[3].values[0], 12.0);
  EXPECT_EQ(c[3].values[1], 34.5);
  EXPECT_EQ(c[4].key, "off");
  // The first-look commands: grid, turntable, upright flip, camera export.
  const std::vector<ScriptCommand> f = view::parseViewerScript(
      "grid on\nGRID Off\nturntable 30\nturntable -12.5\nturntable off\nupright-flip on\nupright-flip off\n"
      "save-camera cams/a.json\nkey g\nkey T\nkey u\n",
      "/s/x.txt");
  ASSERT_EQ(f.size(), 11u);
  const std::vector<ScriptCommand> post = view::parseViewerScript("post on\nPOST Off\n", "/s/x.txt");
  ASSERT_EQ(post.size(), 2u);
  EXPECT_EQ(post[0].kind, ScriptCommand::Kind::kPost);
  EXPECT_EQ(post[0].key, "on");
  EXPECT_EQ(post[1].key, "off");
  EXPECT_EQ(f[0].kind, ScriptCommand::Kind::kGrid);
  EXPECT_EQ(f[0].key, "on");
  EXPECT_EQ(f[1].key, "off");
  EXPECT_EQ(f[2].kind, ScriptCommand::Kind::kTurntable);
  EXPECT_EQ(f[2].key, "");
  EXPECT_EQ(f[2].values[0], 30.0);
  EXPECT_EQ(f[3].values[0], -12.5);
  EXPECT_EQ(f[4].key, "off");
  EXPECT_EQ(f[5].kind, ScriptCommand::Kind::kUprightFlip);
  EXPECT_EQ(f[5].key, "on");
  EXPECT_EQ(f[6].key, "off");
  EXPECT_EQ(f[7].kind, ScriptCommand::Kind::kSaveCamera);
  EXPECT_EQ(f[7].path, "/s/cams/a.json");
  EXPECT_EQ(f[8].key, "g");
  EXPECT_EQ(f[9].key, "t");
  EXPECT_EQ(f[10].key, "u");
  // A script given by a bare file name resolves against the working directory.
  EXPECT_EQ(view::parseViewerScript("camera c.json\n", "run.txt")[0].path, "c.json");
}

TEST(ViewScript, RefusesMalformedLinesNamingTheLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"zoom 3", "s.txt:1: unknown command 'zoom'"},
      {"quit\norbit 10 20", "s.txt:2: 'orbit' takes 3 arguments"},
      {"orbit 10 20 0", "s.txt:1: orbit distance must be > 0"},
      {"orbit 10 95 2", "s.txt:1: orbit pitch must be within [-89, 89]"},
      {"orbit ten 20 2", "s.txt:1: yaw 'ten' is not a number"},
      {"time nan", "s.txt:1: time must be finite"},
      {"time inf", "s.txt:1: time must be finite"},
      {"wait 2.5", "s.txt:1: wait takes a whole number of frames"},
      {"wait -1", "s.txt:1: wait takes a whole number of frames"},
      {"wait calm", "s.txt:1: wait takes a whole number of frames in 0..1000000, or 'settled', got calm"},
      {"wait nan", "s.txt:1: wait takes a whole number of frames"},
      {"wait settled 5", "s.txt:1: 'wait' takes 1 argument (wait <frames>, or wait settled)"},
      {"key ctrl", "s.txt:1: unknown key 'ctrl'"},
      {"screenshot a.jpg", "s.txt:1: screenshot a.jpg: expected a .png path"},
      {"camera", "s.txt:1: 'camera' takes 1 argument"},
      {"quit now", "s.txt:1: 'quit' takes 0 arguments"},
      {"expression jawOpen", "s.txt:1: 'expression' takes 2 arguments"},
      {"expression jawOpen 1.5", "s.txt:1: expression weight must be in [0, 1]"},
      {"look-at 10", "s.txt:1: 'look-at' takes 2 arguments"},
      {"clip", "s.txt:1: 'clip' takes 1 argument"},
      {"resize 200", "s.txt:1: resize '200': expected WIDTHxHEIGHT"},
      {"resize 0x150", "s.txt:1: resize '0x150': width and height must be whole numbers"},
      {"grid", "s.txt:1: 'grid' takes 1 argument (grid on|off)"},
      {"grid yes", "s.txt:1: grid takes on or off, got 'yes'"},
      {"upright-flip 1", "s.txt:1: upright-flip takes on or off, got '1'"},
      {"post maybe", "s.txt:1: post takes on or off, got 'maybe'"},
      {"turntable", "s.txt:1: 'turntable' takes 1 argument"},
      {"turntable fast", "s.txt:1: turntable speed 'fast' is not a number"},
      {"turntable 400", "s.txt:1: turntable speed must be within [-360, 360]"},
      {"turntable nan", "s.txt:1: turntable speed must be finite"},
      {"save-camera a.png", "s.txt:1: save-camera a.png: expected a .json path"},
      {"save-camera", "s.txt:1: 'save-camera' takes 1 argument"},
  };
  for (const auto& [text, message] : cases) {
    try {
      view::parseViewerScript(text, "s.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << text << " -> " << e.what();
    }
  }
  EXPECT_THROW(view::loadViewerScript("/nonexistent/script.txt"), Error);
}

}  // namespace
}  // namespace sf
