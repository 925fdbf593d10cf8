// Force-included into the WebAssembly module's C++ units (web/wasm/CMakeLists.txt): emscripten 3.1.6's libc++
// (LLVM 14) has std::from_chars for integers only; the ASCII PLY reader (io/ply_parser.cpp) also reads
// doubles. This is that overload for the "general" format, over strtod in the C locale, with from_chars's
// rules: no leading whitespace or '+', no hexadecimal prefix (only its "0" is read), "inf" and "nan"
// accepted, the result's ptr just past what was read, result_out_of_range when the value overflows a double.
#pragma once
#ifdef __cplusplus
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <system_error>

namespace std {
inline from_chars_result from_chars(const char* first, const char* last, double& value) {
  const char* p = first;
  if (p != last && *p == '-') ++p;
  if (p == last || *p == '+' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' ||
      *p == '\v')
    return {first, errc::invalid_argument};
  if (last - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    value = (*first == '-') ? -0.0 : 0.0;
    return {p + 1, errc()};
  }
  const string text(first, last);
  char* end = nullptr;
  errno = 0;
  const double v = strtod(text.c_str(), &end);
  if (end == text.c_str()) return {first, errc::invalid_argument};
  const char* stop = first + (end - text.c_str());
  if (errno == ERANGE && std::isinf(v)) return {stop, errc::result_out_of_range};
  value = v;
  return {stop, errc()};
}
}  // namespace std
#endif
