#include "web_command.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "character/character.h"
#include "commands.h"
#include "core/error.h"
#include "hull/hull_render.h"
#include "hull/meta.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/json.h"
#include "io/sog.h"
#include "model/gltf_model.h"
#include "neural/generator.h"
#include "scene/scene_doc.h"

namespace sf::cli {

namespace {

namespace fs = std::filesystem;

// The page's files (web/), in the folder the export writes: index.html first.
constexpr const char* kPageFiles[] = {"index.html",
                                      "main.js",
                                      "renderer.js",
                                      "decode_worker.js",
                                      "neural_worker.js",
                                      "shaders/common.wgsl",
                                      "shaders/preprocess.wgsl",
                                      "shaders/scan.wgsl",
                                      "shaders/keys.wgsl",
                                      "shaders/radix.wgsl",
                                      "shaders/raster.wgsl",
                                      "shaders/mesh.wgsl",
                                      "shaders/blit.wgsl",
                                      "shaders/deform.wgsl",
                                      "shaders/neural.wgsl"};
// What scripts/build_web.sh makes (build/web/).
constexpr const char* kWasmFiles[] = {"sf_decode.js", "sf_decode.wasm"};
// The files of onnxruntime-web (the npm package scripts/setup.sh fetches, pinned, into web/third_party/) that
// the page's neural worker loads: the runtime's module and its WebAssembly execution provider. Copied into
// the export's ort/ for a neural generator only.
constexpr const char* kOrtPackage = "third_party/onnxruntime-web-1.31.1/dist";
constexpr const char* kOrtFiles[] = {"ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs",
                                     "ort-wasm-simd-threaded.wasm"};

void copyInto(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  std::vector<uint8_t> bytes = readFile(from.string());
  writeFileAtomic(to.string(), bytes);
}

std::string formatKb(uintmax_t bytes) {
  return fmt::format("{:.0f} KB", static_cast<double>(bytes) / 1024.0);
}

// A splat file the page's WebAssembly decodes: decoded here by the same decodeSplats, which names the file
// and the reason when it fails; the format the web build leaves out is refused, `context` ("scene.json:
// objects[0] (name): ") before the message for a scene's object.
LoadedSplats loadForThePage(const std::string& path, const std::string& context) {
  try {
    LoadedSplats loaded = loadSplats(path);
    if (loaded.format == SplatFormat::kLodMeta)
      throw Error(path + ": " + formatName(loaded.format) +
                  " is not in the web build yet (convert it to .spz: splatforge convert " + path +
                  " -o NAME.spz)");
    return loaded;
  } catch (const Error& e) {
    throw Error(context + e.what());
  }
}

// A file of the export: where it comes from and its path inside the exported folder.
struct ExportedFile {
  std::string from;
  fs::path to;
};

// What the splat file `from`, decoded as `loaded`, takes into the export at `to`: itself, and an unpacked
// SOG's images beside it (the page fetches them relative to its meta.json).
std::vector<ExportedFile> splatFileExport(const std::string& from, const fs::path& to,
                                          const LoadedSplats& loaded) {
  std::vector<ExportedFile> out{{from, to}};
  if (loaded.format == SplatFormat::kSog)
    for (const SogImageFile& f : sogImageFiles(readFile(from), from))
      out.push_back({f.path, to.parent_path() / f.name});
  return out;
}

// A glTF model as the page opens it: read by the same glTF reader and model, and its clip (`clip`: a name or
// an index, empty: the first) taken by the same GltfModel::objectClip; `context` before a message. Sets
// `model`.
std::unique_ptr<GltfModel> gltfForThePage(const std::string& path, const std::string& clip,
                                          const std::string& context) {
  try {
    auto model = std::make_unique<GltfModel>(path);
    (void)model->objectClip(path, clip);
    return model;
  } catch (const Error& e) {
    throw Error(context + e.what());
  }
}

// What the glTF file `from`, read as `model`, takes into the export at `to`: itself and the external buffers
// and images it names that exist, beside it at their paths relative to it (the page fetches them so). A path
// that would leave the export folder by its text is refused (the page could not fetch it).
std::vector<ExportedFile> gltfFileExport(const std::string& from, const fs::path& to, const GltfModel& model,
                                         const std::string& context) {
  std::vector<ExportedFile> out{{from, to}};
  const fs::path dir = fs::path(from).parent_path();
  for (const std::string& uri : model.document().external_files) {
    const fs::path rel = fs::path(uri).lexically_normal();
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..")
      throw Error(context + from + ": '" + uri +
                  "' lies outside the glTF file's folder (the page could not fetch it)");
    std::error_code ec;
    if (!fs::is_regular_file(dir / rel, ec))
      continue;  // a missing image: the reader's warning, in the page too
    out.push_back({(dir / rel).string(), to.parent_path() / rel});
  }
  return out;
}

// A character package as the page opens it: loaded by the same package loader (every file's size and SHA-256,
// the counts, the bound primitive, the clips), its optional parts refused (the page does not draw them yet).
// Returns its files (character.json and the files it names) at `to` (the package's folder in the export), and
// describes it in `what`.
std::vector<ExportedFile> characterExport(const std::string& dir, const fs::path& to, uint64_t& gaussians,
                                          std::string& what) {
  const character::Character c = character::Character::loadPackage(dir);
  if (c.mouthHidden() || c.teeth() || c.corrective())
    throw Error(
        dir +
        ": a package's optional parts (mouth, teeth, correctives: docs/formats/character-extras.md) are "
        "not in the web build yet (render this character with the splatforge command line)");
  const std::string json_path = (fs::path(dir) / "character.json").string();
  const std::vector<uint8_t> text = readFile(json_path);
  const auto root =
      parseJsonText(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), json_path);
  std::vector<ExportedFile> out{{json_path, to / "character.json"}};
  for (const char* entry : {"splats", "bindings", "skin", "animations"})
    if (root.contains(entry)) {
      const std::string file = root[entry]["file"].get<std::string>();  // checked by the loader
      out.push_back({(fs::path(dir) / file).string(), to / file});
    }
  gaussians = c.splats().size();
  what =
      fmt::format("{} (splat character: {} gaussians, {} morph targets, {} clip{})", to.string(), gaussians,
                  c.morphTargetCount(), c.model().clips().size(), c.model().clips().size() == 1 ? "" : "s");
  return out;
}

// A neural generator as the page runs it: loaded and checked by the engine (the loader, the contract, the
// operators), then refused where the page cannot run it: control inputs (the page has no "inputs" to give
// them) and gaussians or colours other than float32 and float16 (what its GPU decode reads). Describes it in
// `what`; `rows` gets the gaussians' declared capacity (0 when symbolic).
void generatorForThePage(const std::string& path, const std::string& name, uint64_t& rows,
                         std::string& what) {
  const nn::GaussianGenerator g(path);
  const nn::GeneratorContract& c = g.contract();
  if (!c.control_inputs.empty())
    throw Error(
        path + ": control input '" + c.control_inputs.front() +
        "': a generator with control inputs is not in the web build yet (the page opens models whose "
        "inputs are the time, the view and the projection; render it with the splatforge command line "
        "and a scene's \"inputs\")");
  for (const std::string& output : {c.gauss_output, c.color_output}) {
    const auto it = std::find_if(g.graph().outputs.begin(), g.graph().outputs.end(),
                                 [&](const nn::ValueInfo& v) { return v.name == output; });
    if (it != g.graph().outputs.end() && it->dtype != nn::DType::kFloat32 && it->dtype != nn::DType::kFloat16)
      throw Error(path + ": output '" + output + "' is " + nn::dtypeName(it->dtype) +
                  ": the page decodes float32 and float16 outputs (" + nn::dtypeName(it->dtype) +
                  " is not in the web build yet)");
  }
  rows = c.capacity > 0 ? static_cast<uint64_t>(c.capacity) : 0;
  std::string contract = c.describe();
  for (size_t at; (at = contract.find('\n')) != std::string::npos;) contract.replace(at, 1, "; ");
  what = fmt::format("{} (neural generator, run by onnxruntime-web: {})", name, contract);
}

std::string describeModel(const GltfModel& model) {
  return fmt::format("{} mesh primitive{}, {} vertices, {} clip{}", model.drawnPrimitives(),
                     model.drawnPrimitives() == 1 ? "" : "s", model.vertexCount(), model.clips().size(),
                     model.clips().size() == 1 ? "" : "s");
}

// What a scene JSON takes into the export: the scene, then each splat file, glTF model, character package,
// generator model and splat hull (with its meta sidecar) it names once (a glTF model with its external files,
// a package with the files it names), at its path relative to the scene (the page fetches an object's file by
// that path from the scene's URL). Refuses what the page cannot draw, paths the page could not reach (outside
// the scene's directory, by the file system or by the text), files that do not decode, glTF objects whose
// model or clip does not load and generators the page cannot run (generatorForThePage). Adds the objects'
// gaussians (a generator's rows) to `gaussians`, the distinct files to `files`, and counts the generator
// objects in `generators`.
std::vector<ExportedFile> sceneExport(const std::string& input, uint64_t& gaussians, size_t& files,
                                      size_t& objects, size_t& generators) {
  const std::vector<uint8_t> bytes = readFile(input);
  const SceneDocument doc = parseSceneDocument(std::string(bytes.begin(), bytes.end()), input);
  if (std::string why = webSceneRefusal(doc); !why.empty()) throw Error(why);
  const fs::path dir = fs::path(input).parent_path();
  std::vector<ExportedFile> out{{input, fs::path(input).filename()}};
  std::map<fs::path, uint64_t> counts;  // gaussians of each file exported
  for (size_t i = 0; i < doc.objects.size(); ++i) {
    const SceneDocObject& d = doc.objects[i];
    const std::string context = doc.objectContext(i) + ": ";
    if (!d.refusal.empty()) throw Error(context + d.refusal);
    try {
      resolveScenePath(dir, d.file, true, false);  // the page resolves it as a URL, by its text
    } catch (const Error& e) {
      throw Error(context + e.what());
    }
    if (classifyInput(d.resolved) == InputKind::kLodHierarchy)
      throw Error(
          context + "a level-of-detail hierarchy (\"file\": \"" + d.file +
          "\") is not in the web build yet (the web page draws splat files and glTF models; render this "
          "scene with the splatforge command line)");
    const fs::path to = fs::path(d.file).lexically_normal();
    // Where the copy goes must lie below the export folder whatever the checks above decided (they judge
    // the source, whose canonical path may stay inside the scene's folder through a "..").
    if (to.empty() || to.is_absolute() || *to.begin() == "..")
      throw Error(context + "\"" + d.file + "\": the copy would leave the export folder");
    auto it = counts.find(to);
    if (d.key == SceneObjectKey::kCharacter) {
      if (it == counts.end()) {  // the package's folder: character.json and the files it names
        uint64_t splats = 0;
        std::string what;
        std::vector<ExportedFile> package;
        try {
          package = characterExport(d.resolved, to, splats, what);
        } catch (const Error& e) {
          throw Error(context + e.what());
        }
        it = counts.emplace(to, splats).first;
        for (ExportedFile& f : package) out.push_back(std::move(f));
      }
    } else if (d.key == SceneObjectKey::kGenerator) {
      ++generators;
      if (it == counts.end()) {
        uint64_t rows = 0;
        std::string what;
        try {
          generatorForThePage(d.resolved, d.file, rows, what);
        } catch (const Error& e) {
          throw Error(context + e.what());
        }
        it = counts.emplace(to, rows).first;
        out.push_back({d.resolved, to});
      }
    } else if (d.key == SceneObjectKey::kHull) {
      if (it == counts.end()) {  // loaded by the engine's hull loader, copied with its meta sidecar
        std::shared_ptr<const hull::HullAsset> asset;
        try {
          asset = hull::HullAsset::load(d.resolved);
        } catch (const Error& e) {
          throw Error(context + e.what());
        }
        it = counts.emplace(to, asset->hull.size()).first;
        out.push_back({d.resolved, to});
        const std::string meta = hull::hullMetaPath(d.resolved);
        std::error_code meta_ec;
        if (fs::is_regular_file(meta, meta_ec)) out.push_back({meta, hull::hullMetaPath(to.string())});
      }
    } else if (d.gltfByName()) {
      const std::unique_ptr<GltfModel> model = gltfForThePage(d.resolved, d.clip, context);
      // A "file" of gaussians alone is a splat file (the scene loader's rule, and the page's).
      const bool splats = d.key != SceneObjectKey::kGltf && model->drawnPrimitives() == 0 &&
                          model->clips().empty() && d.clip.empty();
      if (splats && it == counts.end()) {
        const LoadedSplats loaded = loadForThePage(d.resolved, context);
        it = counts.emplace(to, loaded.cloud.size()).first;
        out.push_back({d.resolved, to});
      } else if (it == counts.end()) {
        it = counts.emplace(to, model->splats().size()).first;
        for (ExportedFile& f : gltfFileExport(d.resolved, to, *model, context)) out.push_back(std::move(f));
      }
    } else if (it == counts.end()) {
      const LoadedSplats loaded = loadForThePage(d.resolved, context);
      it = counts.emplace(to, loaded.cloud.size()).first;
      for (ExportedFile& f : splatFileExport(d.resolved, to, loaded)) out.push_back(std::move(f));
    }
    gaussians += it->second;
  }
  files = counts.size();
  objects = doc.objects.size();
  return out;
}

}  // namespace

ExportWebCommand::~ExportWebCommand() = default;

int ExportWebCommand::run() const {
  const Options& o = *options_;
  try {
    const InputKind kind = classifyInput(o.input);
    if (kind != InputKind::kSplatFile && kind != InputKind::kSceneJson && kind != InputKind::kGltf &&
        kind != InputKind::kCharacterPackage && kind != InputKind::kOnnx && kind != InputKind::kSplatHull)
      throw Error(
          o.input +
          ": the web page opens splat files, glTF models, splat character packages, neural generators "
          "(.onnx), splat hulls and scene JSONs of them only for now (level-of-detail hierarchies are not "
          "in the web build yet; docs/web.md)");
    // Everything must open in the page: scenes read with the same scene document and files decoded by the
    // same decodeSplats the page's WebAssembly runs.
    std::vector<ExportedFile> files;
    std::string what, format = "scene JSON";
    uint64_t gaussians = 0;
    size_t file_count = 0, objects = 0, generators = 0;
    std::string name = fs::path(o.input).lexically_normal().filename().string();
    if (name.empty()) name = fs::path(o.input).lexically_normal().parent_path().filename().string();
    if (kind == InputKind::kOnnx) {
      generatorForThePage(o.input, name, gaussians, what);
      files = {{o.input, name}};
      format = "generator";
    } else if (kind == InputKind::kSplatHull) {
      // Loaded first by the engine's hull loader (the .spl2 and its meta sidecar), as the page loads it; the
      // sidecar is copied beside it under the name the loader looks for.
      const std::shared_ptr<hull::HullAsset> asset = hull::HullAsset::load(o.input);
      files = {{o.input, name}};
      const std::string meta = hull::hullMetaPath(o.input);
      std::error_code meta_ec;
      if (fs::is_regular_file(meta, meta_ec)) files.push_back({meta, hull::hullMetaPath(name)});
      gaussians = asset->hull.size();
      format = "hull";
      what = fmt::format("{} (splat hull, {} core and {} shell splats{})", name, asset->hull.core.size(),
                         asset->hull.shell.size(), files.size() > 1 ? ", its meta sidecar" : "");
    } else if (kind == InputKind::kCharacterPackage) {
      files = characterExport(o.input, name, gaussians, what);
      format = "character";
      name += "/character.json";  // what the page opens
    } else if (kind == InputKind::kSceneJson) {
      files = sceneExport(o.input, gaussians, file_count, objects, generators);
      what = fmt::format("{} (scene JSON, {} object{} from {} file{}, {} gaussians{})", name, objects,
                         objects == 1 ? "" : "s", file_count, file_count == 1 ? "" : "s", gaussians,
                         generators ? fmt::format(", {} neural generator{} run by onnxruntime-web",
                                                  generators, generators == 1 ? "" : "s")
                                    : "");
    } else if (kind == InputKind::kGltf) {
      const std::unique_ptr<GltfModel> model = gltfForThePage(o.input, "", "");
      gaussians = model->splats().size();
      format = "gltf";
      if (model->drawnPrimitives() == 0 && model->clips().empty()) {  // gaussians alone: a splat file
        const LoadedSplats loaded = loadForThePage(o.input, "");
        files = {{o.input, name}};
        what = fmt::format("{} (glTF, {} gaussians)", name, loaded.cloud.size());
      } else {
        files = gltfFileExport(o.input, name, *model, "");
        what = fmt::format("{} (glTF model: {}{}{})", name, describeModel(*model), gaussians ? ", " : "",
                           gaussians ? fmt::format("{} gaussians", gaussians) : "");
      }
    } else {
      const LoadedSplats loaded = loadForThePage(o.input, "");
      gaussians = loaded.cloud.size();
      files = splatFileExport(o.input, name, loaded);
      format = formatName(loaded.format);
      what = fmt::format("{} ({}, {} gaussians)", name, format, gaussians);
    }
    const fs::path web_dir = SPLATFORGE_WEB_DIR;
    const bool with_ort = kind == InputKind::kOnnx || generators > 0;  // the page runs a generator
    if (with_ort)
      for (const char* f : kOrtFiles)
        if (!fs::exists(web_dir / kOrtPackage / f))
          throw Error((web_dir / kOrtPackage / f).string() +
                      ": onnxruntime-web, which the page runs generators with, is missing: run "
                      "scripts/setup.sh (it fetches the pinned npm package)");
    const fs::path build_dir =
        o.web_build.empty() ? fs::path(SPLATFORGE_WEB_BUILD_DIR) : fs::path(o.web_build);
    for (const char* f : kWasmFiles)
      if (!fs::exists(build_dir / f))
        throw Error((build_dir / f).string() +
                    ": the page's WebAssembly is missing: build it with scripts/build_web.sh (or give "
                    "--web-build DIR)");
    // The page's own files keep their names.
    for (const ExportedFile& f : files) {
      bool taken = f.to == "manifest.json";
      for (const char* p : kPageFiles) taken = taken || f.to == p;
      for (const char* p : kWasmFiles) taken = taken || f.to == p;
      if (taken)
        throw Error(f.from + ": its place in the export, " + f.to.string() +
                    ", is one of the page's own files (rename it)");
    }
    makeOutputFolder(o.output);
    const fs::path out = o.output;
    std::error_code ec;
    if (fs::equivalent(fs::path(o.input), out / name, ec))
      throw UsageError("-o: " + o.output + " is the input's own folder");
    for (const char* f : kPageFiles) copyInto(web_dir / f, out / f);
    uintmax_t page_bytes = 0;
    for (const char* f : kWasmFiles) {
      copyInto(build_dir / f, out / f);
      page_bytes += fs::file_size(out / f);
    }
    if (with_ort)
      for (const char* f : kOrtFiles) {
        copyInto(web_dir / kOrtPackage / f, out / "ort" / f);
        page_bytes += fs::file_size(out / "ort" / f);
      }
    for (const ExportedFile& f : files) copyInto(f.from, out / f.to);
    std::string manifest =
        "{\n  \"scene\": \"" + jsonEscape(name) + "\",\n  \"format\": \"" + format + "\",\n";
    if (kind == InputKind::kSceneJson) manifest += "  \"objects\": " + std::to_string(objects) + ",\n";
    manifest += "  \"gaussians\": " + std::to_string(gaussians) + "\n}\n";
    writeFileAtomic((out / "manifest.json").string(), std::vector<uint8_t>(manifest.begin(), manifest.end()));
    fmt::print("wrote {}: the page, its WebAssembly ({}{}) and {}; look at it with: splatforge serve {}\n",
               o.output, formatKb(page_bytes), with_ort ? ", onnxruntime-web's included" : "", what,
               o.output);
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("export-web", e);
  }
}

// ---- serve ----

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_open_connections{0};  // connections whose thread is still running
void onSignal(int) {
  g_stop = true;
}

const char* mimeType(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".html" || ext == ".htm") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".wasm") return "application/wasm";
  if (ext == ".json") return "application/json";
  if (ext == ".wgsl") return "text/wgsl; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".png") return "image/png";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".txt" || ext == ".md") return "text/plain; charset=utf-8";
  return "application/octet-stream";  // splat files and anything else
}

bool sendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void sendStatus(int fd, int code, const char* reason, bool head) {
  const std::string body = fmt::format("{} {}\n", code, reason);
  const std::string response = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: "
      "close\r\n\r\n{}",
      code, reason, body.size(), head ? "" : body);
  sendAll(fd, response.data(), response.size());
}

// "%2e%2E" and the like decoded; false for a malformed escape or a NUL.
bool percentDecode(const std::string& in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
      return false;
    const char c = static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
    if (c == '\0') return false;
    out += c;
    i += 2;
  }
  return true;
}

// One request on `fd` (then the connection closes): GET or HEAD of a file inside `root`.
void serveConnection(int fd, const fs::path& root, bool quiet) {
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  const size_t line_end = request.find("\r\n");
  if (line_end == std::string::npos) {
    ::close(fd);
    return;
  }
  const std::string line = request.substr(0, line_end);
  const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
  int status = 200;
  fs::path file;
  const std::string method = line.substr(0, sp1);
  const bool head = method == "HEAD";
  std::string target = sp1 == std::string::npos || sp2 == std::string::npos
                           ? std::string()
                           : line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find_first_of("?#"));
  std::string path;
  if (method != "GET" && method != "HEAD") {
    status = 405;
  } else if (target.empty() || target[0] != '/' || !percentDecode(target, path)) {
    status = 400;
  } else {
    // Only names inside the folder: no ".." step, and the resolved file (links followed) must stay inside.
    const fs::path rel = fs::path(path).relative_path();
    for (const fs::path& step : rel)
      if (step == "..") status = 403;
    if (status == 200) {
      std::error_code ec, kind;
      file = fs::weakly_canonical(root / rel, ec);
      if (!ec && fs::is_directory(file, kind)) file /= "index.html";
      const std::string f = file.string(), r = root.string();
      if (ec || f.compare(0, r.size(), r) != 0 || (f.size() > r.size() && f[r.size()] != '/'))
        status = 403;
      else if (!fs::is_regular_file(file, kind))
        status = 404;
    }
  }
  if (status == 200) {
    std::ifstream in(file, std::ios::binary);
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    if (!in || ec) {
      status = 500;
    } else {
      const std::string header = fmt::format(
          "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: "
          "no-cache\r\nConnection: close\r\n\r\n",
          mimeType(file), size);
      bool ok = sendAll(fd, header.data(), header.size());
      std::vector<char> chunk(1 << 16);
      while (ok && !head && in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        if (in.gcount() > 0) ok = sendAll(fd, chunk.data(), static_cast<size_t>(in.gcount()));
      }
    }
  }
  const char* reasons[] = {"OK",        "Bad Request",        "Forbidden",
                           "Not Found", "Method Not Allowed", "Internal Server Error"};
  const char* reason = status == 400   ? reasons[1]
                       : status == 403 ? reasons[2]
                       : status == 404 ? reasons[3]
                       : status == 405 ? reasons[4]
                                       : reasons[5];
  if (status != 200) sendStatus(fd, status, reason, head);
  if (!quiet) fmt::print(stderr, "  {} {} {}\n", method, target, status);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace

ServeCommand::~ServeCommand() = default;

int ServeCommand::run() const {
  const Options& o = *options_;
  try {
    std::error_code ec;
    if (!fs::is_directory(o.dir, ec))
      throw Error(o.dir + ": not a folder (serve takes the folder export-web wrote)");
    const fs::path root = fs::canonical(o.dir);
    in_addr address{};
    if (::inet_pton(AF_INET, o.bind.c_str(), &address) != 1)
      throw UsageError("--bind: '" + o.bind + "' is not an IPv4 address");
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) throw Error(std::string("cannot open a socket: ") + std::strerror(errno));
    const int yes = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(o.port));
    sa.sin_addr = address;
    if (::bind(listener, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(listener, 64) != 0) {
      const int err = errno;
      ::close(listener);
      throw Error(fmt::format("{}:{}: cannot listen: {}", o.bind, o.port, std::strerror(err)));
    }
    socklen_t len = sizeof sa;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&sa), &len);
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    fmt::print("serving {} at http://{}:{}/ (Ctrl-C stops)\n", root.string(), o.bind, ntohs(sa.sin_port));
    std::fflush(stdout);
    while (!g_stop) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++g_open_connections;
      // A thread per connection: a browser opens connections it sends nothing on for a while.
      std::thread([fd, root, quiet = o.quiet] {
        serveConnection(fd, root, quiet);
        --g_open_connections;
      }).detach();
    }
    ::close(listener);
    // Let requests under way finish (each is bounded by its 10 s receive timeout).
    for (int i = 0; i < 150 && g_open_connections > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("serve", e);
  }
}

}  // namespace sf::cli
