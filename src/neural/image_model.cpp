#include "neural/image_model.h"

#include <algorithm>

#include "core/error.h"

namespace sf::nn {
namespace {

bool imageShaped(const ValueInfo& v) {
  return isFloatType(v.dtype) && v.has_shape && v.shape.size() == 4 && (v.shape[0] == 1 || v.shape[0] < 0) &&
         v.shape[1] == 3;
}

std::string listValues(const std::vector<ValueInfo>& values) {
  std::string s;
  for (const ValueInfo& v : values)
    s += (s.empty() ? "'" : ", '") + v.name + "' " + dtypeName(v.dtype) + " " +
         (v.has_shape ? shapeString(v.shape) : "[?]");
  return s.empty() ? "none" : s;
}

Graph checked(Graph g) {
  if (g.inputs.size() != 1 || !imageShaped(g.inputs[0]))
    throw Error(g.path + ": not an image model: expected one float input of shape [1, 3, H, W] (inputs: " +
                listValues(g.inputs) + ")");
  if (g.outputs.empty() || !imageShaped(g.outputs[0]))
    throw Error(g.path + ": not an image model: expected a float output of shape [1, 3, H, W] (outputs: " +
                listValues(g.outputs) + ")");
  return g;
}

}  // namespace

ImageModel::ImageModel(const std::string& path) : ImageModel(loadOnnxFile(path)) {}

ImageModel::ImageModel(Graph graph) : executor_(checked(std::move(graph))) {
  input_ = executor_.graph().inputs[0].name;
  output_ = executor_.graph().outputs[0].name;
}

void ImageModel::checkSize(int64_t w, int64_t h) const {
  const ValueInfo& in = executor_.graph().inputs[0];
  if ((in.shape[2] >= 0 && in.shape[2] != h) || (in.shape[3] >= 0 && in.shape[3] != w))
    throw Error(path() + ": the model takes " + std::to_string(in.shape[3]) + "x" +
                std::to_string(in.shape[2]) + " images, the frame is " + std::to_string(w) + "x" +
                std::to_string(h));
}

ImageRGBA ImageModel::apply(const ImageRGBA& image, std::vector<NodeTime>* times) const {
  const ValueInfo& in = executor_.graph().inputs[0];
  const int64_t h = image.height, w = image.width;
  checkSize(w, h);
  Tensor t(in.dtype, {1, 3, h, w});
  const size_t plane = static_cast<size_t>(h * w);
  for (size_t p = 0; p < plane; ++p)
    for (size_t c = 0; c < 3; ++c) t.set(c * plane + p, std::clamp(image.pixels[p * 4 + c], 0.0f, 1.0f));
  TensorMap feed;
  feed[input_] = std::move(t);
  const TensorMap out = runner_ ? runner_(feed, times) : executor_.run(feed, times);
  const Tensor& r = out.at(output_);
  if (!r.isFloat() || r.shape != Shape{1, 3, h, w})
    throw Error(path() + ": output '" + output_ + "' has shape " + shapeString(r.shape) + " for a " +
                std::to_string(w) + "x" + std::to_string(h) + " frame");
  ImageRGBA result = image;
  for (size_t p = 0; p < plane; ++p)
    for (size_t c = 0; c < 3; ++c) result.pixels[p * 4 + c] = r.f[c * plane + p];
  return result;
}

}  // namespace sf::nn
