// Viewer scripts (splatforge view --script FILE): one command per line, run in order as frames are drawn,
// so that tests and demos can drive the window without input devices (docs/viewer.md).
//
//   camera <camera.json>            exact camera (camera JSON, scaled to the window's size)
//   orbit <yaw_deg> <pitch_deg> <distance>   orbit the home target (angles in the home frame)
//   key <name>                      a key tap: the key's action (f, space, r, h, g, t, u, w, a, s, d, q, e,
//                                   left, right, 0-3, f12, escape)
//   time <seconds>                  scene time (playback pauses)
//   wait <frames>                   draw this many frames before the next command
//   wait settled                    draw frames until the level-of-detail objects stop changing
//   drop <file>                     open a file as if dropped on the window
//   screenshot <file.png>           write the next frame, as shown but without the UI
//   screenshot-ui <file.png>        write the next frame as presented, UI included
//   save-camera <file.json>         write the next frame's camera (camera JSON, the upright flip included)
//   resize <W>x<H>                  resize the window (the next frame has the new size)
//   grid on|off                     the ground grid and axes
//   turntable <deg_per_s> | off     orbit about the scene's centre (1/30 s a frame under a script)
//   upright-flip on|off             turn the world's up axis over (y down <-> y up)
//   antialiased on|off              antialiased mode (opacity compensation) for every object
//   clip <name|index>               characters: play this clip (each character that has it)
//   expression <morph-target> <w>   characters: set a morph target's weight in [0, 1] (each that has it; the
//                                   name is every word before the weight, so it may hold spaces)
//   look-at <x_px> <y_px> | off     characters: look at what is under that pixel, as at the mouse there
//   quit                            close the window after the frames so far
// Blank lines and lines starting with '#' are ignored. Relative paths are relative to the script's
// directory.
#pragma once

#include <string>
#include <vector>

namespace sf::view {

struct ScriptCommand {
  enum class Kind {
    kCamera,
    kOrbit,
    kKey,
    kTime,
    kWait,
    kDrop,
    kScreenshot,
    kResize,
    kSaveCamera,
    kGrid,
    kTurntable,
    kUprightFlip,
    kAntialiased,
    kPost,
    kClip,
    kExpression,
    kLookAt,
    kQuit
  };
  Kind kind = Kind::kQuit;
  int line = 0;      // 1-based line in the script, for messages
  std::string path;  // camera, drop, screenshot, save-camera: resolved against the script's directory
  // key: lower-case name; clip: the clip; expression: the morph target; look-at, turntable: "off" or empty;
  // grid, upright-flip, antialiased, post: "on" or "off"; wait: "settled" (values[0] then 0)
  std::string key;
  bool overlay = false;  // screenshot: with the UI (screenshot-ui)
  // orbit: yaw, pitch, distance; time: seconds; wait: frames; resize: width, height; expression: weight;
  // look-at: x, y; turntable: degrees per second
  double values[3] = {0, 0, 0};
};

// Key names a script (and the keyboard) can tap; see docs/viewer.md for what each does.
extern const char* const kViewerKeys[];
bool isViewerKey(const std::string& name);

// Parses a script's text; `path` names it in messages and its directory resolves relative paths.
// Throws sf::Error("<path>:<line>: <reason>") for an unknown command, a missing or extra argument, a
// non-finite or out-of-range number (distance > 0, frames a whole number in 0..1000000, time finite,
// turntable speed within +-360 degrees per second), an unknown key name or a switch that is neither on nor
// off.
std::vector<ScriptCommand> parseViewerScript(const std::string& text, const std::string& path);
// Reads and parses a script file.
std::vector<ScriptCommand> loadViewerScript(const std::string& path);

}  // namespace sf::view
