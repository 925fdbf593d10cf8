// Where a character package's files come from (docs/formats/character.md): the one seam between the package
// loader (character/package.cpp) and the files of the package's directory. The native build defines it in
// character/package_files.cpp (the file system); the web page's WebAssembly in web/wasm/character_api.cpp
// (the files the page fetched and handed in). Both builds check the same entries with the same rules and
// report a missing file in the same words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sf::character::package_files {

// Whether `path` (the package directory joined with a name character.json gives) names a file (a symbolic
// link counts, as the loader then reads what it leads to).
bool exists(const std::string& path);

// The bytes of a file exists() accepted. Throws sf::Error naming the file and the reason.
std::vector<uint8_t> read(const std::string& path);

// Why this build cannot read a package's optional parts (mouth, teeth, correctives:
// docs/formats/character-extras.md); empty when it can.
std::string partRefusal();

}  // namespace sf::character::package_files
