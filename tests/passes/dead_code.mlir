// RUN: passes=dce
// Unused pure ops go, also in chains; side effects and results stay.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.exponential %x : tensor<4xf32>
  %b = stablehlo.add %a, %a : tensor<4xf32>
  %c = stablehlo.custom_call @log(%x) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>
  %d = stablehlo.negate %x : tensor<4xf32>
  return %d : tensor<4xf32>
}
// CHECK-NOT: stablehlo.exponential
// CHECK-NOT: stablehlo.add
// CHECK: custom_call
// CHECK: stablehlo.negate

// -----
// Dead ops inside a reduction body go; the body's result stays.
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%x init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
   reducer(%a: tensor<f32>, %b: tensor<f32>) {
    %unused = stablehlo.multiply %a, %b : tensor<f32>
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }
  return %r : tensor<f32>
}
// CHECK-NOT: stablehlo.multiply
// CHECK: stablehlo.add
