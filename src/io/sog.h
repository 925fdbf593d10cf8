// SOG, PlayCanvas's texture-based splat format (docs/formats/sog.md): a meta.json naming lossless WebP
// images (16-bit log-encoded positions, smallest-three quaternions, 256-entry codebooks for log-scales and
// DC colour, opacity in 8 bits, higher SH bands through a k-means palette), either bundled in one ZIP
// archive (.sog) or as separate files beside a meta.json. Reads meta versions 1 and 2; writes version 2.
// Positions, rotations and SH are stored in the INRIA PLY frame (RDF), so no axis conversion applies.
// The layout and quantisation are this one implementation in every build; how an unpacked SOG's image files
// are read and how WebP is coded differ per build (io/sog_images.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"

namespace sf {

// True for a path whose file name is "meta.json" (any case): the unpacked form of SOG.
bool isSogMetaPath(const std::string& path);

// An image of a SOG file before it is decoded: how messages name it, its WebP bytes and the size its header
// gives.
struct SogImage {
  std::string describe;
  std::vector<uint8_t> webp;
  int width = 0, height = 0;
};

// An image file of an unpacked SOG: its name as meta.json writes it (a path relative to meta.json's
// directory) and the path messages name it by (meta.json's directory joined with it).
struct SogImageFile {
  std::string name, path;
};

// The image files an unpacked SOG's meta.json (`bytes`, its text) names, in the order readSog reads them,
// each checked by its text (not absolute, no ".."); none for a .sog archive, which holds its images. Throws
// what readSog throws for a meta.json it cannot read that far.
std::vector<SogImageFile> sogImageFiles(std::span<const uint8_t> bytes, const std::string& path);

// What readSog does before it decodes any image: meta.json read and checked, every image read (an unpacked
// SOG's through io/sog_images.h) and its WebP header checked, the load limits checked with the images'
// sizes. Returns the images in the order readSog decodes them; throws what readSog throws. (The web page
// decodes these in its browser and hands their pixels to its build's io/sog_images.h.)
std::vector<SogImage> inspectSog(std::span<const uint8_t> bytes, const std::string& path);

// Decodes SOG: `bytes` is either a .sog archive (ZIP magic) or the text of a meta.json, whose images are
// read from `path`'s directory (each named by a relative path that must stay inside that directory, links
// included). Writes the meta version (1 or 2) to *version when non-null. Every image is checked to be
// lossless WebP, large enough for the declared count, and every index to lie inside its codebook or
// palette; the declared count and every image's decoded size are checked against the load limits
// (core/limits.h) before anything is decoded. Throws FormatError / Error naming the file, the archive entry
// or JSON path, and the reason.
// The meta's "model" tag: "antialiased" sets GaussianCloud::antialiased; "2dgs" (flat surfels) and unknown
// tags are read as ordinary 3D gaussians with a warning appended to *warnings (when non-null).
GaussianCloud readSog(std::span<const uint8_t> bytes, const std::string& path, int* version = nullptr,
                      std::vector<std::string>* warnings = nullptr);

struct SogWriteOptions {
  int sh_iterations = 3;  // Lloyd steps of the SH palette's k-means (each costs about 1 s per 150K gaussians
                          // of SH degree 3 on 2 cores; the gain from the third on is small)
  bool morton_order = true;  // store the gaussians in Morton order of their positions (smaller images);
                             // false keeps the cloud's order
};

// Encodes a .sog archive (meta version 2; stored ZIP entries). Quantisation: positions 16 bits per axis of
// the log-encoded range, rotations smallest-three in 8 bits, log-scales and DC through 256-entry codebooks,
// opacity 8 bits, SH bands 1-3 through a palette of up to 65536 k-means centroids whose coefficients share
// one 256-entry codebook. An antialiased cloud is tagged "model": "antialiased". Normals, ids, extra
// channels and the colour-space tag are not stored. The cloud must hold finite values (encodeSplats checks).
std::vector<uint8_t> writeSog(const GaussianCloud& cloud, const SogWriteOptions& options = {});

// Writes the unpacked form: `meta_path` (a meta.json) and its images beside it, each file atomically, the
// meta.json last. Throws sf::Error when the cloud holds a non-finite value.
void saveSogUnpacked(const GaussianCloud& cloud, const std::string& meta_path,
                     const SogWriteOptions& options = {});

}  // namespace sf
