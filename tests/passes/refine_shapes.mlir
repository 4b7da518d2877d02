// RUN: passes=refine-shapes
// Static argument types make dynamic shape ops static.
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<3x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %c4 = stablehlo.constant dense<4> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %c4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %ones = stablehlo.dynamic_broadcast_in_dim %one, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
  %i = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi32>) -> tensor<?x4xf32>
  %y = stablehlo.add %ones, %i : tensor<?x4xf32>
  %z = stablehlo.dynamic_reshape %y, %shape : (tensor<?x4xf32>, tensor<2xi32>) -> tensor<?x?xf32>
  %r = stablehlo.add %x, %z : (tensor<3x4xf32>, tensor<?x?xf32>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}
// NO-INTERPRET
// CHECK: stablehlo.constant dense<[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]>
// CHECK-NOT: dynamic
// CHECK-NOT: ?

// -----
// Shapes computed from an argument's size become static ops reading the argument.
func.func @main(%x: tensor<5xf32>, %s: tensor<f32>) -> tensor<?x5xf32> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<5xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %two = stablehlo.constant dense<2> : tensor<1xi32>
  %shape = stablehlo.concatenate %two, %n1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %s, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x5xf32>
  return %b : tensor<?x5xf32>
}
// NO-INTERPRET
// CHECK: -> (tensor<2x5xf32>)
// CHECK: stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x5xf32>
// CHECK-NOT: dynamic
