// RUN: passes=chlo-expand
// chlo.broadcast_add with numpy broadcasting; broadcast_compare with explicit dims.
func.func @main() -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %a = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %c = stablehlo.constant dense<[2.0, 5.0]> : tensor<2xf32>
  %0 = "chlo.broadcast_add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "chlo.broadcast_compare"(%a, %c) {broadcast_dimensions = array<i64: 0>, comparison_direction = #chlo<comparison_direction GT>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xi1>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xi1>
}
// CHECK: stablehlo.broadcast_in_dim %b, dims = [1]
// CHECK: stablehlo.add %a
// CHECK: stablehlo.broadcast_in_dim %c, dims = [0]
// CHECK: stablehlo.compare GT
// CHECK-NOT: chlo.

// -----
// top_k: a stable sort in total order with indices, then slices.
func.func @main() -> (tensor<2xf32>, tensor<2xi32>) {
  %x = stablehlo.constant dense<[3.0, 7.0, 7.0, 1.0]> : tensor<4xf32>
  %v, %i = chlo.top_k(%x, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)
  return %v, %i : tensor<2xf32>, tensor<2xi32>
}
// CHECK: stablehlo.iota
// CHECK: "stablehlo.sort"
// CHECK: stablehlo.compare GT, {{.*}}, TOTALORDER
// CHECK: "stablehlo.slice"
// CHECK-NOT: chlo.top_k

// -----
// square, is_inf, mulhi, tan and atan become StableHLO; erf stays (no decomposition yet).
func.func @main() -> (tensor<3xf32>, tensor<3xi1>, tensor<2xi32>, tensor<3xf32>, tensor<3xf32>) {
  %x = stablehlo.constant dense<[1.5, 0x7F800000, -2.0]> : tensor<3xf32>
  %a = chlo.square %x : tensor<3xf32> -> tensor<3xf32>
  %b = chlo.is_inf %x : tensor<3xf32> -> tensor<3xi1>
  %p = stablehlo.constant dense<[100000, -3]> : tensor<2xi32>
  %q = stablehlo.constant dense<[300000, 5]> : tensor<2xi32>
  %c = chlo.mulhi %p, %q : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  %d = chlo.atan %x : tensor<3xf32> -> tensor<3xf32>
  %e = chlo.erf %x : tensor<3xf32> -> tensor<3xf32>
  return %a, %b, %c, %d, %e : tensor<3xf32>, tensor<3xi1>, tensor<2xi32>, tensor<3xf32>, tensor<3xf32>
}
// CHECK: stablehlo.multiply %x, %x
// CHECK: stablehlo.abs %x
// CHECK: stablehlo.convert %p : (tensor<2xi32>) -> tensor<2xi64>
// CHECK: stablehlo.shift_right_arithmetic
// CHECK: stablehlo.atan2 %x
// CHECK: chlo.erf

// -----
// A composite becomes its decomposition, inlined.
func.func @main() -> tensor<i64> {
  %0 = stablehlo.constant dense<1> : tensor<i64>
  %1 = stablehlo.composite "my.add_n" %0 {composite_attributes = {n = 2 : i64}, decomposition = @add_n.impl} : (tensor<i64>) -> tensor<i64>
  return %1 : tensor<i64>
}
func.func private @add_n.impl(%arg0: tensor<i64>) -> tensor<i64> {
  %0 = stablehlo.constant dense<2> : tensor<i64>
  %1 = stablehlo.add %arg0, %0 : tensor<i64>
  return %1 : tensor<i64>
}
// CHECK-NOT: composite
// CHECK: stablehlo.add
// CHECK-NOT: @add_n.impl
