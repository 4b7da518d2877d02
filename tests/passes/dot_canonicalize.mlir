// RUN: passes=dot-canonicalize
// Already canonical: untouched.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
// CHECK-NOT: transpose
// CHECK-NOT: reshape
// CHECK: stablehlo.dot_general %a, %b

// -----
// Contracting on lhs dim 0: an explicit transpose of lhs.
func.func @main(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
// CHECK: stablehlo.transpose %a, dims = [1, 0]
// CHECK-NOT: stablehlo.transpose %b
// CHECK: stablehlo.dot_general

// -----
// Batch dims not leading, two contracting dims: transposes, reshapes to rank 3, reshape back.
func.func @main(%a: tensor<2x5x3x4xf32>, %b: tensor<4x5x3x6xf32>) -> tensor<5x2x6xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [1], contracting_dims = [2, 3] x [2, 0] : (tensor<2x5x3x4xf32>, tensor<4x5x3x6xf32>) -> tensor<5x2x6xf32>
  return %0 : tensor<5x2x6xf32>
}
// CHECK: stablehlo.transpose %a, dims = [1, 0, 2, 3]
// CHECK: stablehlo.reshape {{.*}} -> tensor<5x2x12xf32>
// CHECK: stablehlo.transpose %b, dims = [1, 2, 0, 3]
// CHECK: stablehlo.reshape {{.*}} -> tensor<5x12x6xf32>
// CHECK: -> tensor<5x2x6xf32>

// -----
// No contracting dimension (an outer product): one product per element, a multiply of the
// operands broadcast to the result.
func.func @main(%a: tensor<3xi32>, %b: tensor<4xi32>) -> tensor<3x4xi32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [] x [] : (tensor<3xi32>, tensor<4xi32>) -> tensor<3x4xi32>
  return %0 : tensor<3x4xi32>
}
// CHECK: stablehlo.broadcast_in_dim {{.*}} dims = [0] : (tensor<3xi32>) -> tensor<3x4xi32>
// CHECK: stablehlo.broadcast_in_dim {{.*}} dims = [1] : (tensor<4xi32>) -> tensor<3x4xi32>
// CHECK: stablehlo.multiply
// CHECK-NOT: stablehlo.dot_general

// -----
// Batch dimensions and no contraction (c[a, b] * P[a, b, i]): broadcast in the operands' own
// dimensions, no merged batch dimension (a reshape to [a b, ...] inside the fused loop).
func.func @main(%c: tensor<3x5xf32>, %p: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %0 = stablehlo.dot_general %c, %p, batching_dims = [0, 1] x [0, 1], contracting_dims = [] x [] : (tensor<3x5xf32>, tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
  return %0 : tensor<3x5x8xf32>
}
// CHECK: stablehlo.broadcast_in_dim {{.*}} dims = [0, 1] : (tensor<3x5xf32>) -> tensor<3x5x8xf32>
// CHECK-NOT: tensor<15x
// CHECK: stablehlo.multiply
// CHECK-NOT: stablehlo.dot_general

// -----
// Legacy dot (matrix x vector) becomes a dot_general; precision is kept.
func.func @main(%a: tensor<2x3xf32>, %v: tensor<3xf32>) -> tensor<2xf32> {
  %0 = stablehlo.dot %a, %v, precision = [HIGHEST, HIGHEST] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
// CHECK: stablehlo.reshape %v : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK: precision = [HIGHEST, HIGHEST]
// CHECK: stablehlo.reshape {{.*}} -> tensor<2xf32>
// CHECK-NOT: stablehlo.dot %

// -----
// Results equal before and after (checked by the interpreter on this case).
func.func @main() -> tensor<2x2x2xi64> {
  %a = stablehlo.constant dense<[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]> : tensor<2x2x2xi64>
  %b = stablehlo.constant dense<[[[1, 0], [0, 1]], [[2, 1], [1, 2]]]> : tensor<2x2x2xi64>
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x2x2xi64>, tensor<2x2x2xi64>) -> tensor<2x2x2xi64>
  return %0 : tensor<2x2x2xi64>
}
// CHECK: stablehlo.transpose %a, dims = [0, 2, 1]
// CHECK: stablehlo.dot_general

// -----
// Two contracting pairs taken in the order that keeps an operand in place (ragged_dot's
// [E, T, D] x [E, D, F] contracted over (D, E): as (E, D), the weights are only reshaped).
func.func @main(%a: tensor<8x16x4xf32>, %b: tensor<8x4x6xf32>) -> tensor<16x6xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [2, 0] x [1, 0] : (tensor<8x16x4xf32>, tensor<8x4x6xf32>) -> tensor<16x6xf32>
  return %0 : tensor<16x6xf32>
}
// CHECK: stablehlo.transpose %a, dims = [1, 0, 2]
// CHECK-NOT: stablehlo.transpose %b
// CHECK: stablehlo.reshape %b : (tensor<8x4x6xf32>) -> tensor<32x6xf32>

// -----
// A batched matrix-vector product whose batch dimensions are not in front (capsule
// routing's agreement): a multiply and a reduce over the matrix in place, no dot.
func.func @main(%v: tensor<2x3x5xf32>, %m: tensor<2x7x3x5xf32>) -> tensor<2x3x7xf32> {
  %0 = stablehlo.dot_general %v, %m, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [3] : (tensor<2x3x5xf32>, tensor<2x7x3x5xf32>) -> tensor<2x3x7xf32>
  return %0 : tensor<2x3x7xf32>
}
// CHECK-NOT: dot_general
// CHECK: stablehlo.broadcast_in_dim %v, dims = [0, 2, 3]
// CHECK: stablehlo.multiply %m
// CHECK: stablehlo.reduce
// CHECK: stablehlo.transpose {{.*}} dims = [0, 2, 1]
