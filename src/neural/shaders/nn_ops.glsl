// The arithmetic of the elementwise operators (codes in nn_codes.h), shared by nn_eltwise.comp and the
// fused chains of nn_fused.comp.

float erfApprox(float x) {
  // Abramowitz & Stegun 7.1.26 refined (max error 1.2e-7): erf(x) = 1 - t*exp(-x^2 + poly(t)).
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float unaryF(uint op, float x, float alpha, float beta) {
  switch (op) {
    case NN_IDENTITY: return x;
    case NN_RELU: return x > 0.0 ? x : (isnan(x) ? x : 0.0);
    case NN_SIGMOID: return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case NN_TANH: return tanh(clamp(x, -20.0, 20.0)) + (isnan(x) ? x : 0.0);
    case NN_EXP: return exp(x);
    case NN_LOG: return x < 0.0 ? uintBitsToFloat(0x7FC00000u) : (x == 0.0 ? -1.0 / 0.0 : log(x));
    case NN_SIN: return sin(x);
    case NN_COS: return cos(x);
    case NN_SQRT: return x < 0.0 ? uintBitsToFloat(0x7FC00000u) : sqrt(x);
    case NN_ABS: return abs(x);
    case NN_NEG: return -x;
    case NN_RECIPROCAL: return 1.0 / x;
    case NN_FLOOR: return floor(x);
    case NN_CEIL: return ceil(x);
    case NN_LEAKY_RELU: return x >= 0.0 ? x : alpha * x;
    case NN_ERF: return erfApprox(x);
    case NN_SIGN: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x);
    case NN_ROUND: return roundEven(x);
    case NN_SOFTPLUS: return x > 20.0 ? x : log(1.0 + exp(x));
    case NN_ELU: return x >= 0.0 ? x : alpha * (exp(x) - 1.0);
    case NN_HARD_SIGMOID: return clamp(alpha * x + beta, 0.0, 1.0);
    case NN_TAN: return tan(x);
  }
  return x;
}

int unaryI(uint op, int x) {
  switch (op) {
    case NN_RELU: return max(x, 0);
    case NN_ABS: return abs(x);
    case NN_NEG: return -x;
    case NN_NOT: return x != 0 ? 0 : 1;
    case NN_SIGN: return sign(x);
  }
  return x;
}

float binaryF(uint op, float a, float b) {
  switch (op) {
    case NN_ADD: return a + b;
    case NN_SUB: return a - b;
    case NN_MUL: return a * b;
    case NN_DIV: return a / b;
    case NN_POW: {
      if (b == 0.0) return 1.0;
      if (a < 0.0 && b == trunc(b)) {
        float m = pow(-a, b);
        return mod(b, 2.0) == 0.0 ? m : -m;
      }
      return pow(a, b);
    }
    case NN_MAX: return isnan(a) || isnan(b) ? a + b : max(a, b);
    case NN_MIN: return isnan(a) || isnan(b) ? a + b : min(a, b);
    case NN_PRELU: return a >= 0.0 ? a : a * b;
  }
  return a;
}

int binaryI(uint op, int a, int b) {
  switch (op) {
    case NN_ADD: return a + b;
    case NN_SUB: return a - b;
    case NN_MUL: return a * b;
    case NN_DIV: return b == 0 ? 0 : a / b;
    case NN_POW: {
      if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0);
      int r = 1, base = a;
      for (int e = b; e > 0; e >>= 1) {
        if ((e & 1) != 0) r *= base;
        base *= base;
      }
      return r;
    }
    case NN_MAX: return max(a, b);
    case NN_MIN: return min(a, b);
    case NN_AND: return (a != 0 && b != 0) ? 1 : 0;
    case NN_OR: return (a != 0 || b != 0) ? 1 : 0;
    case NN_XOR: return ((a != 0) != (b != 0)) ? 1 : 0;
    case NN_PRELU: return a >= 0 ? a : a * b;
  }
  return a;
}

