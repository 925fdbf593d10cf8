// The CPU kernels, one per ONNX operator, by the file that defines them (internal to
// src/neural/cpu_ops*.cpp): the operator table in cpu_ops.cpp is the one list of what runs, with each
// operator's opsets, attributes and notes. A kernel reads its node through Ctx (cpu_ops_common.h) and returns
// its outputs in order; a check runs at load, before any input is known (cpu_ops.h, CpuCheck).
#pragma once

#include "neural/cpu_ops_common.h"

namespace sf::nn::cpu {

// cpu_ops_unary.cpp
Outputs opAbs(const Ctx& c);
Outputs opCeil(const Ctx& c);
Outputs opClip(const Ctx& c);
Outputs opCos(const Ctx& c);
Outputs opErf(const Ctx& c);
Outputs opExp(const Ctx& c);
Outputs opFloor(const Ctx& c);
Outputs opLeakyRelu(const Ctx& c);
Outputs opLog(const Ctx& c);
Outputs opNeg(const Ctx& c);
Outputs opReciprocal(const Ctx& c);
Outputs opRelu(const Ctx& c);
Outputs opSigmoid(const Ctx& c);
Outputs opSin(const Ctx& c);
Outputs opSqrt(const Ctx& c);
Outputs opTanh(const Ctx& c);

// cpu_ops_binary.cpp
Outputs opAdd(const Ctx& c);
Outputs opAnd(const Ctx& c);
Outputs opDiv(const Ctx& c);
Outputs opEqual(const Ctx& c);
Outputs opGreater(const Ctx& c);
Outputs opLess(const Ctx& c);
Outputs opMax(const Ctx& c);
Outputs opMin(const Ctx& c);
Outputs opMul(const Ctx& c);
Outputs opNot(const Ctx& c);
Outputs opOr(const Ctx& c);
Outputs opPow(const Ctx& c);
Outputs opSub(const Ctx& c);
Outputs opWhere(const Ctx& c);

// cpu_ops_matmul.cpp
Outputs opGemm(const Ctx& c);
Outputs opMatMul(const Ctx& c);

// cpu_ops_shape.cpp
Outputs opConcat(const Ctx& c);
Outputs opExpand(const Ctx& c);
Outputs opFlatten(const Ctx& c);
Outputs opGather(const Ctx& c);
Outputs opIdentity(const Ctx& c);
Outputs opPad(const Ctx& c);
Outputs opReshape(const Ctx& c);
Outputs opScatterND(const Ctx& c);
Outputs opShape(const Ctx& c);
Outputs opSlice(const Ctx& c);
Outputs opSplit(const Ctx& c);
Outputs opSqueeze(const Ctx& c);
Outputs opTile(const Ctx& c);
Outputs opTranspose(const Ctx& c);
Outputs opUnsqueeze(const Ctx& c);
void checkPad(const Node& node, int64_t opset);
void checkScatterND(const Node& node, int64_t opset);

// cpu_ops_constant.cpp
Outputs opConstant(const Ctx& c);
Outputs opConstantOfShape(const Ctx& c);
Outputs opRange(const Ctx& c);

// cpu_ops_reduce.cpp
Outputs opReduceL1(const Ctx& c);
Outputs opReduceL2(const Ctx& c);
Outputs opReduceLogSum(const Ctx& c);
Outputs opReduceLogSumExp(const Ctx& c);
Outputs opReduceMax(const Ctx& c);
Outputs opReduceMean(const Ctx& c);
Outputs opReduceMin(const Ctx& c);
Outputs opReduceProd(const Ctx& c);
Outputs opReduceSum(const Ctx& c);
Outputs opReduceSumSquare(const Ctx& c);
Outputs opSoftmax(const Ctx& c);

// cpu_ops_cast.cpp
Outputs opCast(const Ctx& c);
void checkCast(const Node& node, int64_t opset);

// cpu_ops_conv.cpp
Outputs opAveragePool(const Ctx& c);
Outputs opBatchNormalization(const Ctx& c);
Outputs opConv(const Ctx& c);
Outputs opConvTranspose(const Ctx& c);
Outputs opMaxPool(const Ctx& c);
void checkBatchNormalization(const Node& node, int64_t opset);
void checkConv(const Node& node, int64_t opset);
void checkPool(const Node& node, int64_t opset);

// cpu_ops_norm.cpp
Outputs opInstanceNormalization(const Ctx& c);
Outputs opLayerNormalization(const Ctx& c);
void checkLayerNormalization(const Node& node, int64_t opset);

// cpu_ops_einsum.cpp
Outputs opEinsum(const Ctx& c);
void checkEinsum(const Node& node, int64_t opset);

// cpu_ops_sampling.cpp
Outputs opGridSample(const Ctx& c);
Outputs opResize(const Ctx& c);
void checkGridSample(const Node& node, int64_t opset);
void checkResize(const Node& node, int64_t opset);

}  // namespace sf::nn::cpu
