// Operation codes shared by vulkan_executor.cpp and the kernels (plain #defines: read by C++ and GLSL).
#ifndef SF_NN_CODES_H
#define SF_NN_CODES_H

#define NN_MAX_RANK 6

// nn_eltwise.comp: unary
#define NN_IDENTITY 0
#define NN_RELU 1
#define NN_SIGMOID 2
#define NN_TANH 3
#define NN_EXP 4
#define NN_LOG 5
#define NN_SIN 6
#define NN_COS 7
#define NN_SQRT 8
#define NN_ABS 9
#define NN_NEG 10
#define NN_RECIPROCAL 11
#define NN_FLOOR 12
#define NN_CEIL 13
#define NN_LEAKY_RELU 14
#define NN_ERF 15
#define NN_NOT 16
#define NN_SIGN 17
#define NN_ROUND 18
#define NN_SOFTPLUS 19
#define NN_ELU 20
#define NN_HARD_SIGMOID 21
#define NN_TAN 22
// binary
#define NN_ADD 40
#define NN_SUB 41
#define NN_MUL 42
#define NN_DIV 43
#define NN_POW 44
#define NN_MAX 45
#define NN_MIN 46
#define NN_EQUAL 47
#define NN_LESS 48
#define NN_GREATER 49
#define NN_LESS_EQUAL 50
#define NN_GREATER_EQUAL 51
#define NN_AND 52
#define NN_OR 53
#define NN_XOR 54
#define NN_PRELU 55
// ternary
#define NN_WHERE 60
#define NN_CLIP 61     // x, min, max (absent bounds: parameter bit)
#define NN_MUL_ADD 62  // x * a + b (folded BatchNormalization)

// nn_reduce.comp
#define NN_RED_SUM 0
#define NN_RED_MEAN 1
#define NN_RED_MAX 2
#define NN_RED_MIN 3
#define NN_RED_PROD 4
#define NN_RED_L1 5
#define NN_RED_L2 6
#define NN_RED_SUM_SQUARE 7
#define NN_RED_LOG_SUM 8
#define NN_RED_LOG_SUM_EXP 9

// nn_sample.comp
#define NN_SAMPLE_GRID 0    // GridSample
#define NN_SAMPLE_RESIZE 1  // Resize, linear over the last two axes
#define NN_PAD_ZEROS 0
#define NN_PAD_BORDER 1
#define NN_PAD_REFLECTION 2

// nn_window.comp
#define NN_WINDOW_DIMS 4  // spatial dimensions
#define NN_WIN_MAX 0
#define NN_WIN_AVERAGE 1      // padding not counted
#define NN_WIN_AVERAGE_PAD 2  // count_include_pad
#define NN_WIN_CONV_TRANSPOSE 3

#endif
