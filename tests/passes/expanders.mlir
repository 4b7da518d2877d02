// RUN: passes=expand-logistic,expand-batch-norm,expand-complex
// logistic becomes 1 / (1 + exp(-x)).
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.logistic %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// CHECK: stablehlo.negate %x
// CHECK: stablehlo.exponential
// CHECK: stablehlo.divide
// CHECK-NOT: logistic

// -----
// batch_norm_inference becomes elementwise ops on broadcasts of the per-feature values.
func.func @main(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
// CHECK: stablehlo.sqrt
// CHECK: stablehlo.broadcast_in_dim %m, dims = [1]
// CHECK-NOT: batch_norm

// -----
// batch_norm_training computes mean and variance with reductions; results equal the
// interpreter's within rounding (checked by the interpreter test below, not here).
func.func @main(%x: tensor<2x2x3xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>) -> (tensor<2x2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 1.0e-3 : f32, feature_index = 2 : i64} : (tensor<2x2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x2x3xf32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK: stablehlo.reduce
// CHECK-NOT: batch_norm

// -----
// complex multiply on real and imaginary parts.
func.func @main() -> tensor<2xcomplex<f64>> {
  %a = stablehlo.constant dense<[(1.0, 2.0), (0.5, -1.0)]> : tensor<2xcomplex<f64>>
  %b = stablehlo.constant dense<[(3.0, -1.0), (2.0, 4.0)]> : tensor<2xcomplex<f64>>
  %0 = stablehlo.multiply %a, %b : tensor<2xcomplex<f64>>
  return %0 : tensor<2xcomplex<f64>>
}
// CHECK: stablehlo.real %a
// CHECK: stablehlo.complex
// CHECK-NOT: stablehlo.multiply %a, %b
