// The SH DC basis constant Y_0^0 = 1 / (2 sqrt(pi)) (kShC0 in core/gaussian_cloud.h for the C++ side) and the
// DC coefficient that draws a colour c (in [0, 1], before the renderer's + 0.5): (c - 0.5) / kShC0. One place
// for every shader that writes or evaluates DC coefficients (the frame, the trainer, hull effects, the
// decoder lift, the neural decode).
#ifndef SF_SH_DC_GLSL
#define SF_SH_DC_GLSL
const float kShC0 = 0.28209479177387814;
float shDcFromColor(float c) { return (c - 0.5) / kShC0; }
#endif
