// RUN: passes=widen-lowp-reductions
// A bf16 sum accumulates in f32: converts in, an f32 reduce with an f32 body, one convert
// out (values small enough that every order gives the same, exact, result).
func.func @main() -> tensor<2xbf16> {
  %x = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0], [0.5, 0.25]]> : tensor<3x2xbf16>
  %z = stablehlo.constant dense<0.0> : tensor<bf16>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3x2xbf16>, tensor<bf16>) -> tensor<2xbf16>
  return %s : tensor<2xbf16>
}
// CHECK: stablehlo.convert %{{.*}} : (tensor<3x2xbf16>) -> tensor<3x2xf32>
// CHECK: stablehlo.convert %{{.*}} : (tensor<bf16>) -> tensor<f32>
// CHECK: stablehlo.add %{{.*}} : tensor<f32>
// CHECK: (tensor<3x2xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK: stablehlo.convert %{{.*}} : (tensor<2xf32>) -> tensor<2xbf16>

// -----
// An f16 windowed product (a reduce_window whose body is a multiply) the same way.
func.func @main() -> tensor<3xf16> {
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 0.5]> : tensor<4xf16>
  %one = stablehlo.constant dense<1.0> : tensor<f16>
  %p = "stablehlo.reduce_window"(%x, %one) ({
    ^bb0(%a: tensor<f16>, %b: tensor<f16>):
      %m = stablehlo.multiply %a, %b : tensor<f16>
      stablehlo.return %m : tensor<f16>
  }) {window_dimensions = array<i64: 2>} : (tensor<4xf16>, tensor<f16>) -> tensor<3xf16>
  return %p : tensor<3xf16>
}
// CHECK: stablehlo.convert %{{.*}} : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: stablehlo.multiply %{{.*}} : tensor<f32>
// CHECK: (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: (tensor<3xf32>) -> tensor<3xf16>

// -----
// Left alone: a max (exact in any type), an f32 sum, and a body that is not one op of its
// two arguments.
func.func @main() -> (tensor<2xbf16>, tensor<2xf32>, tensor<2xbf16>) {
  %x = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %y = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %z = stablehlo.constant dense<0.0> : tensor<bf16>
  %zf = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<2x2xbf16>, tensor<bf16>) -> tensor<2xbf16>
  %s = stablehlo.reduce(%y init: %zf) applies stablehlo.add across dimensions = [0] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
  %q = stablehlo.reduce(%x init: %z) across dimensions = [0] : (tensor<2x2xbf16>, tensor<bf16>) -> tensor<2xbf16>
    reducer(%a: tensor<bf16>, %b: tensor<bf16>) {
      %t = stablehlo.add %a, %b : tensor<bf16>
      %u = stablehlo.add %t, %b : tensor<bf16>
      stablehlo.return %u : tensor<bf16>
    }
  return %m, %s, %q : tensor<2xbf16>, tensor<2xf32>, tensor<2xbf16>
}
// CHECK-NOT: stablehlo.convert
