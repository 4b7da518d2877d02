// RUN: passes=constant-folding
// Arithmetic on constants folds through the interpreter.
func.func @main() -> tensor<3xi32> {
  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>
  %c = stablehlo.add %a, %b : tensor<3xi32>
  %d = stablehlo.multiply %c, %a : tensor<3xi32>
  return %d : tensor<3xi32>
}
// CHECK-LABEL: func.func @main
// CHECK: stablehlo.constant dense<[11, 44, 99]>
// CHECK-NOT: stablehlo.add
// CHECK-NOT: stablehlo.multiply

// -----
// Ops reading an argument stay.
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = stablehlo.constant dense<[1.5, 2.5]> : tensor<2xf32>
  %b = stablehlo.negate %a : tensor<2xf32>
  %c = stablehlo.add %x, %b : tensor<2xf32>
  return %c : tensor<2xf32>
}
// CHECK: stablehlo.constant dense<[-1.5, -2.5]>
// CHECK: stablehlo.add %x

// -----
// Reductions with a body fold too; integer division by zero folds to the spec's value.
func.func @main() -> (tensor<2xi32>, tensor<i32>) {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<2x2xi32>, tensor<i32>) -> tensor<2xi32>
  %one = stablehlo.constant dense<7> : tensor<i32>
  %q = stablehlo.divide %one, %z : tensor<i32>
  return %r, %q : tensor<2xi32>, tensor<i32>
}
// CHECK: stablehlo.constant dense<[4, 6]>
// CHECK: stablehlo.constant dense<-1>
// CHECK-NOT: stablehlo.reduce

// -----
// Side effects and random numbers never fold.
func.func @main() -> tensor<2xui64> {
  %s = stablehlo.constant dense<[1, 2]> : tensor<2xui64>
  %st, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2xui64>)
  return %bits : tensor<2xui64>
}
// CHECK: stablehlo.rng_bit_generator

// -----
// Too big to fold: a broadcast to 1M elements stays a broadcast.
func.func @main() -> tensor<1024x1024xf32> {
  %a = stablehlo.constant dense<1.0> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<1024x1024xf32>
  return %b : tensor<1024x1024xf32>
}
// NO-INTERPRET
// CHECK: stablehlo.broadcast_in_dim

// -----
// Comparisons and selects fold to booleans and picks.
func.func @main() -> tensor<3xf32> {
  %a = stablehlo.constant dense<[1.0, 5.0, 3.0]> : tensor<3xf32>
  %b = stablehlo.constant dense<[2.0, 4.0, 3.0]> : tensor<3xf32>
  %p = stablehlo.compare GT, %a, %b, FLOAT : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %s = stablehlo.select %p, %a, %b : tensor<3xi1>, tensor<3xf32>
  return %s : tensor<3xf32>
}
// CHECK: stablehlo.constant dense<[2.0, 5.0, 3.0]>
// CHECK-NOT: stablehlo.select
