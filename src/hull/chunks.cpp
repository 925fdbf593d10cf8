#include "hull/chunks.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/parallel.h"
#include "core/random.h"
#include "hull/point_grid.h"
#include "io/json.h"
#include "io/spl2.h"
#include "render/mesh.h"

namespace sf::hull {

namespace {

static_assert(kMaterialCount == kSpl2Materials);

constexpr size_t kGrain = 2048;  // splats per parallel range

// ---- Colour --------------------------------------------------------------------------------------------

// sRGB decode of a value clamped to [0, 1] (NaN as 0).
float decode(float c) {
  return srgbToLinear(c > 0 ? std::min(c, 1.0f) : 0.0f);
}

// Oklab (Björn Ottosson, 2020) of a display-encoded sRGB colour.
Vec3 oklab(Vec3 srgb) {
  const float r = decode(srgb.x), g = decode(srgb.y), b = decode(srgb.z);
  const float l = std::cbrt(0.4122214708f * r + 0.5363325363f * g + 0.0514459929f * b);
  const float m = std::cbrt(0.2119034982f * r + 0.6806995451f * g + 0.1073969566f * b);
  const float s = std::cbrt(0.0883024619f * r + 0.2817188376f * g + 0.6299787005f * b);
  return {0.2104542553f * l + 0.7936177850f * m - 0.0040720468f * s,
          1.9779984951f * l - 2.4285922050f * m + 0.4505937099f * s,
          0.0259040371f * l + 0.7827717662f * m - 0.8086757660f * s};
}

// ---- Random numbers -------------------------------------------------------------------------------------

uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) {
  return mix64(mix64(splitmix64(a) ^ b) + 0x632be59bd9b4e019ull * (c + 1));
}

double unit(uint64_t h) {
  return unitDouble(h);
}  // [0, 1)

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  double next() { return unit(splitmix64Next(state_)); }  // [0, 1)

 private:
  uint64_t state_;
};

// ---- Neighbours -----------------------------------------------------------------------------------------

// ---- Recipes --------------------------------------------------------------------------------------------

std::string knownRecipes() {
  return "mech, organic";
}

int materialFromName(const std::string& name) {
  for (int m = 0; m < kMaterialCount; ++m)
    if (name == spl2MaterialName(m)) return m;
  return -1;
}

std::string materialList() {
  std::string out;
  for (int m = 0; m < kMaterialCount; ++m) {
    if (m > 0) out += ", ";
    out += spl2MaterialName(m);
  }
  return out;
}

std::string indexPath(const char* array, size_t index) {
  std::string out = array;
  out += "[";
  out += std::to_string(index);
  out += "]";
  return out;
}

}  // namespace

const char* materialName(int material) {
  return spl2MaterialName(material);
}

MaterialRecipe builtinRecipe(const std::string& name) {
  MaterialRecipe r;
  r.name = name;
  if (name == "mech") {
    r.references = {
        {kMaterialDefault, {0.50f, 0.50f, 0.50f}},  // mid grey paint
        {kMaterialDefault, {0.80f, 0.80f, 0.78f}},  // light grey paint
        {kMaterialDefault, {0.28f, 0.29f, 0.31f}},  // gunmetal
        {kMaterialDefault, {0.42f, 0.44f, 0.28f}},  // olive drab
        {kMaterialDefault, {0.62f, 0.16f, 0.14f}},  // signal red
        {kMaterialDefault, {0.85f, 0.70f, 0.15f}},  // hazard yellow
        {kMaterialCircuit, {0.20f, 0.90f, 1.00f}},  // cyan glow
        {kMaterialCircuit, {0.05f, 0.45f, 0.20f}},  // PCB green
        {kMaterialCircuit, {0.90f, 0.20f, 0.85f}},  // emissive magenta
        {kMaterialCircuit, {1.00f, 0.55f, 0.05f}},  // amber LED
        {kMaterialCore, {0.03f, 0.03f, 0.035f}},    // dark internals
    };
  } else if (name == "organic") {
    r.references = {
        {kMaterialChitin, {0.22f, 0.16f, 0.10f}},  // dark brown carapace
        {kMaterialChitin, {0.18f, 0.20f, 0.12f}},  // olive-black carapace
        {kMaterialChitin, {0.45f, 0.32f, 0.16f}},  // amber-brown carapace
        {kMaterialBone, {0.88f, 0.84f, 0.72f}},    // ivory
        {kMaterialBone, {0.70f, 0.67f, 0.58f}},    // bone grey
        {kMaterialFlesh, {0.80f, 0.48f, 0.45f}},   // pink
        {kMaterialFlesh, {0.62f, 0.18f, 0.17f}},   // raw red
        {kMaterialFlesh, {0.40f, 0.10f, 0.12f}},   // dark muscle
        {kMaterialCore, {0.03f, 0.025f, 0.025f}},  // near-black
    };
  } else {
    throw Error("unknown material recipe \"" + name + "\" (known: " + knownRecipes() + ")");
  }
  return r;
}

MaterialRecipe parseRecipeJson(const std::string& text, const std::string& path) {
  const nlohmann::json root = parseJsonText(text, path);
  auto fail = [&](const std::string& where, const std::string& why) -> Error {
    return Error(path + ": " + where + ": " + why);
  };
  if (!root.is_object()) throw fail("(root)", "expected an object, got " + root.dump());
  for (const auto& item : root.items())
    if (item.key() != "name" && item.key() != "references")
      throw fail(item.key(), "unexpected key (a recipe has \"name\" and \"references\")");

  MaterialRecipe recipe;
  if (!root.contains("name")) throw fail("name", "missing");
  const nlohmann::json& name = root["name"];
  if (!name.is_string() || name.get<std::string>().empty())
    throw fail("name", "expected a non-empty string, got " + name.dump());
  recipe.name = name.get<std::string>();

  if (!root.contains("references")) throw fail("references", "missing");
  const nlohmann::json& refs = root["references"];
  if (!refs.is_array() || refs.empty())
    throw fail("references", "expected a non-empty array, got " + refs.dump());
  for (size_t i = 0; i < refs.size(); ++i) {
    const std::string where = indexPath("references", i);
    const nlohmann::json& ref = refs[i];
    if (!ref.is_object()) throw fail(where, "expected an object, got " + ref.dump());
    for (const auto& item : ref.items())
      if (item.key() != "material" && item.key() != "color")
        throw fail(where + "." + item.key(), "unexpected key (a reference has \"material\" and \"color\")");
    if (!ref.contains("material")) throw fail(where + ".material", "missing");
    if (!ref.contains("color")) throw fail(where + ".color", "missing");

    const nlohmann::json& mat = ref["material"];
    int material = -1;
    if (mat.is_string()) {
      material = materialFromName(mat.get<std::string>());
    } else if (mat.is_number_integer()) {
      const int64_t v = mat.get<int64_t>();
      if (v >= 0 && v < kMaterialCount) material = static_cast<int>(v);
    }
    if (material < 0)
      throw fail(where + ".material", "expected one of " + materialList() + " or an integer 0.." +
                                          std::to_string(kMaterialCount - 1) + ", got " + mat.dump());

    const nlohmann::json& col = ref["color"];
    if (!col.is_array() || col.size() != 3)
      throw fail(where + ".color", "expected [r, g, b], got " + col.dump());
    Vec3 c;
    for (size_t a = 0; a < 3; ++a) {
      const nlohmann::json& v = col[a];
      const double d = v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
      if (!(d >= 0 && d <= 1))
        throw fail(where + "." + indexPath("color", a), "expected a number in [0, 1], got " + v.dump());
      c[static_cast<int>(a)] = static_cast<float>(d);
    }
    recipe.references.emplace_back(material, c);
  }
  return recipe;
}

std::vector<uint8_t> classifyMaterials(std::span<const Vec3> colors, std::span<const Vec3> positions,
                                       const MaterialRecipe& recipe, float radius, int passes) {
  assert(colors.size() == positions.size());
  const size_t n = colors.size();
  std::vector<uint8_t> cls(n, kMaterialDefault);
  if (recipe.references.empty()) return cls;

  std::vector<Vec3> refs;
  std::vector<uint8_t> ref_class;
  for (const auto& [material, colour] : recipe.references) {
    assert(material >= 0 && material < kMaterialCount);
    refs.push_back(oklab(colour));
    ref_class.push_back(static_cast<uint8_t>(std::clamp(material, 0, kMaterialCount - 1)));
  }
  parallelForRange(n, kGrain, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const Vec3 lab = oklab(colors[i]);
      float best = std::numeric_limits<float>::infinity();
      for (size_t r = 0; r < refs.size(); ++r) {
        const Vec3 d = lab - refs[r];
        const float d2 = dot(d, d);
        if (d2 < best) {
          best = d2;
          cls[i] = ref_class[r];
        }
      }
    }
  });

  if (!(radius > 0) || passes <= 0 || n == 0) return cls;
  const PointGrid grid(positions, radius);
  std::vector<uint8_t> next(n);
  for (int pass = 0; pass < passes; ++pass) {
    parallelForRange(n, kGrain, [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t) {
        const size_t i = grid.pointAt(t);
        std::array<uint32_t, kMaterialCount> votes{};
        grid.forWithin(positions[i], radius, [&](size_t j, float) { ++votes[cls[j]]; });
        uint8_t pick = cls[i];
        for (int m = 0; m < kMaterialCount; ++m)
          if (votes[static_cast<size_t>(m)] > votes[pick]) pick = static_cast<uint8_t>(m);
        next[i] = pick;
      }
    });
    if (next == cls) break;  // a fixed point: further passes change nothing
    cls.swap(next);
  }
  return cls;
}

namespace {

// Chunk counts per group: k = max(1, round(n / target)) capped at n, then scaled to fit max_chunks.
std::vector<int> chunkCounts(const std::vector<size_t>& group_sizes, int target, int max_chunks) {
  const size_t groups = group_sizes.size();
  std::vector<int> k(groups);
  int64_t total = 0;
  for (size_t g = 0; g < groups; ++g) {
    const double want = std::round(static_cast<double>(group_sizes[g]) / target);
    k[g] =
        static_cast<int>(std::clamp(want, 1.0, static_cast<double>(std::min<size_t>(group_sizes[g], 65536))));
    total += k[g];
  }
  if (total <= max_chunks) return k;
  if (groups > static_cast<size_t>(max_chunks))
    throw Error(std::to_string(groups) + " (material, part) groups do not fit in " +
                std::to_string(max_chunks) + " chunks (a chunk never spans two groups)");

  const double scale = static_cast<double>(max_chunks) / static_cast<double>(total);
  std::vector<int> scaled(groups);
  std::vector<double> remainder(groups);
  int64_t sum = 0;
  for (size_t g = 0; g < groups; ++g) {
    const double exact = k[g] * scale;
    const double fl = std::floor(exact);
    scaled[g] = std::max(1, static_cast<int>(fl));
    remainder[g] = exact - fl;
    sum += scaled[g];
  }
  std::vector<size_t> order(groups);
  std::iota(order.begin(), order.end(), size_t{0});
  if (sum < max_chunks) {  // largest remainders first (ties: group order)
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
    for (size_t g : order) {
      if (sum >= max_chunks) break;
      if (scaled[g] < k[g]) {
        ++scaled[g];
        ++sum;
      }
    }
  }
  while (sum > max_chunks) {  // raised to 1 by the floor: take from the largest (ties: group order)
    size_t largest = 0;
    for (size_t g = 1; g < groups; ++g)
      if (scaled[g] > scaled[largest]) largest = g;
    assert(scaled[largest] > 1);
    --scaled[largest];
    --sum;
  }
  return scaled;
}

// Area-weighted k-means++ and Lloyd over one group's members (global indices, ascending). Returns the local
// chunk of each member, in [0, number of centres).
std::vector<uint32_t> clusterGroup(std::span<const Vec3> positions, std::span<const size_t> members,
                                   std::span<const double> weights, int k, const ChunkOptions& o,
                                   uint64_t group_seed) {
  const size_t n = members.size();
  std::vector<uint32_t> label(n, 0);
  if (k <= 1 || n <= 1) return label;

  // Seeding: first centre ~ weight, each next ~ weight * D^2.
  Rng rng(group_seed);
  std::vector<Vec3> centres;
  std::vector<double> d2(n, std::numeric_limits<double>::infinity());
  auto sample = [&](auto&& mass) -> size_t {
    double total = 0;
    for (size_t j = 0; j < n; ++j) total += mass(j);
    if (!(total > 0)) return n;
    const double target = rng.next() * total;
    double acc = 0;
    size_t last = n;
    for (size_t j = 0; j < n; ++j) {
      const double m = mass(j);
      if (!(m > 0)) continue;
      last = j;
      acc += m;
      if (acc > target) return j;
    }
    return last;  // rounding: the last member with mass
  };
  size_t pick = sample([&](size_t j) { return weights[j]; });
  while (pick < n) {
    const Vec3 c = positions[members[pick]];
    centres.push_back(c);
    if (centres.size() >= static_cast<size_t>(k)) break;
    parallelForRange(n, kGrain, [&](size_t begin, size_t end) {
      for (size_t j = begin; j < end; ++j) {
        const Vec3 d = positions[members[j]] - c;
        d2[j] = std::min(d2[j], static_cast<double>(dot(d, d)));
      }
    });
    pick = sample([&](size_t j) { return weights[j] * d2[j]; });
  }
  const size_t kc = centres.size();
  if (kc <= 1) return label;

  const int rounds = std::max(1, o.lloyd_iterations);
  const int jitter_from = rounds - std::clamp(o.jittered_iterations, 0, rounds);
  const float jitter = std::clamp(o.jitter, 0.0f, 0.9f);
  std::vector<std::array<double, 4>> sums(kc);
  for (int round = 0; round < rounds; ++round) {
    const bool jittered = round >= jitter_from && jitter > 0;
    parallelForRange(n, kGrain, [&](size_t begin, size_t end) {
      for (size_t j = begin; j < end; ++j) {
        const Vec3 p = positions[members[j]];
        float best = std::numeric_limits<float>::infinity();
        uint32_t best_c = 0;
        for (size_t c = 0; c < kc; ++c) {
          const Vec3 d = p - centres[c];
          float dist = dot(d, d);
          if (jittered) {
            const double u = unit(hash3(o.seed, members[j], c)) * 2 - 1;
            dist = std::sqrt(dist) * (1 + jitter * static_cast<float>(u));
          }
          if (dist < best) {
            best = dist;
            best_c = static_cast<uint32_t>(c);
          }
        }
        label[j] = best_c;
      }
    });
    if (round + 1 == rounds) break;
    std::fill(sums.begin(), sums.end(), std::array<double, 4>{0, 0, 0, 0});
    for (size_t j = 0; j < n; ++j) {  // serial: the float sums do not depend on the thread count
      const Vec3 p = positions[members[j]];
      std::array<double, 4>& s = sums[label[j]];
      s[0] += weights[j] * p.x;
      s[1] += weights[j] * p.y;
      s[2] += weights[j] * p.z;
      s[3] += weights[j];
    }
    for (size_t c = 0; c < kc; ++c)
      if (sums[c][3] > 0)
        centres[c] =
            Vec3(static_cast<float>(sums[c][0] / sums[c][3]), static_cast<float>(sums[c][1] / sums[c][3]),
                 static_cast<float>(sums[c][2] / sums[c][3]));
  }
  return label;
}

}  // namespace

ChunkResult buildChunks(std::span<const Vec3> positions, std::span<const float> areas,
                        std::span<const uint8_t> materials, std::span<const uint8_t> parts, float radius,
                        const ChunkOptions& options) {
  const size_t n = positions.size();
  assert(areas.size() == n && materials.size() == n && parts.size() == n);
  ChunkResult result;
  result.chunk_of.assign(n, 0);
  if (n == 0) return result;

  const int target = std::max(1, options.target_size);
  const int max_chunks = std::clamp(options.max_chunks, 1, kSpl2MaxChunks);

  // Groups in ascending (material, part) order.
  std::vector<int32_t> group_of_key(256 * 256, -1);
  for (size_t i = 0; i < n; ++i) {
    assert(materials[i] < kMaterialCount);
    group_of_key[static_cast<size_t>(materials[i]) * 256 + parts[i]] = 0;
  }
  std::vector<uint32_t> group_keys;
  for (size_t key = 0; key < group_of_key.size(); ++key)
    if (group_of_key[key] == 0) {
      group_of_key[key] = static_cast<int32_t>(group_keys.size());
      group_keys.push_back(static_cast<uint32_t>(key));
    }
  const size_t groups = group_keys.size();
  std::vector<uint32_t> group(n);
  std::vector<std::vector<size_t>> members(groups);
  for (size_t i = 0; i < n; ++i) {
    group[i] = static_cast<uint32_t>(group_of_key[static_cast<size_t>(materials[i]) * 256 + parts[i]]);
    members[group[i]].push_back(i);
  }
  std::vector<size_t> sizes(groups);
  for (size_t g = 0; g < groups; ++g) sizes[g] = members[g].size();
  const std::vector<int> k = chunkCounts(sizes, target, max_chunks);

  // Local chunk of each splat within its group.
  std::vector<uint32_t> local(n, 0);
  for (size_t g = 0; g < groups; ++g) {
    const std::vector<size_t>& m = members[g];
    std::vector<double> w(m.size());
    bool any = false;
    for (size_t j = 0; j < m.size(); ++j) {
      const float a = areas[m[j]];
      w[j] = std::isfinite(a) && a > 0 ? static_cast<double>(a) : 0.0;
      any = any || w[j] > 0;
    }
    if (!any) std::fill(w.begin(), w.end(), 1.0);
    const std::vector<uint32_t> labels =
        clusterGroup(positions, m, w, k[g], options, hash3(options.seed, group_keys[g], 0x6b6d65616e73ull));
    for (size_t j = 0; j < m.size(); ++j) local[m[j]] = labels[j];
  }

  // Neighbour-majority smoothing within each group.
  if (radius > 0 && options.smoothing_passes > 0) {
    const PointGrid grid(positions, radius);
    std::vector<uint32_t> next(n);
    for (int pass = 0; pass < options.smoothing_passes; ++pass) {
      parallelForRange(n, kGrain, [&](size_t begin, size_t end) {
        std::vector<std::pair<uint32_t, uint32_t>> votes;  // (local chunk, count)
        for (size_t t = begin; t < end; ++t) {
          const size_t i = grid.pointAt(t);
          votes.clear();
          grid.forWithin(positions[i], radius, [&](size_t j, float) {
            if (group[j] != group[i]) return;
            for (auto& v : votes)
              if (v.first == local[j]) {
                ++v.second;
                return;
              }
            votes.emplace_back(local[j], 1u);
          });
          // The current chunk unless another has strictly more votes (among those, the most, then the
          // smallest id).
          uint32_t pick = local[i], pick_votes = 0;
          for (const auto& v : votes)
            if (v.first == pick) pick_votes = v.second;
          for (const auto& v : votes)
            if (v.second > pick_votes || (v.second == pick_votes && pick != local[i] && v.first < pick)) {
              pick = v.first;
              pick_votes = v.second;
            }
          next[i] = pick;
        }
      });
      if (next == local) break;
      local.swap(next);
    }
  }

  // Global contiguous ids: groups in order, a group's non-empty chunks in order.
  uint32_t next_id = 0;
  for (size_t g = 0; g < groups; ++g) {
    uint32_t max_local = 0;
    for (size_t i : members[g]) max_local = std::max(max_local, local[i]);
    std::vector<int64_t> id(static_cast<size_t>(max_local) + 1, -1);
    for (size_t i : members[g]) id[local[i]] = 0;
    for (int64_t& v : id)
      if (v == 0) v = next_id++;
    for (size_t i : members[g]) result.chunk_of[i] = static_cast<uint16_t>(id[local[i]]);
  }
  result.chunk_count = static_cast<int>(next_id);
  assert(result.chunk_count <= max_chunks);
  return result;
}

}  // namespace sf::hull
