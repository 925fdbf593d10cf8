// tinygltf's implementation (JSON parsing and buffer loading) in a translation unit of its own; io/gltf.cpp
// is its only user. Image decoding is compiled out, as in io/gltf.cpp.
#define TINYGLTF_IMPLEMENTATION
#define TINYGLTF_NO_STB_IMAGE
#define TINYGLTF_NO_STB_IMAGE_WRITE
#define TINYGLTF_NO_EXTERNAL_IMAGE
#include <tiny_gltf.h>
