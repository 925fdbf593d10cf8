// Neural gaussian generators: the ONNX loader, the generator contract and the scene/CLI path, against the
// outputs PyTorch computed for the committed demo model (scripts/make_neural_models.py writes them beside
// it as TensorProtos: the independent oracle), closed-form checks and hand-built graphs for the refusals.
#include "neural/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/image.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "neural/cpu_executor.h"
#include "neural/image_model.h"
#include "render/cpu_renderer.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf::nn {
namespace {

std::string modelPath(const std::string& name) {
  return std::string(SPLATFORGE_SOURCE_DIR) + "/models/" + name;
}

Tensor expected(const std::string& time, const std::string& output) {
  return loadTensorProtoFile(modelPath("gaussians4d.t" + time + "." + output + ".pb"));
}

Camera testCamera() {
  Camera cam;
  cam.width = 160, cam.height = 120, cam.fx = cam.fy = 150, cam.cx = 80, cam.cy = 60;
  cam.world_to_camera = Mat4::fromLinearTranslation(Mat3{}, {0, 0, 3.2f});
  return cam;
}

// Largest |ours - theirs| over (atol + rtol |theirs|): at most 1 passes.
double worstRatio(const Tensor& ours, const Tensor& theirs, double atol, double rtol) {
  EXPECT_EQ(ours.shape, theirs.shape);
  EXPECT_EQ(ours.dtype, theirs.dtype);
  double worst = 0;
  for (size_t k = 0; k < std::min(ours.f.size(), theirs.f.size()); ++k)
    worst = std::max(
        worst, std::abs(double(ours.f[k]) - theirs.f[k]) / (atol + rtol * std::abs(double(theirs.f[k]))));
  return worst;
}

TEST(OnnxModel, DemoModelLoads) {
  Graph g = loadOnnxFile(modelPath("gaussians4d.onnx"));
  EXPECT_EQ(g.opset, 17);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "time");
  EXPECT_EQ(g.inputs[0].dtype, DType::kFloat32);
  ASSERT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(g.outputs[0].name, "gaussian_f16");
  EXPECT_EQ(g.outputs[0].dtype, DType::kFloat16);
  EXPECT_EQ(g.outputs[0].shape, (Shape{2048, 10}));
  EXPECT_GT(g.nodes.size(), 100u);
  EXPECT_TRUE(unsupportedNodes(g).empty());
  const GeneratorContract c = detectContract(g);
  EXPECT_EQ(c.time_input, "time");
  EXPECT_EQ(c.gauss_output, "gaussian_f16");
  EXPECT_EQ(c.color_output, "color_sh");
  EXPECT_EQ(c.count_output, "num_points");
  EXPECT_EQ(c.capacity, 2048);
  EXPECT_EQ(c.color_channels, 48);
  EXPECT_TRUE(c.color_is_sh);
  EXPECT_FALSE(c.isStatic());
}

// The CPU executor against PyTorch, per element, at three times. Both compute in float32 and round the
// outputs to float16; operation order differs, so a value may land one float16 step away.
TEST(Generator, DemoModelMatchesTorchPerElement) {
  GaussianGenerator gen(modelPath("gaussians4d.onnx"));
  for (const char* t : {"0", "0.35", "0.8"}) {
    SCOPED_TRACE(std::string("time ") + t);
    const TensorMap out = CpuExecutor(loadOnnxFile(modelPath("gaussians4d.onnx")))
                              .run(gen.frameInputs(std::stod(t), testCamera()));
    ASSERT_EQ(out.at("num_points").i, expected(t, "num_points").i);
    const double g = worstRatio(out.at("gaussian_f16"), expected(t, "gaussian_f16"), 2e-5, 2.0 / 1024);
    const double c = worstRatio(out.at("color_sh"), expected(t, "color_sh"), 2e-5, 2.0 / 1024);
    std::printf("t=%s: gaussians within %.3f, colours within %.3f of the tolerance\n", t, g, c);
    EXPECT_LE(g, 1.0);
    EXPECT_LE(c, 1.0);
  }
}

// Decoded through the contract: positions, opacity and covariance from the [N, 10] rows, SH from the 48
// channel-interleaved columns, only num_points rows; the time input moves the gaussians.
TEST(Generator, DecodesTheContractAndFollowsTime) {
  GaussianGenerator gen(modelPath("gaussians4d.onnx"));
  const Tensor gauss = expected("0.35", "gaussian_f16"), color = expected("0.35", "color_sh");
  const int64_t live = expected("0.35", "num_points").i[0];
  const GeneratedGaussians g = gen.decode(
      {{"gaussian_f16", gauss}, {"color_sh", color}, {"num_points", expected("0.35", "num_points")}});
  ASSERT_EQ(static_cast<int64_t>(g.cloud.size()), live);
  EXPECT_EQ(g.cloud.sh_degree, 3);
  for (size_t i : {size_t{0}, static_cast<size_t>(live / 2), static_cast<size_t>(live - 1)}) {
    EXPECT_EQ(g.cloud.positions[i].x, gauss.f[i * 10]);
    EXPECT_EQ(g.cloud.positions[i].z, gauss.f[i * 10 + 2]);
    EXPECT_EQ(g.cloud.opacities[i], gauss.f[i * 10 + 3]);
    EXPECT_EQ(g.covariances[i][4], gauss.f[i * 10 + 8]);          // yz
    EXPECT_EQ(g.cloud.shOf(i)[0], color.f[i * 48]);               // R of the DC coefficient
    EXPECT_EQ(g.cloud.shOf(i)[3 * 5 + 2], color.f[i * 48 + 17]);  // B of coefficient 5
  }
  const GeneratedGaussians a = gen.generate(0.0, testCamera());
  const std::vector<Vec3> at0 = a.cloud.positions;
  const GeneratedGaussians& b = gen.generate(0.8, testCamera());
  size_t moved = 0;
  for (size_t i = 0; i < at0.size(); ++i) moved += length(at0[i] - b.cloud.positions[i]) > 1e-3f;
  EXPECT_GT(moved, at0.size() * 9 / 10) << "time does not move the gaussians";
}

// A generator in a scene renders like its gaussians given directly: the scene path (executor, decode, the
// object's transform) against the PyTorch outputs decoded and drawn as covariance overrides.
TEST(Generator, SceneObjectRendersLikeTorchsGaussians) {
  const std::string dir = test::tempDir("GeneratorScene");
  const std::string model = dir + "/knot.onnx";
  std::filesystem::copy_file(modelPath("gaussians4d.onnx"), model,
                             std::filesystem::copy_options::overwrite_existing);
  {
    std::ofstream(dir + "/scene.json")
        << R"({"objects": [{"generator": "knot.onnx", "time": 0.2, "speed": 0.5,
        "transform": {"translation": [0.1, 0, 0]}}]})";
  }
  Scene scene = loadSceneJson(dir + "/scene.json");
  ASSERT_TRUE(scene.warnings.empty()) << scene.warnings[0];
  const Camera cam = testCamera();
  SceneFrame frame;
  poseScene(scene, 0.3, frame, false, &cam);  // model time 0.2 + 0.5 * 0.3 = 0.35
  ASSERT_EQ(frame.objects.size(), 1u);
  RenderSettings rs;
  const ImageRGBA ours = renderCpu(frame.objects, cam, rs);

  GaussianGenerator gen(modelPath("gaussians4d.onnx"));
  const GeneratedGaussians torch = gen.decode({{"gaussian_f16", expected("0.35", "gaussian_f16")},
                                               {"color_sh", expected("0.35", "color_sh")},
                                               {"num_points", expected("0.35", "num_points")}});
  RenderObject ref{&torch.cloud, Mat4::fromLinearTranslation(Mat3{}, {0.1f, 0, 0}), torch.cloud.positions,
                   torch.covariances};
  const ImageRGBA theirs = renderCpu({&ref, 1}, cam, rs);
  const ImageDiff d = compareImages(ours, theirs);
  double coverage = 0;
  for (size_t p = 3; p < ours.pixels.size(); p += 4) coverage += ours.pixels[p];
  coverage /= static_cast<double>(ours.pixels.size() / 4);
  std::printf("generator scene vs torch's gaussians: PSNR %.2f dB, mean alpha %.3f\n", d.psnr, coverage);
  EXPECT_GE(d.psnr, 45.0);
  EXPECT_GT(coverage, 0.02);  // the knot is in view
  // Baked to a PLY (scales and rotations from the covariances) it renders the same again.
  saveSplats(bakeGenerated(torch), dir + "/knot.ply");
  GaussianCloud ply = loadSplats(dir + "/knot.ply").cloud;
  RenderObject from_ply{&ply, ref.object_to_world};
  EXPECT_GE(compareImages(renderCpu({&from_ply, 1}, cam, rs), theirs).psnr, 45.0);
}

// `render scene.json --time T` runs a scene's generator at model time T (the frame's one scene time, as
// `render model.onnx --time T` and `animate` do): the image is the one of PyTorch's gaussians at 0.35 drawn
// directly, and not the one at 0.
TEST(Generator, RenderSceneJsonAtTimeRunsTheGeneratorAtThatTime) {
  const std::string dir = test::tempDir("GeneratorSceneTime");
  std::filesystem::copy_file(modelPath("gaussians4d.onnx"), dir + "/knot.onnx",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/scene.json") << R"({"objects": [{"generator": "knot.onnx"}]})";
  std::ofstream(dir + "/cam.json")
      << R"({"width": 160, "height": 120, "fx": 150, "fy": 150, "cx": 80, "cy": 60,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,3.2, 0,0,0,1]})";
  std::string out;
  for (const std::string& input : {dir + "/scene.json", dir + "/knot.onnx"}) {
    SCOPED_TRACE(input);
    ASSERT_EQ(test::runCli("render " + input + " --time 0.35 --backend cpu --camera " + dir +
                               "/cam.json -o " + dir + "/g.png --save-float " + dir + "/g.npy",
                           &out),
              0)
        << out;
    const ImageRGBA ours = readNpy(dir + "/g.npy");
    GaussianGenerator gen(modelPath("gaussians4d.onnx"));
    const auto torchAt = [&](const std::string& t) {
      const GeneratedGaussians g = gen.decode({{"gaussian_f16", expected(t, "gaussian_f16")},
                                               {"color_sh", expected(t, "color_sh")},
                                               {"num_points", expected(t, "num_points")}});
      RenderObject ref{&g.cloud, Mat4{}, g.cloud.positions, g.covariances};
      return renderCpu({&ref, 1}, testCamera(), {});
    };
    const double at = compareImages(ours, torchAt("0.35")).psnr, at0 = compareImages(ours, torchAt("0")).psnr;
    std::printf("render --time 0.35 vs torch at 0.35: %.2f dB, vs torch at 0: %.2f dB\n", at, at0);
    EXPECT_GE(at, 45.0);
    EXPECT_LT(at0, at - 10.0);
  }
}

// Hand-built graphs: what is not a generator is refused with the model's own names and shapes.
Graph tinyGraph(const std::string& out_name, Shape out_shape, const std::string& color_name,
                Shape color_shape) {
  Graph g;
  g.path = "tiny.onnx";
  g.opset = 17;
  g.inputs.push_back({"time", DType::kFloat32, {1}, {""}, true});
  g.outputs.push_back(
      {out_name, DType::kFloat32, out_shape, std::vector<std::string>(out_shape.size()), true});
  g.outputs.push_back(
      {color_name, DType::kFloat32, color_shape, std::vector<std::string>(color_shape.size()), true});
  Tensor a(DType::kFloat32, out_shape), b(DType::kFloat32, color_shape);
  g.initializers["a"] = a;
  g.initializers["b"] = b;
  Node n1;
  n1.name = "n1", n1.op_type = "Identity", n1.inputs = {"a"}, n1.outputs = {out_name};
  Node n2;
  n2.name = "n2", n2.op_type = "Identity", n2.inputs = {"b"}, n2.outputs = {color_name};
  g.nodes = {n1, n2};
  return g;
}

using test::errorOf;

TEST(Generator, RefusalsNameTheModelsOwnValues) {
  std::string e = errorOf([] { detectContract(tinyGraph("points", {4, 10}, "rgb", {4, 3})); });
  EXPECT_NE(e.find("no output named like 'gauss'"), std::string::npos) << e;
  EXPECT_NE(e.find("'points' float32 [4, 10]"), std::string::npos) << e;
  e = errorOf([] { detectContract(tinyGraph("gaussians", {4, 9}, "rgb", {4, 3})); });
  EXPECT_NE(e.find("'gaussians' has shape [4, 9], expected [N, 10]"), std::string::npos) << e;
  e = errorOf([] { detectContract(tinyGraph("gaussians", {4, 10}, "rgb", {4, 5})); });
  EXPECT_NE(e.find("colour output 'rgb' has shape [4, 5]"), std::string::npos) << e;
  Graph bad_time = tinyGraph("gaussians", {4, 10}, "rgb", {4, 3});
  bad_time.inputs[0].dtype = DType::kInt64;
  e = errorOf([&] { detectContract(bad_time); });
  EXPECT_NE(e.find("time input 'time' is int64, expected float32"), std::string::npos) << e;
  Graph unknown_op = tinyGraph("gaussians", {4, 10}, "rgb", {4, 3});
  unknown_op.nodes[1].op_type = "FancyNewOp";
  e = errorOf([&] { GaussianGenerator g(unknown_op); });
  EXPECT_NE(e.find("node 'n2' (FancyNewOp), opset 17: operator FancyNewOp is not supported"),
            std::string::npos)
      << e;
  // What a model computes must be what it declares: a float output computed as int64 is refused before
  // anything reads its rows.
  Graph lying = tinyGraph("gaussians", {4, 10}, "rgb", {4, 3});
  lying.nodes[0].op_type = "Cast";
  Attribute to;
  to.kind = Attribute::Kind::kInt, to.i = static_cast<int64_t>(DType::kInt64);
  lying.nodes[0].attributes["to"] = to;
  lying.inputs.clear();  // static: the cast is folded at load, the check is at the run
  GaussianGenerator liar(lying);
  e = errorOf([&] { liar.generate(0, testCamera()); });
  EXPECT_NE(e.find("output 'gaussians' is int64, the model declares float32"), std::string::npos) << e;
  // A model with an extra control input: running without it set names it.
  Graph controlled = tinyGraph("gaussians", {4, 10}, "rgb", {4, 3});
  controlled.inputs.push_back({"pose", DType::kFloat32, {2, 3}, {"", ""}, true});
  GaussianGenerator gen(controlled);
  EXPECT_EQ(gen.contract().control_inputs, std::vector<std::string>{"pose"});
  e = errorOf([&] { gen.generate(0, testCamera()); });
  EXPECT_NE(e.find("control input 'pose' is not set"), std::string::npos) << e;
  e = errorOf([&] { gen.setControl("gaze", Tensor(DType::kFloat32, {6})); });
  EXPECT_NE(e.find("no control input 'gaze' (its controls: 'pose')"), std::string::npos) << e;
  e = errorOf([&] { gen.setControl("pose", Tensor(DType::kFloat32, {5})); });
  EXPECT_NE(e.find("control 'pose' needs shape [2, 3] (6 values), got [5]"), std::string::npos) << e;
  gen.setControl("pose", Tensor(DType::kFloat32, {6}));  // six values fill [2, 3]
  const GeneratedGaussians out = gen.generate(0, testCamera());
  EXPECT_EQ(out.cloud.size(), 4u);
  EXPECT_EQ(gen.lastCount(), 4u);
  // [N, 3] colours are RGB (the tensor is zeros: black, not SH DC 0).
  EXPECT_NEAR(out.cloud.shOf(0)[0], colorToShDc(0.0f), 1e-6);
  EXPECT_LT(out.cloud.shOf(0)[0], -1.0f);
}

// The contract's matrices: the view input is world_to_camera column-major; the projection maps a point
// at a pixel to clip coordinates whose x/w, y/w are that pixel's NDC.
TEST(Generator, CameraInputsFollowTheContract) {
  Camera cam = testCamera();
  const Tensor view = matrixInput(cam.world_to_camera);
  EXPECT_EQ(view.shape, (Shape{4, 4}));
  EXPECT_EQ(view.f[3 * 4 + 2], 3.2f);  // translation z sits in row 3 of the column-major tensor
  const Mat4 p = projectionMatrix(cam);
  const Vec3 v{0.3f, -0.2f, 2.0f};                                                 // a view-space point
  const float px = cam.fx * v.x / v.z + cam.cx, py = cam.fy * v.y / v.z + cam.cy;  // its pixel (COLMAP)
  const float cx = p.m[0][0] * v.x + p.m[0][2] * v.z, cy = p.m[1][1] * v.y + p.m[1][2] * v.z,
              w = p.m[3][2] * v.z;
  EXPECT_NEAR((cx / w + 1) * 0.5f * static_cast<float>(cam.width), px, 1e-3);
  EXPECT_NEAR((cy / w + 1) * 0.5f * static_cast<float>(cam.height), py, 1e-3);
}

// Files: bytes that are not a model, and tensors whose data does not match their shape, are refused with the
// path.
TEST(OnnxModel, MalformedFilesAreNamed) {
  const std::vector<uint8_t> junk = {0xff, 0xff, 0xff, 0xff, 0x01};
  std::string e = errorOf([&] { loadOnnx(junk, "junk.onnx"); });
  EXPECT_NE(e.find("junk.onnx"), std::string::npos) << e;
  EXPECT_NE(e.find("not an ONNX model"), std::string::npos) << e;
  // TensorProto: dims = [3] (field 1), data_type = float (field 2), raw_data (field 9) of 8 bytes, not 12.
  const std::vector<uint8_t> short_raw = {0x08, 0x03, 0x10, 0x01, 0x4a, 0x08, 0,
                                          0,    0x80, 0x3f, 0,    0,    0,    0x40};
  e = errorOf([&] { loadTensorProto(short_raw, "short.pb"); });
  EXPECT_NE(e.find("short.pb"), std::string::npos) << e;
  EXPECT_NE(e.find("raw_data holds 2 values for shape [3]"), std::string::npos) << e;
  // The same with 12 bytes decodes to 1, 2, 3.
  const std::vector<uint8_t> good = {0x08, 0x03, 0x10, 0x01, 0x4a, 0x0c, 0, 0,    0x80,
                                     0x3f, 0,    0,    0,    0x40, 0,    0, 0x40, 0x40};
  const Tensor t = loadTensorProto(good, "good.pb");
  EXPECT_EQ(t.f, (std::vector<float>{1, 2, 3}));
  // A dimension so large its elements cannot fit the load limits is refused before allocating.
  const std::vector<uint8_t> huge = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0x07, 0x10, 0x01};
  e = errorOf([&] { loadTensorProto(huge, "huge.pb"); });
  EXPECT_NE(e.find("huge.pb"), std::string::npos) << e;
}

Tensor pb(const std::string& name) {
  return loadTensorProtoFile(modelPath(name + ".pb"));
}

// Scaffold-style anchors decoded for the camera: the view input is found by name, and the outputs follow
// PyTorch's for two cameras (float32 throughout).
TEST(Generator, AnchorModelFollowsTheCamera) {
  GaussianGenerator gen(modelPath("anchors.onnx"));
  EXPECT_EQ(gen.contract().view_input, "camera_matrix");
  EXPECT_EQ(gen.contract().color_channels, 3);
  EXPECT_FALSE(gen.contract().color_is_sh);
  CpuExecutor exec(loadOnnxFile(modelPath("anchors.onnx")));
  std::vector<float> first_rgb;
  for (const char* cam : {"front", "side"}) {
    SCOPED_TRACE(cam);
    const std::string stem = std::string("anchors.") + cam;
    const TensorMap out = exec.run({{"camera_matrix", pb(stem + ".camera_matrix")}});
    EXPECT_EQ(out.at("num_points").i, pb(stem + ".num_points").i);
    EXPECT_LE(worstRatio(out.at("gaussians"), pb(stem + ".gaussians"), 1e-6, 1e-4), 1.0);
    EXPECT_LE(worstRatio(out.at("rgb"), pb(stem + ".rgb"), 1e-6, 1e-4), 1.0);
    if (first_rgb.empty())
      first_rgb = out.at("rgb").f;
    else
      EXPECT_NE(first_rgb, out.at("rgb").f) << "the colours do not depend on the view";
  }
}

// An LBS avatar driven by a control input from scene JSON: the bent pose's gaussians are PyTorch's.
TEST(Generator, AvatarPoseControlFromSceneJson) {
  const std::string dir = test::tempDir("GeneratorAvatar");
  std::filesystem::copy_file(modelPath("avatar.onnx"), dir + "/avatar.onnx",
                             std::filesystem::copy_options::overwrite_existing);
  const Tensor bent = pb("avatar.bent.pose");
  std::string quats;
  for (float v : bent.f) quats += (quats.empty() ? "" : ", ") + std::to_string(v);
  std::ofstream(dir + "/scene.json") << R"({"objects": [{"generator": "avatar.onnx", "inputs": {"pose": [)"
                                     << quats << "]}}]}";
  Scene scene = loadSceneJson(dir + "/scene.json");
  ASSERT_TRUE(scene.warnings.empty()) << scene.warnings[0];
  SceneFrame frame;
  const Camera cam = testCamera();
  poseScene(scene, 0.0, frame, false, &cam);
  ASSERT_EQ(frame.objects.size(), 1u);
  const Tensor want = pb("avatar.bent.gaussians");
  ASSERT_EQ(static_cast<int64_t>(frame.objects[0].positions.size()), want.shape[0]);
  double worst = 0;
  for (size_t i = 0; i < frame.objects[0].positions.size(); ++i)
    for (int k = 0; k < 3; ++k)
      worst = std::max(worst, double(std::abs(frame.objects[0].positions[i][k] -
                                              want.f[i * 10 + static_cast<size_t>(k)])));
  EXPECT_LE(worst, 1e-5);
  // A missing control is named at load.
  std::ofstream(dir + "/bare.json") << R"({"objects": [{"generator": "avatar.onnx"}]})";
  SceneLoadOptions strict;
  strict.strict = true;
  const std::string e = errorOf([&] { loadSceneJson(dir + "/bare.json", strict); });
  EXPECT_NE(e.find("control input 'pose'"), std::string::npos) << e;
}

// Post-processing: the U-Net against PyTorch on its sample image, at another size too (dynamic H, W).
TEST(ImageModelTest, UNetMatchesTorch) {
  ImageModel unet(modelPath("unet.onnx"));
  const Tensor in = pb("unet.sample.image"), want = pb("unet.sample.output");
  const int h = static_cast<int>(in.shape[2]), w = static_cast<int>(in.shape[3]);
  ImageRGBA image(w, h);
  const size_t plane = static_cast<size_t>(w * h);
  for (size_t p = 0; p < plane; ++p) {
    for (size_t c = 0; c < 3; ++c) image.pixels[p * 4 + c] = in.f[c * plane + p];
    image.pixels[p * 4 + 3] = 0.25f;
  }
  const ImageRGBA out = unet.apply(image);
  double worst = 0;
  for (size_t p = 0; p < plane; ++p) {
    for (size_t c = 0; c < 3; ++c)
      worst = std::max(worst, double(std::abs(out.pixels[p * 4 + c] - want.f[c * plane + p])));
    ASSERT_EQ(out.pixels[p * 4 + 3], 0.25f);  // alpha kept
  }
  std::printf("U-Net vs torch: max abs %.2e\n", worst);
  EXPECT_LE(worst, 1e-5);
  EXPECT_EQ(unet.apply(ImageRGBA(37, 21)).width, 37);
  // Not an image model: named as such.
  const std::string e = errorOf([] { ImageModel m(modelPath("avatar.onnx")); });
  EXPECT_NE(e.find("not an image model: expected one float input of shape [1, 3, H, W] (inputs: 'pose' "
                   "float32 [2, 4])"),
            std::string::npos)
      << e;
}

// The whole path through the CLI: a scene with a generator and "post" renders (CPU) to the no-post frame
// passed through the U-Net; `onnx info` and `onnx run` describe and run the model.
TEST(GeneratorCli, RenderWithPostAndOnnxCommands) {
  const std::string dir = test::tempDir("GeneratorCli");
  for (const char* f : {"gaussians4d.onnx", "unet.onnx"})
    std::filesystem::copy_file(modelPath(f), dir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/plain.json") << R"({"objects": [{"generator": "gaussians4d.onnx", "time": 0.35}],
      "camera": {"eye": [0, 0, -3], "target": [0, 0, 0], "up": [0, -1, 0], "fov_y_deg": 45, "width": 64, "height": 48}})";
  std::ofstream(dir + "/post.json")
      << R"({"objects": [{"generator": "gaussians4d.onnx", "time": 0.35}], "post": "unet.onnx",
      "camera": {"eye": [0, 0, -3], "target": [0, 0, 0], "up": [0, -1, 0], "fov_y_deg": 45, "width": 64, "height": 48}})";
  std::string out;
  ASSERT_EQ(test::runCli("render " + dir + "/plain.json -o " + dir +
                             "/plain.png --backend cpu --save-float " + dir + "/plain.npy",
                         &out),
            0)
      << out;
  ASSERT_EQ(test::runCli("render " + dir + "/post.json -o " + dir + "/post.png --backend cpu --save-float " +
                             dir + "/post.npy",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("post unet.onnx"), std::string::npos) << out;
  const ImageRGBA plain = readNpy(dir + "/plain.npy"), post = readNpy(dir + "/post.npy");
  const ImageRGBA want = ImageModel(modelPath("unet.onnx")).apply(plain);
  EXPECT_EQ(post.pixels, want.pixels);
  EXPECT_LT(compareImages(plain, post).psnr, 60.0);  // the model changed the frame
  ASSERT_EQ(test::runCli("onnx info " + dir + "/gaussians4d.onnx --json", &out), 0) << out;
  EXPECT_NE(out.find("\"unsupported\": []"), std::string::npos) << out;
  EXPECT_NE(out.find("GridSample"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("onnx run " + dir + "/gaussians4d.onnx --time 0.35 --save-splats " + dir +
                             "/knot.ply -o " + dir,
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("(1500 gaussians)"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/gaussian_f16.npy"));
  EXPECT_EQ(loadSplats(dir + "/knot.ply").cloud.size(), 1500u);
  // Over time: the 4DGS-style model moves from frame to frame.
  ASSERT_EQ(
      test::runCli("animate " + dir +
                       "/gaussians4d.onnx --fps 2 --duration 1 --width 64 --height 48 --backend cpu -o " +
                       dir + "/f%02d.png",
                   &out),
      0)
      << out;
  EXPECT_LT(compareImages(readPng(dir + "/f00.png"), readPng(dir + "/f01.png")).psnr, 35.0);
  EXPECT_EQ(test::runCli("info " + dir + "/unet.onnx", &out), 1);
  EXPECT_NE(out.find("an ONNX model, not a splat file (splatforge onnx info"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("onnx run " + dir + "/unet.onnx", &out), 1);
  EXPECT_NE(out.find("input 'image' is not given"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf::nn
